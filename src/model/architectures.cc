#include "model/architectures.h"

#include <cmath>
#include <map>

#include "model/architecture_keys.h"
#include "model/deci_config.h"
#include "model/deepseek2_config.h"
#include "model/gemma4.h"
#include "model/layernorm_families.h"
#include "model/moe_config.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

// Mixture-of-experts architectures lockstep does not run, and what they need beyond the experts of qwen3moe
// and qwen2moe (its one gated shared expert) and gpt-oss (biases).
struct UnsupportedMoe {
  const char* name;
  const char* needs;
};
constexpr UnsupportedMoe kUnsupportedMoe[] = {
    {"phimoe", "sparsemixer routing"},
    {"mixtral", "the llama architecture name (llama.cpp writes Mixtral as llama)"},
    {"grok", "its own attention and expert layout"},
    {"dbrx", "fused QKV with clamping"},
    {"arctic", "a dense residual FFN beside the experts"},
    {"llama4", "shared experts and sigmoid routing"},
};

// <arch>.attention.sliding_window, or `fallback` when absent (-1: required).
Result<int64_t> ReadWindow(const GgufFile& file, const ModelConfig& c, int64_t fallback) {
  const std::string key = Key(c, "attention.sliding_window");
  if (!file.Has(key) && fallback < 0) {
    return InvalidArgument(file.path() + ": key '" + key + "' is missing (" + c.architecture +
                           " needs its sliding window)");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t window, file.GetIntOr(key, fallback));
  if (window < 0 || window > (int64_t{1} << 30)) return OutOfRangeKey(file, key, "is out of range");
  return window;
}

// <arch>.attention.sliding_window (or `fallback`, as ReadWindow) on every layer.
Status WindowEveryLayer(const GgufFile& file, ModelConfig& c, int64_t fallback) {
  LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, ReadWindow(file, c, fallback));
  for (LayerAttention& layer : c.layers) layer.window = c.sliding_window;
  return Status::Ok();
}

// Which layers are windowed: <arch>.attention.sliding_window_pattern when present (an array with one flag
// per layer, true = windowed, as ik_llama.cpp and newer llama.cpp write it; or a period N: layer l is
// windowed when N == 0 or l % N < N - 1), else `windowed(l)`.
template <typename Default>
Status SetWindowedLayers(const GgufFile& file, ModelConfig& c, const Default& windowed) {
  const std::string key = Key(c, "attention.sliding_window_pattern");
  const GgufValue* pattern = file.Find(key);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    bool on = windowed(l);
    if (pattern != nullptr) {
      if (const GgufValue::Array* flags = pattern->AsArray()) {
        if (int64_t(flags->elements.size()) != c.n_layer) {
          return OutOfRangeKey(file, key,
                               "has " + std::to_string(flags->elements.size()) +
                                   " entries, expected one per layer (" + std::to_string(c.n_layer) + ")");
        }
        const GgufValue& flag = flags->elements[size_t(l)];
        if (flag.AsBool()) {
          on = *flag.AsBool();
        } else if (flag.AsInt()) {
          on = *flag.AsInt() != 0;
        } else {
          return OutOfRangeKey(file, key, "must hold booleans");
        }
      } else if (std::optional<int64_t> period = pattern->AsInt(); period && *period >= 0) {
        on = *period == 0 || l % *period < *period - 1;
      } else {
        return OutOfRangeKey(file, key, "must be a per-layer boolean array or a non-negative period");
      }
    }
    c.layers[size_t(l)].window = on ? c.sliding_window : 0;
  }
  return Status::Ok();
}

// Phi-3: every layer windowed. Older files lack the key: llama.cpp's defaults (its PR 8931) for the 4k and
// 128k Phi-3 models; a window of 0 (Phi-4) means none.
Status ApplyPhi3(const GgufFile& file, ModelConfig& c) {
  int64_t fallback = -1;
  if ((c.n_layer == 32 || c.n_layer == 40) && c.n_ctx_train == 4096) {
    fallback = 2047;  // Phi-3-mini-4k, Phi-3-medium-4k
  } else if (c.n_layer == 32 && c.n_head_kv == 32 && c.n_ctx_train == 131072) {
    fallback = 262144;  // Phi-3-mini-128k
  } else if (c.n_layer == 40 && c.n_ctx_train == 131072) {
    fallback = 131072;  // Phi-3-medium-128k
  }
  LOCKSTEP_RETURN_IF_ERROR(WindowEveryLayer(file, c, fallback));
  c.fused_gate_up = true;  // one ffn_up [gate | up]

  // longrope / su: factor tensors, the long ones when the context a sequence can reach (n_ctx_train here,
  // lockstep's default context limit) exceeds the original context (llama.cpp's choice, by context size).
  const GgufTensorInfo* long_factors = file.FindTensor("rope_factors_long.weight");
  const GgufTensorInfo* short_factors = file.FindTensor("rope_factors_short.weight");
  if (long_factors == nullptr && short_factors == nullptr) return Status::Ok();
  if (long_factors == nullptr || short_factors == nullptr) {
    return InvalidArgument(file.path() +
                           ": longrope needs both rope_factors_long.weight and "
                           "rope_factors_short.weight");
  }
  if (!c.rope_freq_factors.empty()) {
    return InvalidArgument(file.path() + ": both rope_freqs.weight and rope_factors_long/short are present");
  }
  if (c.rope_scaling != RopeScaling::kNone) {
    return InvalidArgument(file.path() + ": rope scaling '" + Key(c, "rope.scaling.type") +
                           "' together with longrope factor tensors");
  }
  const bool use_long = c.n_ctx_train > c.rope_orig_ctx;
  const GgufTensorInfo* t = use_long ? long_factors : short_factors;
  const std::string name = use_long ? "rope_factors_long.weight" : "rope_factors_short.weight";
  // One factor per rotated pair (rope.dimension_count / 2, as llama.cpp's converter writes them since
  // Phi-4-mini's partial rotary) or per head_dim / 2 (what llama.cpp c392e50 and ik_llama.cpp expect; ggml
  // reads only the first rope_dim / 2 of them).
  const int64_t pairs = c.rope_dim / 2;
  for (const GgufTensorInfo* f : {long_factors, short_factors}) {
    if (f->dims.size() != 1 || (f->dims[0] != pairs && f->dims[0] != c.head_dim / 2) ||
        !CanDequantize(f->type)) {
      return InvalidArgument(file.path() + ": tensor '" + f->name + "' must be a 1-D float tensor of " +
                             std::to_string(pairs) + " (rope.dimension_count / 2) or " +
                             std::to_string(c.head_dim / 2) + " (head_dim / 2) elements");
    }
  }
  std::vector<float> all(size_t(t->dims[0]));
  DequantizeRow(t->type, t->data, all.data(), t->dims[0]);
  c.rope_freq_factors.assign(all.begin(), all.begin() + pairs);
  for (float f : c.rope_freq_factors) {
    if (!(f > 0) || !std::isfinite(f)) {
      return InvalidArgument(file.path() + ": tensor '" + name + "' has a non-positive factor");
    }
  }
  c.rope_scaling = RopeScaling::kLongRope;
  return Status::Ok();
}

Status ApplyGemma(const GgufFile& file, ModelConfig& c, int version) {
  c.scale_embeddings = true;
  c.ffn_activation = FfnActivation::kGeluTanh;
  if (version == 1) return Status::Ok();  // Gemma, CodeGemma: no post-norms, windows or soft-caps
  c.post_norms = true;
  // query_pre_attn_scalar: head_dim for every Gemma 2/3 but the 27B ones, whose n_embd / n_head llama.cpp
  // picks by block count (46: Gemma 2 27B, 62: Gemma 3 27B).
  if ((version == 2 && c.n_layer == 46) || (version == 3 && c.n_layer == 62)) {
    c.attention_scale = 1.0f / std::sqrt(float(c.n_embd / c.n_head));
  }
  if (version == 2) {
    LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, ReadWindow(file, c, 4096));
    LOCKSTEP_ASSIGN_OR_RETURN(double attn_cap, file.GetFloatOr(Key(c, "attn_logit_softcapping"), 50.0));
    LOCKSTEP_ASSIGN_OR_RETURN(double final_cap, file.GetFloatOr(Key(c, "final_logit_softcapping"), 30.0));
    if (!(attn_cap >= 0) || !(final_cap >= 0)) {
      return InvalidArgument(file.path() + ": " + c.architecture + " soft-capping values must be >= 0");
    }
    c.attn_softcap = float(attn_cap);
    c.final_softcap = float(final_cap);
    return SetWindowedLayers(file, c, [](int64_t l) { return l % 2 == 0; });
  }
  c.qk_norm = true;
  LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, ReadWindow(file, c, -1));
  LOCKSTEP_ASSIGN_OR_RETURN(double local_base, file.GetFloatOr(Key(c, "rope.freq_base_swa"), 10000.0));
  if (!(local_base > 1)) return OutOfRangeKey(file, Key(c, "rope.freq_base_swa"), "must be > 1");
  c.rope_freq_base_local = float(local_base);
  LOCKSTEP_RETURN_IF_ERROR(SetWindowedLayers(file, c, [](int64_t l) { return (l + 1) % 6 != 0; }));
  for (LayerAttention& layer : c.layers) layer.local_rope = layer.window > 0;
  return Status::Ok();
}

// Mistral 3 (Ministral 3, and the newer conversions of Mistral Small 3.x, Magistral, Devstral): llama's
// layers; Ministral 3 adds YaRN (read with the rope keys) and Llama 4's query temperature, whose length is
// attention.temperature_length or else the original context (rope_orig_ctx: llama.cpp's n_ctx_orig_yarn, the
// rope.scaling.original_context_length key or the training context).
Status ApplyMistral3(const GgufFile& file, ModelConfig& c) {
  LOCKSTEP_RETURN_IF_ERROR(WindowEveryLayer(file, c, 0));
  const std::string scale_key = Key(c, "attention.temperature_scale");
  LOCKSTEP_ASSIGN_OR_RETURN(double scale, file.GetFloatOr(scale_key, 0.0));
  if (!(scale >= 0) || !std::isfinite(scale))
    return OutOfRangeKey(file, scale_key, "must be finite and >= 0");
  c.attn_temperature_scale = float(scale);
  if (scale == 0) return Status::Ok();
  const std::string length_key = Key(c, "attention.temperature_length");
  LOCKSTEP_ASSIGN_OR_RETURN(c.attn_temperature_length, file.GetIntOr(length_key, c.rope_orig_ctx));
  if (c.attn_temperature_length <= 0 || c.attn_temperature_length > (int64_t{1} << 30)) {
    return OutOfRangeKey(file, length_key, "(or the original context length) must be in 1..2^30");
  }
  return Status::Ok();
}

// Granite 3.x: llama's layers with four multipliers (llama.cpp reads each as 0 = none when absent; a file
// from its converter carries all four).
Status ApplyGranite(const GgufFile& file, ModelConfig& c) {
  struct Multiplier {
    const char* key;
    float* value;
  };
  float attention_scale = 0, logit_divisor = 0;
  for (const Multiplier& m :
       {Multiplier{"embedding_scale", &c.embedding_multiplier},
        Multiplier{"residual_scale", &c.residual_multiplier}, Multiplier{"logit_scale", &logit_divisor},
        Multiplier{"attention.scale", &attention_scale}}) {
    const std::string key = Key(c, m.key);
    LOCKSTEP_ASSIGN_OR_RETURN(double value, file.GetFloatOr(key, 0.0));
    if (!(value >= 0) || !std::isfinite(value))
      return OutOfRangeKey(file, key, "must be a finite number >= 0");
    *m.value = float(value);
  }
  if (attention_scale > 0) c.attention_scale = attention_scale;
  if (logit_divisor > 0) c.logit_scale = 1.0f / logit_divisor;  // llama.cpp: logits x (1 / logit_scale)
  return Status::Ok();
}

// command-r (Command R, R+) and cohere2 (Command R7B, Command A; llama.cpp's graphs): LayerNorms without a
// bias, attention and FFN in parallel from attn_norm's output, tied embeddings, the logits times
// <arch>.logit_scale. Command R+: per-head LayerNorms of Q and K (their tensors). cohere2: a window of
// <arch>.attention.sliding_window with RoPE on three layers of four, the fourth global without RoPE
// (llama.cpp's fixed pattern of 4).
Status ApplyCohere(const GgufFile& file, ModelConfig& c) {
  c.parallel_ffn = true;
  const std::string scale_key = Key(c, "logit_scale");
  if (!file.Has(scale_key)) return InvalidArgument(file.path() + ": key '" + scale_key + "' is missing");
  LOCKSTEP_ASSIGN_OR_RETURN(double scale, file.GetFloat(scale_key));
  if (!(scale > 0) || !std::isfinite(scale)) return OutOfRangeKey(file, scale_key, "must be finite and > 0");
  c.logit_scale = float(scale);
  if (c.architecture == "command-r") {
    c.qk_norm = c.qk_norm_per_head = file.FindTensor("blk.0.attn_q_norm.weight") != nullptr;
    return Status::Ok();
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, ReadWindow(file, c, -1));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const bool windowed = l % 4 < 3;
    c.layers[size_t(l)].window = windowed ? c.sliding_window : 0;
    c.layers[size_t(l)].rope = windowed;
  }
  return Status::Ok();
}

// qwen35 (Qwen3.5, dense; qwen35moe: with ApplyExperts' experts and shared expert) and qwen3next
// (Qwen3-Next: qwen35moe's layers with the DeltaNet's projections fused per key head, ssm_in and ssm_ba, and
// value heads grouped by key head): Gated DeltaNet on every layer but each full_attention_interval-th
// (default 4, as llama.cpp; qwen3next files do not carry the key), whose attention has a gated output and
// Q/K norms; the FFN's pre-norm is post_attention_norm. Multi-token-prediction layers (nextn_predict_layers,
// the last blocks) are not run: n_layer excludes them.
Status ApplyQwen35(const GgufFile& file, ModelConfig& c) {
  c.qk_norm = true;
  c.attn_output_gate = true;
  c.ffn_norm_is_post_attention_norm = true;
  DeltaNetConfig& dn = c.delta_net;
  if (c.architecture == "qwen3next") {
    dn.fused_projections = true;
    dn.tiled_heads = false;
  }
  struct Field {
    const char* key;
    int64_t* value;
    int64_t limit;
  };
  int64_t inner = 0;
  for (const Field& f :
       {Field{"ssm.conv_kernel", &dn.conv_kernel, 64}, Field{"ssm.group_count", &dn.k_heads, 4096},
        Field{"ssm.time_step_rank", &dn.v_heads, 4096}, Field{"ssm.state_size", &dn.head_k_dim, kMaxHeadDim},
        Field{"ssm.inner_size", &inner, int64_t{1} << 24}}) {
    const std::string key = Key(c, f.key);
    if (!file.Has(key))
      return InvalidArgument(file.path() + ": key '" + key + "' is missing (" + c.architecture +
                             " needs it)");
    LOCKSTEP_ASSIGN_OR_RETURN(*f.value, file.GetInt(key));
    if (*f.value < 1 || *f.value > f.limit) {
      return OutOfRangeKey(file, key, "is out of range (1.." + std::to_string(f.limit) + ")");
    }
  }
  if (dn.conv_kernel < 2) return OutOfRangeKey(file, Key(c, "ssm.conv_kernel"), "must be at least 2");
  if (dn.v_heads % dn.k_heads != 0 || inner % dn.v_heads != 0) {
    return InvalidArgument(file.path() + ": " + Key(c, "ssm.time_step_rank") + " must be a multiple of " +
                           Key(c, "ssm.group_count") + " and divide " + Key(c, "ssm.inner_size"));
  }
  dn.head_v_dim = inner / dn.v_heads;
  LOCKSTEP_RETURN_IF_ERROR(SkipNextnLayers(file, c));
  const std::string interval_key = Key(c, "full_attention_interval");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t interval, file.GetIntOr(interval_key, 4));
  if (interval < 1 || interval > c.n_layer) return OutOfRangeKey(file, interval_key, "is out of range");
  for (int64_t l = 0; l < c.n_layer; ++l) c.layers[size_t(l)].recurrent = (l + 1) % interval != 0;
  return Status::Ok();
}

// ---- What each architecture sets beyond the common keys (ArchInfo::apply).

Status ApplyLlama(const GgufFile& file, ModelConfig& c) {
  // Mistral 7B v0.1's window, when a file carries it, applies to every layer.
  return WindowEveryLayer(file, c, 0);
}

Status ApplyRefact(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's refact graph (Refact-1.6B): llama's layers (multi-query as the converter writes it) with
  // ALiBi in place of RoPE, its max bias 8 (llama.cpp fixes it: the converter writes no key; one present is
  // read).
  return ReadAlibi(file, c, /*fallback=*/8);
}

Status ApplyBaichuan(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's baichuan graph: llama's layers (the converter splits W_pack into attn_q / attn_k / attn_v).
  // Baichuan-7B and Baichuan 2 7B (32 layers) rotate; Baichuan-13B and Baichuan 2 13B (40 layers) use ALiBi
  // with max bias 8 instead (llama.cpp tells them by the layer count: no key says so). Baichuan 2's
  // NormHead is not applied: as with llama.cpp, lm_head must be normalised before conversion (Baichuan 2's
  // README, "Baichuan 2 -> Baichuan 1").
  if (c.n_layer == 40) return ReadAlibi(file, c, /*fallback=*/8);
  return Status::Ok();
}

Status ApplyQwen(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's qwen graph (Qwen-1.8B / 7B / 14B / 72B, the first Qwen): llama's layers with one attn_qkv and
  // its bias, NeoX RoPE; its converter writes Hugging Face's intermediate_size, twice the FFN's width.
  const std::string key = Key(c, "feed_forward_length");
  if (c.n_ff % 2 != 0) return OutOfRangeKey(file, key, "must be even (qwen's is twice the FFN's width)");
  c.n_ff /= 2;
  c.qkv_bias = true;
  return Status::Ok();
}

Status ApplyPlamo(const GgufFile&, ModelConfig& c) {
  // llama.cpp's plamo graph (PLaMo-13B): llama's layers with the FFN beside the attention, both reading
  // attn_norm's output (no ffn_norm), their outputs added to the layer's input.
  c.parallel_ffn = true;
  return Status::Ok();
}

Status ApplyDots1(const GgufFile& file, ModelConfig& c) {
  // dots.llm1 (llama.cpp's graph): qwen3's attention (per-head Q/K norms) with DeepSeek's experts (sigmoid
  // scores unless the file says otherwise, exp_probs_b, ungated shared experts, leading dense layers).
  c.qk_norm = true;
  return ApplyDeepseekExperts(file, c, /*default_gating=*/2);
}

Status ApplyBert(const GgufFile&, ModelConfig& c) {
  // model/bert_encoder.h: LayerNorm post-norms, absolute position embeddings (no RoPE), Q/K/V/O biases, an
  // ungated GELU FFN with biases.
  for (LayerAttention& layer : c.layers) layer.rope = false;
  c.learned_positions = c.qkv_bias = c.attn_output_bias = c.ungated_ffn = c.ffn_bias = true;
  c.ffn_activation = FfnActivation::kGeluTanh;
  return Status::Ok();
}

Status ApplyJinaBert(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's bert graph for jina-bert-v2: bert's encoder with ALiBi (both ways: -|i - j| times the
  // head's slope; max bias 8, which llama.cpp fixes) in place of position embeddings, Q/K/V/O biases, GeGLU
  // (GELU of ffn_gate times ffn_up, no biases) then ffn_down with its bias.
  LOCKSTEP_RETURN_IF_ERROR(RefuseTensors(file, c, {"blk.0.attn_q_norm.weight", "blk.0.attn_norm_2.weight"},
                                         "Q/K LayerNorms, a second attention norm"));
  c.qkv_bias = c.attn_output_bias = c.ffn_bias = true;  // ffn_bias: ffn_down's alone (the FFN is gated)
  c.ffn_activation = FfnActivation::kGeluTanh;
  return ReadAlibi(file, c, /*fallback=*/8);
}

Status ApplySmolLm3(const GgufFile&, ModelConfig& c) {
  // llama's layers, with no RoPE on every fourth one (layers 3, 7, 11, ...; llama.cpp's
  // n_no_rope_layer_step = 4, which the file does not carry).
  for (int64_t l = 0; l < c.n_layer; ++l) c.layers[size_t(l)].rope = (l + 1) % 4 != 0;
  return Status::Ok();
}

Status ApplyQwen3(const GgufFile&, ModelConfig& c) {  // qwen3, qwen3moe: per-head Q/K norms
  c.qk_norm = true;
  return Status::Ok();
}

Status ApplyOlmo2(const GgufFile&, ModelConfig& c) {
  // llama.cpp's olmo2 graph: no pre-norms, RMSNorm of the whole Q and K, post-norms on both outputs.
  c.pre_norms = false;
  c.qk_norm = true;
  c.qk_norm_whole = true;
  c.post_norms = true;
  return Status::Ok();
}

Status ApplyGptOss(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's gpt-oss graph: sinks in every layer's attention, a window on the even layers (its
  // sliding_window_pattern 2; the key is required), the FFN's pre-norm named post_attention_norm, biased
  // router and experts with the clamped SwiGLU. Q/K/V/O biases come with their tensors.
  c.attn_sinks = true;
  c.ffn_norm_is_post_attention_norm = true;
  c.expert_biases = true;
  c.ffn_activation = FfnActivation::kSwiGluOai;
  LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, ReadWindow(file, c, -1));
  return SetWindowedLayers(file, c, [](int64_t l) { return l % 2 == 0; });
}

Status ApplyGlm4(const GgufFile&, ModelConfig& c) {
  // llama.cpp's glm4 graph: gemma2's post-norms on the attention and FFN outputs (before each residual
  // add), otherwise llama's layers; the QKV bias and the [gate | up] ffn_up come with their tensors,
  // partial rotary with rope.dimension_count.
  c.post_norms = c.fused_gate_up = true;
  return Status::Ok();
}

Status ApplySeedOss(const GgufFile&, ModelConfig& c) {
  // llama.cpp's seed_oss graph: llama's layers (QKV bias by tensor), NeoX RoPE, the FFN's pre-norm named
  // post_attention_norm.
  c.ffn_norm_is_post_attention_norm = true;
  return Status::Ok();
}

Status ApplyChatGlm(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's chatglm graph (ChatGLM3-6B, GLM-4-9B, CodeGeeX4): llama's RMSNorm layers with one attn_qkv
  // and its bias (or attn_q / attn_k / attn_v with optional biases), interleaved RoPE pairs over the first
  // rope.dimension_count dims of each head, SwiGLU from one ffn_up [gate | up]; untied output.
  c.qkv_bias =
      file.FindTensor("blk.0.attn_qkv.bias") != nullptr || file.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.fused_gate_up = true;
  return Status::Ok();
}

template <int kVersion>
Status ApplyGemmaVersion(const GgufFile& file, ModelConfig& c) {
  return ApplyGemma(file, c, kVersion);
}

// What an architecture sets beyond the common keys (ApplyArchitecture).
using Applier = Status (*)(const GgufFile& file, ModelConfig& c);

struct ArchInfo {
  const char* name;
  RopeMode rope_mode;  // as llama.cpp's llama_model_rope_type assigns it
  bool experts;        // its files may carry <arch>.expert_count (a mixture of experts lockstep runs)
  bool layer_norm;     // LayerNorm where the others RMSNorm (ModelConfig::layer_norm)
  Applier apply;       // nullptr: nothing beyond the common keys (and ApplyExperts)
  // The applier reads the expert keys itself (DeepSeek's experts); the others go through ApplyExperts first.
  bool own_experts = false;
};

constexpr ArchInfo kArchitectures[] = {
    {"llama", RopeMode::kNormal, true, false, ApplyLlama},  // Mixtral
    {"qwen2", RopeMode::kNeox, false, false, nullptr},
    {"qwen3", RopeMode::kNeox, false, false, ApplyQwen3},
    {"phi3", RopeMode::kNeox, false, false, ApplyPhi3},
    {"gemma", RopeMode::kNeox, false, false, ApplyGemmaVersion<1>},
    {"gemma2", RopeMode::kNeox, false, false, ApplyGemmaVersion<2>},
    {"gemma3", RopeMode::kNeox, false, false, ApplyGemmaVersion<3>},
    {"qwen3moe", RopeMode::kNeox, true, false, ApplyQwen3},
    {"smollm3", RopeMode::kNormal, false, false, ApplySmolLm3},
    {"granite", RopeMode::kNormal, false, false, ApplyGranite},
    {"granitemoe", RopeMode::kNormal, true, false, ApplyGranite},
    {"olmo2", RopeMode::kNeox, false, false, ApplyOlmo2},
    {"qwen2moe", RopeMode::kNeox, true, false, nullptr},
    {"gpt-oss", RopeMode::kNeox, true, false, ApplyGptOss},
    {"ernie4_5", RopeMode::kNormal, false, false, nullptr},
    {"mistral3", RopeMode::kNormal, false, false, ApplyMistral3},
    {"glm4", RopeMode::kNormal, false, false, ApplyGlm4},
    {"bert", RopeMode::kNormal, false, false, ApplyBert},  // absolute position embeddings: no RoPE
    // llama.cpp's bert graph for nomic-bert: bert's encoder with NeoX RoPE on every layer in place of
    // position embeddings, one attn_qkv, SwiGLU, no biases but the LayerNorms' (the defaults)
    {"nomic-bert", RopeMode::kNeox, false, false, nullptr},
    {"jina-bert-v2", RopeMode::kNormal, false, false, ApplyJinaBert},  // ALiBi: no RoPE
    {"deepseek2", RopeMode::kNormal, true, false, ApplyDeepseek2, true},
    {"gemma4", RopeMode::kNeox, true, false, ApplyGemma4},  // 26B-A4B
    // M-RoPE (imrope) in llama.cpp: for text, NeoX over rope.dimension_count
    {"qwen35", RopeMode::kNeox, false, false, ApplyQwen35},
    {"qwen35moe", RopeMode::kNeox, true, false, ApplyQwen35},
    {"qwen3next", RopeMode::kNeox, true, false, ApplyQwen35},
    {"glm4moe", RopeMode::kNeox, true, false, ApplyGlm4Moe, true},
    {"seed_oss", RopeMode::kNeox, false, false, ApplySeedOss},
    {"minimax-m2", RopeMode::kNeox, true, false, ApplyMinimaxM2, true},
    {"ernie4_5-moe", RopeMode::kNormal, true, false, ApplyErnie45Moe, true},
    {"dots1", RopeMode::kNeox, true, false, ApplyDots1, true},
    {"bailingmoe2", RopeMode::kNeox, true, false, ApplyBailingMoe2, true},
    {"command-r", RopeMode::kNormal, false, true, ApplyCohere},
    {"cohere2", RopeMode::kNormal, false, true, ApplyCohere},
    {"stablelm", RopeMode::kNeox, false, true, ApplyStableLm},
    {"phi2", RopeMode::kNeox, false, true, ApplyPhi2},
    {"internlm2", RopeMode::kNormal, false, false, nullptr},  // llama's layers (the converter splits wqkv)
    {"starcoder2", RopeMode::kNeox, false, true, ApplyStarCoder2},
    {"gptneox", RopeMode::kNeox, false, true, ApplyGptNeoX},
    {"xverse", RopeMode::kNormal, false, false, nullptr},  // llama's layers
    {"orion", RopeMode::kNormal, false, true, ApplyOrion},
    {"falcon", RopeMode::kNeox, false, true, ApplyFalcon},
    {"nemotron", RopeMode::kNeox, false, true, ApplyNemotron},
    {"olmo", RopeMode::kNormal, false, true, ApplyOlmo},
    {"chatglm", RopeMode::kNormal, false, false, ApplyChatGlm},
    {"gpt2", RopeMode::kNormal, false, true, ApplyGpt2},       // learned positions: no RoPE
    {"starcoder", RopeMode::kNormal, false, true, ApplyGpt2},  // gpt2's layers with MQA
    {"exaone", RopeMode::kNeox, false, false, nullptr},        // llama's layers with NeoX pairs
    // MiniCPM 1B / 2B: llama's layers with granite's embedding, residual and logit multipliers (llama.cpp's
    // converter writes scale_emb, scale_depth / sqrt(n_layer) and hidden_size / dim_model_base as them)
    {"minicpm", RopeMode::kNormal, false, false, ApplyGranite},
    {"deci", RopeMode::kNormal, false, false, ApplyDeci},  // llama's layers pruned per layer
    {"olmoe", RopeMode::kNeox, true, false, ApplyOlmoe},
    {"deepseek", RopeMode::kNormal, true, false, ApplyDeepseek, true},
    {"bloom", RopeMode::kNormal, false, true, ApplyBloom},     // ALiBi: no RoPE
    {"mpt", RopeMode::kNormal, false, true, ApplyMpt},         // ALiBi: no RoPE
    {"refact", RopeMode::kNormal, false, false, ApplyRefact},  // ALiBi: no RoPE
    {"baichuan", RopeMode::kNormal, false, false, ApplyBaichuan},
    {"jais", RopeMode::kNormal, false, true, ApplyJais},  // ALiBi: no RoPE
    {"qwen", RopeMode::kNeox, false, false, ApplyQwen},
    {"plamo", RopeMode::kNormal, false, false, ApplyPlamo},
    {"codeshell", RopeMode::kNeox, false, true, ApplyCodeShell},
};

// The entry of kArchitectures named `architecture`, or nullptr.
const ArchInfo* FindArchInfo(const std::string& architecture) {
  for (const ArchInfo& a : kArchitectures) {
    if (architecture == a.name) return &a;
  }
  return nullptr;
}

}  // namespace

std::string TextArchitecture(const std::string& file_architecture) {
  // Qwen2-VL / Qwen2.5-VL and Qwen3-VL: their text positions have the same value in every M-RoPE section,
  // which makes M-RoPE (and Qwen3-VL's interleaved sections) the plain NeoX rotation; deepstack features
  // join image tokens only.
  static const std::map<std::string, std::string> kTextParts = {
      {"qwen2vl", "qwen2"}, {"qwen3vl", "qwen3"}, {"qwen3vlmoe", "qwen3moe"}};
  auto it = kTextParts.find(file_architecture);
  return it == kTextParts.end() ? file_architecture : it->second;
}

bool IsBertEncoder(const std::string& architecture) {
  return architecture == "bert" || architecture == "nomic-bert" || architecture == "jina-bert-v2";
}

bool UsesLayerNorm(const std::string& architecture) {
  const ArchInfo* arch = FindArchInfo(architecture);
  return arch != nullptr && arch->layer_norm;
}

std::vector<std::string> ArchitectureNames() {
  std::vector<std::string> names;
  for (const ArchInfo& a : kArchitectures) names.push_back(a.name);
  return names;
}

Status CheckArchitecture(const GgufFile& file, ModelConfig& c) {
  const ArchInfo* arch = FindArchInfo(c.architecture);
  for (const UnsupportedMoe& m : kUnsupportedMoe) {
    if (c.architecture == m.name) {
      return Unimplemented(file.path() + ": unsupported: mixture of experts ('" + c.architecture +
                           "' needs " + m.needs +
                           "); lockstep runs the experts of qwen3moe, granitemoe, qwen2moe, gpt-oss and "
                           "llama (Mixtral) files");
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t experts, file.GetIntOr(Key(c, "expert_count"), 0));
  if (experts > 0 && (arch == nullptr || !arch->experts)) {
    std::string list;
    for (const ArchInfo& a : kArchitectures) {
      if (a.experts) list += std::string(list.empty() ? "" : ", ") + a.name;
    }
    return Unimplemented(file.path() + ": unsupported: mixture of experts ('" + c.architecture + "', " +
                         Key(c, "expert_count") + " = " + std::to_string(experts) +
                         "); lockstep runs the experts of " + list + " (llama: Mixtral) files");
  }
  if (arch == nullptr) {
    std::string list;
    for (const ArchInfo& a : kArchitectures) list += std::string(list.empty() ? "" : ", ") + a.name;
    return Unimplemented(file.path() + ": unsupported architecture '" + c.architecture +
                         "' (general.architecture); supported: " + list);
  }
  c.rope_mode = arch->rope_mode;
  c.layer_norm = arch->layer_norm;
  return Status::Ok();
}

Status ApplyArchitecture(const GgufFile& file, ModelConfig& c) {
  c.layers.assign(size_t(c.n_layer), LayerAttention{});
  c.attention_scale = 1.0f / std::sqrt(float(c.head_dim));
  const ArchInfo* arch = FindArchInfo(c.architecture);
  if (arch == nullptr || !arch->own_experts) LOCKSTEP_RETURN_IF_ERROR(ApplyExperts(file, c));
  return arch == nullptr || arch->apply == nullptr ? Status::Ok() : arch->apply(file, c);
}

}  // namespace lockstep
