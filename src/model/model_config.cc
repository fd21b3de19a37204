#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "model/architecture_keys.h"
#include "model/architectures.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

Status CheckPositive(const GgufFile& file, const std::string& key, int64_t value, int64_t limit) {
  if (value <= 0 || value > limit) {
    return InvalidArgument(file.path() + ": key '" + key + "' = " + std::to_string(value) +
                           " is out of range (1.." + std::to_string(limit) + ")");
  }
  return Status::Ok();
}

// Reads the optional rope scaling keys; `rope_freqs.weight` (if any) is applied by FromGguf.
Status ParseRopeScaling(const GgufFile& file, const std::string& arch, ModelConfig& config) {
  const std::string prefix = arch + ".rope.scaling.";
  LOCKSTEP_ASSIGN_OR_RETURN(std::string type, file.GetStringOr(prefix + "type", "none"));
  LOCKSTEP_ASSIGN_OR_RETURN(double factor, file.GetFloatOr(prefix + "factor", 0.0));
  // Older files: <arch>.rope.scale_linear.
  LOCKSTEP_ASSIGN_OR_RETURN(double scale_linear, file.GetFloatOr(arch + ".rope.scale_linear", 0.0));
  if (type == "none" && scale_linear > 0 && scale_linear != 1.0) {
    type = "linear";
    factor = scale_linear;
  }
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t orig, file.GetIntOr(prefix + "original_context_length", 0));
  if (orig < 0) return InvalidArgument(file.path() + ": '" + prefix + "original_context_length' is negative");
  config.rope_orig_ctx = orig > 0 ? orig : config.n_ctx_train;
  LOCKSTEP_ASSIGN_OR_RETURN(double attn_factor, file.GetFloatOr(prefix + "attn_factor", 1.0));
  if (!(attn_factor > 0) || !std::isfinite(attn_factor)) {
    return InvalidArgument(file.path() + ": '" + prefix + "attn_factor' must be positive");
  }
  config.rope_attn_factor = static_cast<float>(attn_factor);
  // Llama 3 files written without the type key: inferred from its keys (Phi-3 writes
  // original_context_length too, for longrope, which its factor tensors select: model/architectures.cc).
  if (type == "none" && arch == "llama") {
    if (file.Has(prefix + "low_freq_factor") || orig > 0) type = "llama3";
  }
  if (type == "none") return Status::Ok();
  if (type == "linear") {
    if (!(factor > 0)) {
      return InvalidArgument(file.path() + ": rope scaling 'linear' needs a positive '" + prefix + "factor'");
    }
    config.rope_scaling = factor == 1.0 ? RopeScaling::kNone : RopeScaling::kLinear;
    config.rope_scale_factor = static_cast<float>(factor);
    return Status::Ok();
  }
  if (type == "llama3") {
    if (!(factor > 0)) {
      return InvalidArgument(file.path() + ": rope scaling 'llama3' needs a positive '" + prefix + "factor'");
    }
    LOCKSTEP_ASSIGN_OR_RETURN(double low, file.GetFloatOr(prefix + "low_freq_factor", 1.0));
    LOCKSTEP_ASSIGN_OR_RETURN(double high, file.GetFloatOr(prefix + "high_freq_factor", 4.0));
    if (orig == 0) orig = 8192;
    if (!(high > low) || low <= 0) {
      return InvalidArgument(file.path() +
                             ": inconsistent llama3 rope scaling keys (need high_freq_factor > "
                             "low_freq_factor > 0 and original_context_length > 0)");
    }
    config.rope_scaling = RopeScaling::kLlama3;
    config.rope_scale_factor = static_cast<float>(factor);
    config.rope_low_freq_factor = static_cast<float>(low);
    config.rope_high_freq_factor = static_cast<float>(high);
    config.rope_orig_ctx = orig;
    return Status::Ok();
  }
  if (type == "yarn") {
    if (!(factor > 0)) {
      return InvalidArgument(file.path() + ": rope scaling 'yarn' needs a positive '" + prefix + "factor'");
    }
    struct YarnKey {
      const char* suffix;
      float* value;
    };
    for (const YarnKey& k : {YarnKey{"yarn_ext_factor", &config.yarn_ext_factor},
                             YarnKey{"yarn_beta_fast", &config.yarn_beta_fast},
                             YarnKey{"yarn_beta_slow", &config.yarn_beta_slow},
                             YarnKey{"yarn_log_multiplier", &config.yarn_log_mul}}) {
      LOCKSTEP_ASSIGN_OR_RETURN(double value, file.GetFloatOr(prefix + k.suffix, double(*k.value)));
      if (!(value >= 0) || !std::isfinite(value)) {
        return InvalidArgument(file.path() + ": '" + prefix + k.suffix + "' must be a finite number >= 0");
      }
      *k.value = static_cast<float>(value);
    }
    config.rope_scaling = RopeScaling::kYarn;
    config.rope_scale_factor = static_cast<float>(factor);
    return Status::Ok();
  }
  return Unimplemented(file.path() + ": rope scaling type '" + type + "' (key '" + prefix +
                       "type') is not supported; supported: none, linear, llama3, yarn");
}

// llama3 factors: from the rope_freqs tensor when the file has one, else computed from the keys.
Status ApplyRopeFreqs(const GgufFile& file, ModelConfig& config) {
  const int64_t pairs = config.rope_dim / 2;
  if (const GgufTensorInfo* t = file.FindTensor("rope_freqs.weight")) {
    if (t->dims.size() != 1 || t->dims[0] != pairs || !CanDequantize(t->type)) {
      return InvalidArgument(file.path() + ": tensor 'rope_freqs.weight' must be a 1-D float tensor of " +
                             std::to_string(pairs) + " elements (rope.dimension_count / 2)");
    }
    config.rope_freq_factors.resize(pairs);
    DequantizeRow(t->type, t->data, config.rope_freq_factors.data(), pairs);
    for (float f : config.rope_freq_factors) {
      if (!(f > 0) || !std::isfinite(f)) {
        return InvalidArgument(file.path() + ": tensor 'rope_freqs.weight' has a non-positive factor");
      }
    }
    return Status::Ok();
  }
  if (config.rope_scaling == RopeScaling::kLlama3) {
    config.rope_freq_factors = Llama3RopeFreqFactors(config.rope_dim, config.rope_freq_base,
                                                     config.rope_scale_factor, config.rope_low_freq_factor,
                                                     config.rope_high_freq_factor, config.rope_orig_ctx);
  }
  return Status::Ok();
}

}  // namespace

const char* PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
    case Pooling::kRank:
      return "rank";
    case Pooling::kNone:
      break;
  }
  return "none";
}

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> names = ArchitectureNames();
  return names;
}

int32_t ModelConfig::KvLayer(int64_t l) const {
  LOCKSTEP_CHECK(Attends(l));  // reads K/V
  if (!StoresKv(l)) l = layers[size_t(l)].kv_from;
  int32_t index = 0;
  for (int64_t i = 0; i < l; ++i) index += StoresKv(i) ? 1 : 0;
  return index;
}

std::vector<float> ModelConfig::AlibiSlopes() const {
  if (max_alibi_bias <= 0) return {};
  const int64_t n = int64_t{1} << int64_t(std::floor(std::log2(double(n_head))));
  const float m0 = std::pow(2.0f, -max_alibi_bias / float(n));
  const float m1 = std::pow(2.0f, -(max_alibi_bias / 2.0f) / float(n));
  std::vector<float> slopes(static_cast<size_t>(n_head));
  for (int64_t h = 0; h < n_head; ++h) {
    slopes[size_t(h)] = h < n ? std::pow(m0, float(h + 1)) : std::pow(m1, float(2 * (h - n) + 1));
  }
  return slopes;
}

int64_t ModelConfig::MaxQDim() const {
  int64_t widest = q_dim();
  for (int64_t l = 0; l < int64_t(layers.size()); ++l) {
    widest = std::max({widest, LayerQDim(l), n_head * CacheHeadDim(l)});
  }
  return widest;
}

int64_t ModelConfig::MaxKvDim() const {
  int64_t widest = kv_dim();
  for (int64_t l = 0; l < int64_t(layers.size()); ++l) {
    widest = std::max({widest, LayerKvDim(l), CacheKvHeads(l) * CacheHeadDim(l)});
  }
  return widest;
}

int64_t ModelConfig::MaxVDim() const {
  int64_t widest = v_dim();
  for (int64_t l = 0; l < int64_t(layers.size()); ++l) {
    widest = std::max({widest, LayerKvHeads(l) * LayerValueDim(l), CacheKvHeads(l) * CacheValueDim(l)});
  }
  return widest;
}

int64_t ModelConfig::MaxAttDim() const {
  int64_t widest = att_dim();
  for (int64_t l = 0; l < int64_t(layers.size()); ++l) {
    widest = std::max({widest, LayerAttDim(l), n_head * CacheValueDim(l)});
  }
  return widest;
}

int64_t ModelConfig::WidestWindow() const {
  int64_t widest = 0;
  for (const LayerAttention& layer : layers) {
    if (layer.window == 0) return 0;
    widest = std::max(widest, layer.window);
  }
  return widest;
}

int64_t ModelConfig::RecurrentLayers() const {
  int64_t n = 0;
  for (const LayerAttention& layer : layers) n += layer.recurrent ? 1 : 0;
  return n;
}

std::vector<float> Llama3RopeFreqFactors(int64_t rope_dim, float freq_base, float factor,
                                         float low_freq_factor, float high_freq_factor, int64_t orig_ctx) {
  std::vector<float> factors;
  const double low_wavelen = double(orig_ctx) / low_freq_factor;
  const double high_wavelen = double(orig_ctx) / high_freq_factor;
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(double(freq_base), double(2 * i) / double(rope_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (orig_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1 - smooth) / factor + smooth);
    }
    factors.push_back(static_cast<float>(f));
  }
  return factors;
}

namespace {

// A key written per layer where the architecture's configuration reads one value: an error naming it, not
// silently the largest entry (LargestPerLayerInt). gemma4 reads its FFN widths and KV heads per layer,
// deci those and its heads.
Status RefusePerLayerArrays(const GgufFile& file, const ModelConfig& c) {
  const bool deci = c.architecture == "deci", gemma4 = c.architecture == "gemma4";
  for (const char* suffix : {".attention.head_count", ".attention.head_count_kv", ".feed_forward_length"}) {
    const std::string key = c.file_architecture + suffix;
    const GgufValue* value = file.Find(key);
    const bool per_layer_here = deci || (gemma4 && std::string_view(suffix) != ".attention.head_count");
    if (value != nullptr && value->AsArray() != nullptr && !per_layer_here) {
      return Unimplemented(file.path() + ": key '" + key + "' holds one value per layer; lockstep reads " +
                           c.architecture + "'s as one value (per-layer values: gemma4, deci)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ModelConfig::FromGguf(const GgufFile& file) {
  ModelConfig c;
  LOCKSTEP_ASSIGN_OR_RETURN(c.file_architecture, file.GetString("general.architecture"));
  c.architecture = TextArchitecture(c.file_architecture);
  LOCKSTEP_RETURN_IF_ERROR(CheckArchitecture(file, c));
  const std::string& a = c.file_architecture;
  LOCKSTEP_ASSIGN_OR_RETURN(c.name, file.GetStringOr("general.name", ""));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_ctx_train, file.GetInt(a + ".context_length"));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_embd, file.GetInt(a + ".embedding_length"));
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t pooling, file.GetIntOr(a + ".pooling_type", 0));
  if (pooling >= 1 && pooling <= 4) c.pooling = static_cast<Pooling>(pooling);
  // Encoder-style embedding models attend both ways. The BERT family (bert, nomic-bert, jina-bert-v2) runs so
  // (model/bert_encoder.h); others with a bidirectional flag (gte-Qwen2, EmbeddingGemma) run through the
  // causal forward pass, so their vectors would silently be wrong: refused.
  const bool bert = IsBertEncoder(a);
  LOCKSTEP_ASSIGN_OR_RETURN(c.causal, file.GetBoolOr(a + ".attention.causal", !bert));
  if (c.causal == bert) {
    return Unimplemented(file.path() + ": " + a + ".attention.causal is " + (c.causal ? "true" : "false") +
                         (bert ? "; " + a + " runs bidirectional attention only"
                               : " (a bidirectional embedding model); only the BERT family (bert, "
                                 "nomic-bert, jina-bert-v2) runs bidirectionally"));
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_layer, file.GetInt(a + ".block_count"));
  // Gemma 4 writes the FFN widths and KV heads per layer, deci those and the heads: the largest here, each
  // layer's in model/gemma4.cc and model/deci_config.cc (other architectures refuse arrays: below).
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_head, LargestPerLayerInt(file, a + ".attention.head_count", -1));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_ff, LargestPerLayerInt(file, a + ".feed_forward_length", -1));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_head_kv, LargestPerLayerInt(file, a + ".attention.head_count_kv", c.n_head));
  const std::string eps_key =
      a + (c.ReadsLayerNormEpsilon() ? ".attention.layer_norm_epsilon" : ".attention.layer_norm_rms_epsilon");
  LOCKSTEP_ASSIGN_OR_RETURN(double eps, file.GetFloat(eps_key));
  LOCKSTEP_ASSIGN_OR_RETURN(double base, file.GetFloatOr(a + ".rope.freq_base", 10000.0));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".context_length", c.n_ctx_train, int64_t{1} << 24));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".embedding_length", c.n_embd, 1 << 16));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".block_count", c.n_layer, 1024));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".feed_forward_length", c.n_ff, 1 << 20));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".attention.head_count", c.n_head, 1024));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".attention.head_count_kv", c.n_head_kv, c.n_head));
  if (c.n_head % c.n_head_kv != 0) {
    return InvalidArgument(file.path() + ": attention.head_count " + std::to_string(c.n_head) +
                           " is not a multiple of attention.head_count_kv " + std::to_string(c.n_head_kv));
  }
  const int64_t default_head_dim = c.n_embd % c.n_head == 0 ? c.n_embd / c.n_head : 0;
  LOCKSTEP_ASSIGN_OR_RETURN(c.head_dim, file.GetIntOr(a + ".attention.key_length", default_head_dim));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".attention.key_length", c.head_dim, kMaxHeadDim));
  LOCKSTEP_ASSIGN_OR_RETURN(c.value_dim, file.GetIntOr(a + ".attention.value_length", c.head_dim));
  LOCKSTEP_RETURN_IF_ERROR(CheckPositive(file, a + ".attention.value_length", c.value_dim, kMaxHeadDim));
  if (c.value_dim != c.head_dim && c.architecture != "deepseek2") {
    return Unimplemented(file.path() +
                         ": attention.value_length != attention.key_length is supported for "
                         "deepseek2 only");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.rope_dim, file.GetIntOr(a + ".rope.dimension_count", c.head_dim));
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return InvalidArgument(file.path() + ": " + a + ".rope.dimension_count = " + std::to_string(c.rope_dim) +
                           " must be even and in 2..head_dim (" + std::to_string(c.head_dim) + ")");
  }
  if (!(eps > 0) || eps > 1) {
    return InvalidArgument(file.path() + ": " + eps_key + " out of range");
  }
  if (!(base > 1)) return InvalidArgument(file.path() + ": " + a + ".rope.freq_base must be > 1");
  c.rms_eps = static_cast<float>(eps);
  c.rope_freq_base = static_cast<float>(base);
  LOCKSTEP_RETURN_IF_ERROR(ParseRopeScaling(file, a, c));
  LOCKSTEP_RETURN_IF_ERROR(ApplyRopeFreqs(file, c));

  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd != nullptr && embd->dims.size() == 2) {
    c.n_vocab = embd->dims[1];
  } else if (const GgufValue* tokens = file.Find("tokenizer.ggml.tokens"); tokens && tokens->AsArray()) {
    c.n_vocab = static_cast<int64_t>(tokens->AsArray()->elements.size());  // ModelWeights reports the tensor
  }
  if (c.n_vocab <= 0) {
    return InvalidArgument(file.path() +
                           ": cannot determine the vocabulary size: tensor 'token_embd.weight' "
                           "is missing or not 2-D and there is no tokenizer.ggml.tokens");
  }
  c.qkv_bias = file.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.attn_output_bias = file.FindTensor("blk.0.attn_output.bias") != nullptr;
  LOCKSTEP_RETURN_IF_ERROR(RefusePerLayerArrays(file, c));
  LOCKSTEP_RETURN_IF_ERROR(ApplyArchitecture(file, c));
  return c;
}

std::string ModelConfig::ArchitectureLabel() const {
  if (file_architecture == architecture) return file_architecture;
  return file_architecture + " (text only, " + architecture + "'s layers)";
}

std::string ModelConfig::Summary() const {
  std::ostringstream out;
  out << ArchitectureLabel() << ": n_vocab " << n_vocab << ", n_ctx_train " << n_ctx_train << ", n_embd "
      << n_embd << ", n_layer " << n_layer << ", n_ff " << n_ff << ", n_head " << n_head << ", n_head_kv "
      << n_head_kv << ", head_dim " << head_dim << ", rope "
      << (rope_mode == RopeMode::kNeox ? "neox" : "normal") << " base " << rope_freq_base << " dim "
      << rope_dim;
  if (rope_scaling == RopeScaling::kLinear) out << " linear x" << rope_scale_factor;
  if (rope_scaling == RopeScaling::kYarn) {
    out << " yarn x" << rope_scale_factor << " from " << rope_orig_ctx << " (beta " << yarn_beta_fast << "/"
        << yarn_beta_slow << ")";
  }
  if (rope_scaling == RopeScaling::kLongRope) {
    out << " longrope " << (n_ctx_train > rope_orig_ctx ? "long" : "short") << " factors, attn_factor "
        << rope_attn_factor;
  } else if (!rope_freq_factors.empty()) {
    out << " llama3-freq-factors";
  }
  out << (causal ? ", " : ", bidirectional, ") << NormEpsilonName() << " " << rms_eps
      << (qkv_bias ? ", qkv bias" : "") << (qk_norm ? ", q/k norm" : "") << (post_norms ? ", post-norms" : "")
      << (scale_embeddings ? ", embeddings x sqrt(n_embd)" : "")
      << (ffn_activation == FfnActivation::kGeluTanh ? ", GeGLU" : "")
      << (ffn_activation == FfnActivation::kSwiGluOai ? ", clamped SwiGLU" : "")
      << (attn_output_bias ? ", attn_output bias" : "") << (attn_sinks ? ", attention sinks" : "");
  if (embedding_multiplier != 0 || residual_multiplier != 0) {
    out << ", embeddings x " << embedding_multiplier << ", residual x " << residual_multiplier;
  }
  if (logit_scale != 0) out << ", logits x " << logit_scale;
  if (layer_norm) {
    out << (!norm_weights ? ", LayerNorm without weights"
            : norm_bias   ? ", LayerNorm with biases"
                          : ", LayerNorm");
  }
  if (clamp_kqv > 0) out << ", Q/K/V clamped to " << clamp_kqv;
  if (embedding_norm) out << ", normed embeddings";
  if (max_alibi_bias > 0) out << ", ALiBi (max bias " << max_alibi_bias << ")";
  int64_t no_attention = 0, linear_attention = 0, no_ffn = 0;
  for (int64_t l = 0; l < int64_t(layers.size()); ++l) {
    no_attention += layers[size_t(l)].no_attention ? 1 : 0;
    linear_attention += layers[size_t(l)].linear_attention ? 1 : 0;
    no_ffn += LayerFf(l) == 0 ? 1 : 0;
  }
  if (no_attention > 0) out << ", " << no_attention << " layers without attention";
  if (linear_attention > 0) out << ", " << linear_attention << " with linear attention";
  if (no_ffn > 0) out << ", " << no_ffn << " without an FFN";
  if (parallel_ffn)
    out << (parallel_ffn_norm ? ", parallel attention and FFN (each its own norm)"
                              : ", parallel attention and FFN");
  if (ungated_ffn) {
    out << (ffn_activation == FfnActivation::kReluSquared ? ", ungated squared-ReLU FFN"
                                                          : ", ungated GELU FFN")
        << (ffn_bias ? " with biases" : "");
  }
  if (n_expert > 0) {
    out << ", " << n_expert_used << " of " << n_expert << " experts of width " << n_ff_expert
        << (expert_weights_norm ? "" : " (weights not renormalised)") << (expert_biases ? ", biased" : "");
    if (n_ff_shared > 0) {
      out << (shared_expert_gate ? " and a gated shared expert of width " : " and shared experts of width ")
          << n_ff_shared;
    }
    if (expert_gating != ExpertGating::kLogits) {
      out << ", " << (expert_gating == ExpertGating::kSigmoid ? "sigmoid" : "softmax") << " scores"
          << (expert_selection_bias ? " chosen with a bias" : "") << " x " << expert_weights_scale;
      if (expert_groups_used < expert_groups) {
        out << " from the best " << expert_groups_used << " of " << expert_groups << " expert groups";
      }
    }
    if (n_layer_dense_lead > 0) out << ", " << n_layer_dense_lead << " dense layers first";
  }
  if (kv_lora_rank > 0) {
    out << ", latent attention (rank " << kv_lora_rank;
    if (q_lora_rank > 0) out << ", query rank " << q_lora_rank;
    out << "; values " << value_dim << " wide" << (mla_latent_cache ? ", the latent cached" : "") << ")";
  }
  if (attn_softcap > 0) out << ", attention softcap " << attn_softcap;
  if (final_softcap > 0) out << ", final softcap " << final_softcap;
  if (RecurrentLayers() > 0) {
    const DeltaNetConfig& dn = delta_net;
    out << ", Gated DeltaNet on " << RecurrentLayers() << "/" << n_layer << " layers (" << dn.k_heads << "x"
        << dn.head_k_dim << " key, " << dn.v_heads << "x" << dn.head_v_dim << " value heads, conv "
        << dn.conv_kernel << ")";
  }
  if (attn_output_gate) out << ", gated attention output";
  int64_t windowed = 0, unrotated = 0;
  for (const LayerAttention& layer : layers) {
    windowed += layer.window > 0 ? 1 : 0;
    unrotated += layer.rope ? 0 : 1;
  }
  if (unrotated > 0) out << ", no RoPE on " << unrotated << "/" << n_layer << " layers";
  if (windowed > 0) {
    out << ", sliding window " << sliding_window << " on " << windowed << "/" << n_layer << " layers";
    if (!layers.empty() && layers.front().local_rope)
      out << " (local rope base " << rope_freq_base_local << ")";
  }
  return out.str();
}

}  // namespace lockstep
