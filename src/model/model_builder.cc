#include "model/model_builder.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/architectures.h"
#include "model/model_config.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

// A fast seeded normal(0, std) stream: splitmix64 bits, Box-Muller pairs.
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : state_(seed) {}
  float Next(float stddev) {
    if (has_spare_) {
      has_spare_ = false;
      return spare_ * stddev;
    }
    const double u1 = (double((Bits() >> 11) + 1)) * (1.0 / 9007199254740993.0);  // (0, 1]
    const double u2 = double(Bits() >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2 * M_PI * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2 * M_PI * u2)) * stddev;
  }

 private:
  uint64_t Bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  bool has_spare_ = false;
  float spare_ = 0;
};

uint64_t HashName(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

enum class Fill { kNormal, kOnes, kNearOne, kValues };

int64_t HeadDim(const ModelShape& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }
int64_t ValueDim(const ModelShape& s) { return s.value_dim > 0 ? s.value_dim : HeadDim(s); }
int64_t RopeDim(const ModelShape& s) { return s.rope_dim > 0 ? s.rope_dim : HeadDim(s); }

// Phi-3's longrope attention factor, as llama.cpp's converter computes it from the context ratio.
float LongRopeAttnFactor(const ModelShape& s) {
  const double scale = double(s.n_ctx) / double(s.longrope_orig_ctx);
  return scale > 1 ? float(std::sqrt(1 + std::log(scale) / std::log(double(s.longrope_orig_ctx)))) : 1.0f;
}

struct PlannedTensor {
  std::string name;
  TensorType type;
  std::vector<int64_t> dims;
  Fill fill = Fill::kNormal;
  std::vector<float> values;  // Fill::kValues
  float stddev = 0;           // Fill::kNormal: 0 = the shape's weight_std
  size_t bytes() const {
    int64_t rows = 1;
    for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
    return RowBytes(type, dims[0]) * size_t(rows);
  }
};

// The 256-element block types (K-quants and IQ4_XS).
bool IsKQuant(TensorType type) {
  return type == TensorType::kQ2_K || type == TensorType::kQ3_K || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K || type == TensorType::kIQ4_XS;
}

// llama.cpp's fallback for K-quant rows that are not a multiple of 256 (llama_tensor_get_type): Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K, Q3_K and IQ4_XS -> IQ4_NL (all 32-element blocks).
TensorType KQuantFallback(TensorType type) {
  switch (type) {
    case TensorType::kIQ4_XS:
    case TensorType::kQ3_K:
    case TensorType::kQ2_K:
      return TensorType::kIQ4_NL;
    case TensorType::kQ4_K:
      return TensorType::kQ5_0;
    case TensorType::kQ5_K:
      return TensorType::kQ5_1;
    default:
      return TensorType::kQ8_0;
  }
}

// A mix's base type (q4_k or q5_k), or kF32 for none.
TensorType MixBaseType(KQuantMix mix) {
  switch (mix) {
    case KQuantMix::kQ4KM:
    case KQuantMix::kQ4KS:
      return TensorType::kQ4_K;
    case KQuantMix::kQ5KM:
    case KQuantMix::kQ5KS:
      return TensorType::kQ5_K;
    case KQuantMix::kNone:
      break;
  }
  return TensorType::kF32;
}

// general.file_type, llama.cpp's LLAMA_FTYPE_MOSTLY_* numbering.
int64_t FileTypeOf(const MakeModelOptions& o) {
  switch (o.mix) {
    case KQuantMix::kQ4KS:
      return 14;
    case KQuantMix::kQ4KM:
      return 15;
    case KQuantMix::kQ5KS:
      return 16;
    case KQuantMix::kQ5KM:
      return 17;
    case KQuantMix::kNone:
      break;
  }
  switch (o.type) {
    case TensorType::kF32:
      return 0;
    case TensorType::kF16:
      return 1;
    case TensorType::kQ4_0:
      return 2;
    case TensorType::kQ8_0:
      return 7;
    case TensorType::kQ5_0:
      return 8;
    case TensorType::kQ5_1:
      return 9;
    case TensorType::kBF16:
      return 32;
    case TensorType::kQ2_K:
      return 10;  // "mostly Q2_K"
    case TensorType::kQ3_K:
      return 11;  // "mostly Q3_K - Small", whose matrices are all Q3_K but the output
    case TensorType::kQ4_K:
      return 14;  // "mostly Q4_K"
    case TensorType::kQ5_K:
      return 16;
    case TensorType::kQ6_K:
      return 18;
    case TensorType::kIQ4_NL:
      return 25;
    case TensorType::kIQ4_XS:
      return 30;
    case TensorType::kMXFP4:
      return 38;  // "MXFP4 MoE", llama.cpp's name for gpt-oss files
    default:
      return 0;
  }
}

// Which matrix a 2-D tensor is, for the K-quant mixes (kAttnV: attn_v, or phi3's fused attn_qkv).
enum class Role { kPlain, kOutput, kAttnV, kFfnDown };

TensorType MatrixType(const MakeModelOptions& o, Role role, int64_t layer, int64_t in) {
  TensorType type = o.type;
  const int64_t n_layer = o.shape.n_layer;
  const bool v_or_down = role == Role::kAttnV || role == Role::kFfnDown;
  if (o.mix != KQuantMix::kNone && role == Role::kOutput) type = TensorType::kQ6_K;
  if ((o.mix == KQuantMix::kQ4KM || o.mix == KQuantMix::kQ5KM) && v_or_down && UsesMoreBits(layer, n_layer)) {
    type = TensorType::kQ6_K;
  }
  if (o.mix == KQuantMix::kQ4KS &&
      ((role == Role::kAttnV && layer < 4) || (role == Role::kFfnDown && layer < n_layer / 8))) {
    type = TensorType::kQ5_K;
  }
  if (IsKQuant(type) && in % GetTensorTypeTraits(type).block_elements != 0) type = KQuantFallback(type);
  return type;
}

// bert (llama.cpp's names and shapes for it): absolute position and token-type tables, LayerNorms with
// biases, biases on every matrix, no gate and no output matrix.
std::vector<PlannedTensor> PlanBertTensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  const int64_t d = s.n_embd;
  const Fill norm = s.random_norms ? Fill::kNearOne : Fill::kOnes;
  std::vector<PlannedTensor> t;
  int64_t layer = 0;
  auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
    t.push_back({name, MatrixType(o, Role::kPlain, layer, in), {in, out}, Fill::kNormal, {}});
  };
  auto f32 = [&](const std::string& name, std::vector<int64_t> dims, Fill fill) {
    t.push_back({name, TensorType::kF32, std::move(dims), fill, {}});
  };
  auto layer_norm = [&](const std::string& name) {
    f32(name + ".weight", {d}, norm);
    f32(name + ".bias", {d}, Fill::kNormal);
  };
  matrix("token_embd.weight", n_vocab, d);
  f32("token_types.weight", {d, 2}, Fill::kNormal);
  f32("position_embd.weight", {d, s.n_ctx}, Fill::kNormal);
  layer_norm("token_embd_norm");
  for (layer = 0; layer < s.n_layer; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      matrix(p + m + ".weight", d, d);
      f32(p + m + ".bias", {d}, Fill::kNormal);
    }
    layer_norm(p + "attn_output_norm");
    matrix(p + "ffn_up.weight", s.n_ff, d);
    f32(p + "ffn_up.bias", {s.n_ff}, Fill::kNormal);
    matrix(p + "ffn_down.weight", d, s.n_ff);
    f32(p + "ffn_down.bias", {d}, Fill::kNormal);
    layer_norm(p + "layer_output_norm");
  }
  if (s.n_cls_out > 0) {  // BERT's head: a dense layer (tanh) before cls.output
    f32("cls.weight", {d, d}, Fill::kNormal);
    f32("cls.bias", {d}, Fill::kNormal);
    t.push_back({"cls.output.weight", TensorType::kF32, {d, s.n_cls_out}, Fill::kNormal, {}, 0.2f});
    f32("cls.output.bias", {s.n_cls_out}, Fill::kNormal);
  }
  return t;
}

// Gemma 4's layer plan (ModelShape's gemma4 fields).
bool Gemma4Global(const ModelShape& s, int64_t layer) { return (layer + 1) % s.gemma4_global_every == 0; }
bool Gemma4Shared(const ModelShape& s, int64_t layer) { return layer >= s.n_layer - s.shared_kv_layers; }
int64_t Gemma4Ff(const ModelShape& s, int64_t layer) { return Gemma4Shared(s, layer) ? 2 * s.n_ff : s.n_ff; }

// Gemma 4's tensors as llama.cpp's converter names them (model/gemma4.h).
std::vector<PlannedTensor> PlanGemma4Tensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  const int64_t d = s.n_embd, n_epl = s.n_embd_per_layer;
  const Fill norm = s.random_norms ? Fill::kNearOne : Fill::kOnes;
  std::vector<PlannedTensor> t;
  int64_t layer = 0;
  auto matrix = [&](const std::string& name, int64_t out, int64_t in, Role role = Role::kPlain) {
    t.push_back({name, MatrixType(o, role, layer, in), {in, out}, Fill::kNormal, {}});
  };
  auto vec = [&](const std::string& name, int64_t n, Fill fill) {
    t.push_back({name, TensorType::kF32, {n}, fill, {}});
  };
  matrix("token_embd.weight", n_vocab, d, Role::kOutput);  // tied, as every Gemma 4
  vec("output_norm.weight", d, norm);
  std::vector<float> freqs(size_t(s.head_dim / 2), 1e30f);  // a quarter of each global head rotated
  std::fill(freqs.begin(), freqs.begin() + s.head_dim / 8, 1.0f);
  t.push_back({"rope_freqs.weight", TensorType::kF32, {int64_t(freqs.size())}, Fill::kValues, freqs});
  if (n_epl > 0) {
    matrix("per_layer_token_embd.weight", n_vocab, n_epl * s.n_layer);
    matrix("per_layer_model_proj.weight", n_epl * s.n_layer, d);
    vec("per_layer_proj_norm.weight", n_epl, norm);
  }
  for (layer = 0; layer < s.n_layer; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const bool global = Gemma4Global(s, layer);
    const int64_t hd = global ? s.head_dim : s.head_dim_local;
    const int64_t kv_dim = (global && s.n_head_kv_global > 0 ? s.n_head_kv_global : s.n_head_kv) * hd;
    vec(p + "attn_norm.weight", d, norm);
    matrix(p + "attn_q.weight", s.n_head * hd, d);
    // Norm weights near `scale` (varied, so that misapplied norms show).
    auto scaled_norm = [&](const std::string& name, int64_t n, float scale) {
      std::vector<float> w(static_cast<size_t>(n));
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = (1.0f + 0.2f * std::sin(float(i * 7 + size_t(layer)))) * scale;
      t.push_back({name, TensorType::kF32, {n}, Fill::kValues, std::move(w)});
    };
    // Gemma 4 scales no scores: Q norms near 1 / sqrt(head size) keep random weights' attention from being
    // as sharp as one-hot.
    scaled_norm(p + "attn_q_norm.weight", hd, 1.0f / std::sqrt(float(hd)));
    if (!Gemma4Shared(s, layer)) {
      matrix(p + "attn_k.weight", kv_dim, d);
      if (!global) matrix(p + "attn_v.weight", kv_dim, d, Role::kAttnV);
      vec(p + "attn_k_norm.weight", hd, norm);
    }
    matrix(p + "attn_output.weight", d, s.n_head * hd);
    // Attention outputs a fifth of the residual's scale: unit-RMS V heads otherwise make the logits follow
    // their f16 rounding (5e-4) almost one to one, more than the top-2 margins of a tiny random model.
    scaled_norm(p + "post_attention_norm.weight", d, 0.2f);
    vec(p + "ffn_norm.weight", d, norm);
    matrix(p + "ffn_gate.weight", Gemma4Ff(s, layer), d);
    matrix(p + "ffn_up.weight", Gemma4Ff(s, layer), d);
    matrix(p + "ffn_down.weight", d, Gemma4Ff(s, layer), Role::kFfnDown);
    vec(p + "post_ffw_norm.weight", d, norm);
    vec(p + "layer_output_scale.weight", 1, Fill::kNearOne);
    if (n_epl > 0) {
      matrix(p + "inp_gate.weight", n_epl, d);
      matrix(p + "proj.weight", d, n_epl);
      vec(p + "post_norm.weight", d, norm);
    }
  }
  return t;
}

void SetGemma4Metadata(const ModelShape& s, GgufWriter& w) {
  const std::string a = s.architecture + ".";
  std::vector<GgufValue> pattern;
  std::vector<int32_t> kv_heads, ff;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const bool global = Gemma4Global(s, l);
    pattern.push_back(GgufValue::Bool(!global));
    kv_heads.push_back(int32_t(global && s.n_head_kv_global > 0 ? s.n_head_kv_global : s.n_head_kv));
    ff.push_back(int32_t(Gemma4Ff(s, l)));
  }
  w.Set(a + "attention.sliding_window_pattern", GgufValue::MakeArray(GgufType::kBool, std::move(pattern)));
  w.Set(a + "attention.head_count_kv", GgufValue::Int32Array(kv_heads));
  w.Set(a + "feed_forward_length", GgufValue::Int32Array(ff));
  w.Set(a + "attention.shared_kv_layers", GgufValue::Uint32(uint32_t(s.shared_kv_layers)));
  w.Set(a + "attention.key_length_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "attention.value_length_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "rope.dimension_count_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "rope.freq_base_swa", GgufValue::Float32(10000.0f));
  w.Set(a + "embedding_length_per_layer_input", GgufValue::Uint32(uint32_t(s.n_embd_per_layer)));
  w.Set(a + "final_logit_softcapping", GgufValue::Float32(s.final_softcap));
}

// qwen35: a Gated DeltaNet layer's tensors (llama.cpp's names and shapes for them; model/delta_net.h): F32
// conv taps and per-head vectors, ssm_a = -exp(A_log) for A_log in [0, 1.5).
void PlanDeltaNetLayer(const ModelShape& s, const std::string& p, Fill norm,
                       const std::function<void(const std::string&, int64_t, int64_t)>& matrix,
                       std::vector<PlannedTensor>& t) {
  const int64_t key_dim = s.ssm_k_heads * s.ssm_head_dim, value_dim = s.ssm_v_heads * s.ssm_head_dim;
  matrix(p + "attn_qkv.weight", 2 * key_dim + value_dim, s.n_embd);
  matrix(p + "attn_gate.weight", value_dim, s.n_embd);
  matrix(p + "ssm_beta.weight", s.ssm_v_heads, s.n_embd);
  matrix(p + "ssm_alpha.weight", s.ssm_v_heads, s.n_embd);
  matrix(p + "ssm_out.weight", s.n_embd, value_dim);
  t.push_back({p + "ssm_conv1d.weight",
               TensorType::kF32,
               {s.ssm_conv_kernel, 2 * key_dim + value_dim},
               Fill::kNormal,
               {},
               0.3f});
  std::vector<float> a(size_t(s.ssm_v_heads));
  for (size_t h = 0; h < a.size(); ++h) a[h] = -std::exp(1.5f * float(h) / float(a.size()));
  t.push_back({p + "ssm_a", TensorType::kF32, {s.ssm_v_heads}, Fill::kValues, std::move(a)});
  t.push_back({p + "ssm_dt.bias", TensorType::kF32, {s.ssm_v_heads}, Fill::kNormal, {}, 1.0f});
  t.push_back({p + "ssm_norm.weight", TensorType::kF32, {s.ssm_head_dim}, norm, {}});
}

std::vector<PlannedTensor> PlanTensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  if (s.architecture == "bert") return PlanBertTensors(o, n_vocab);
  if (s.architecture == "gemma4") return PlanGemma4Tensors(o, n_vocab);
  const std::string a = TextArchitecture(s.architecture);  // the layers' tensors
  const int64_t head_dim = HeadDim(s);
  const int64_t q_dim = s.n_head * head_dim;
  const int64_t kv_dim = s.n_head_kv * head_dim;
  const bool olmo2 = a == "olmo2";  // no pre-norms; Q and K norms over the whole projection
  const bool qk_norm = a == "qwen3" || a == "qwen3moe" || a == "gemma3" || olmo2;
  const bool post_norms = a == "gemma2" || a == "gemma3" || olmo2 || a == "glm4";
  // attn_qkv and ffn_up [gate | up], as llama.cpp's converter keeps them (glm4: ffn_up only)
  const bool fused = a == "phi3";
  const bool fused_ffn = fused || a == "glm4";
  const bool gpt_oss = a == "gpt-oss";  // sinks, attn_output and expert biases (model/architectures.h)
  const bool qwen35 = a == "qwen35" || a == "qwen35moe";  // Gated DeltaNet layers; gated attention output
  const Fill norm = s.random_norms ? Fill::kNearOne : Fill::kOnes;
  std::vector<PlannedTensor> t;
  int64_t layer = 0;
  auto matrix = [&](const std::string& name, int64_t out, int64_t in, Role role = Role::kPlain) {
    t.push_back({name, MatrixType(o, role, layer, in), {in, out}, Fill::kNormal, {}});
  };
  auto vec = [&](const std::string& name, int64_t n, Fill fill) {
    t.push_back({name, TensorType::kF32, {n}, fill, {}});
  };
  auto values = [&](const std::string& name, std::vector<float> v) {
    t.push_back({name, TensorType::kF32, {int64_t(v.size())}, Fill::kValues, std::move(v)});
  };
  // Tied embeddings: token_embd is the output matrix too, and takes its type.
  matrix("token_embd.weight", n_vocab, s.n_embd, s.tied_embeddings ? Role::kOutput : Role::kPlain);
  vec("output_norm.weight", s.n_embd, norm);
  if (!s.tied_embeddings) matrix("output.weight", n_vocab, s.n_embd, Role::kOutput);
  if (s.n_cls_out > 0) {  // wider than the matrices: the scores of different documents then spread out
    t.push_back({"cls.output.weight", TensorType::kF32, {s.n_embd, s.n_cls_out}, Fill::kNormal, {}, 0.2f});
  }
  if (s.llama3_factor > 0) {
    values("rope_freqs.weight",
           Llama3RopeFreqFactors(RopeDim(s), s.rope_freq_base, s.llama3_factor, s.llama3_low_freq_factor,
                                 s.llama3_high_freq_factor, s.llama3_original_ctx));
  }
  if (s.longrope_orig_ctx > 0) {
    // Random factors (short ones near 1, long ones up to ~5), head_dim / 2 of them as llama.cpp c392e50 and
    // ik_llama.cpp load them (for partial rotary only the first rope_dim / 2 are read).
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
      const bool is_long = name[13] == 'l';
      NormalStream normal(o.seed ^ HashName(name));
      std::vector<float> f(size_t(head_dim / 2));
      for (float& x : f) x = 1.0f + std::abs(normal.Next(is_long ? 2.0f : 0.1f));
      values(name, f);
    }
  }
  for (layer = 0; layer < s.n_layer; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    if (!olmo2) vec(p + "attn_norm.weight", s.n_embd, norm);
    const bool dense = s.n_expert == 0 || layer < s.n_layer_dense_lead;
    const bool recurrent = qwen35 && (layer + 1) % s.full_attention_interval != 0;
    if (s.kv_lora_rank > 0) {  // deepseek2's latent attention
      if (s.q_lora_rank > 0) {
        matrix(p + "attn_q_a.weight", s.q_lora_rank, s.n_embd);
        vec(p + "attn_q_a_norm.weight", s.q_lora_rank, norm);
        matrix(p + "attn_q_b.weight", q_dim, s.q_lora_rank);
      } else {
        matrix(p + "attn_q.weight", q_dim, s.n_embd);
      }
      matrix(p + "attn_kv_a_mqa.weight", s.kv_lora_rank + RopeDim(s), s.n_embd);
      vec(p + "attn_kv_a_norm.weight", s.kv_lora_rank, norm);
      matrix(p + "attn_kv_b.weight", s.n_head * (head_dim - RopeDim(s) + ValueDim(s)), s.kv_lora_rank,
             Role::kAttnV);
    } else if (recurrent) {
      PlanDeltaNetLayer(
          s, p, norm, [&](const std::string& name, int64_t out, int64_t in) { matrix(name, out, in); }, t);
    } else if (fused) {
      matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, s.n_embd, Role::kAttnV);
    } else {
      matrix(p + "attn_q.weight", (qwen35 ? 2 : 1) * q_dim, s.n_embd);  // qwen35: [query | gate] per head
      matrix(p + "attn_k.weight", kv_dim, s.n_embd);
      matrix(p + "attn_v.weight", kv_dim, s.n_embd, Role::kAttnV);
    }
    if (s.qkv_bias) {
      vec(p + "attn_q.bias", q_dim, Fill::kNormal);
      vec(p + "attn_k.bias", kv_dim, Fill::kNormal);
      vec(p + "attn_v.bias", kv_dim, Fill::kNormal);
    }
    if ((qk_norm || qwen35) && !recurrent) {
      vec(p + "attn_q_norm.weight", olmo2 ? q_dim : head_dim, norm);
      vec(p + "attn_k_norm.weight", olmo2 ? kv_dim : head_dim, norm);
    }
    if (!recurrent) matrix(p + "attn_output.weight", s.n_embd, s.n_head * ValueDim(s));
    if (gpt_oss) {  // sinks of a few units: the softmax's denominator then changes visibly
      t.push_back({p + "attn_sinks.weight", TensorType::kF32, {s.n_head}, Fill::kNormal, {}, 2.0f});
      vec(p + "attn_output.bias", s.n_embd, Fill::kNormal);
    }
    if (post_norms) vec(p + "post_attention_norm.weight", s.n_embd, norm);
    if (!olmo2) {
      vec(p + (gpt_oss || qwen35 ? "post_attention_norm.weight" : "ffn_norm.weight"), s.n_embd, norm);
    }
    if (!dense) {
      const int64_t ff = s.n_ff_expert > 0 ? s.n_ff_expert : s.n_ff;
      t.push_back({p + "ffn_gate_inp.weight",
                   TensorType::kF32,
                   {s.n_embd, s.n_expert},
                   Fill::kNormal,
                   {},
                   s.router_std});
      auto experts = [&](const std::string& name, int64_t out, int64_t in, Role role) {
        t.push_back({name, MatrixType(o, role, layer, in), {in, out, s.n_expert}, Fill::kNormal, {}});
      };
      experts(p + "ffn_gate_exps.weight", ff, s.n_embd, Role::kPlain);
      experts(p + "ffn_up_exps.weight", ff, s.n_embd, Role::kPlain);
      experts(p + "ffn_down_exps.weight", s.n_embd, ff, Role::kFfnDown);
      if (gpt_oss) {
        auto bias = [&](const std::string& name, std::vector<int64_t> dims, float stddev) {
          t.push_back({name, TensorType::kF32, std::move(dims), Fill::kNormal, {}, stddev});
        };
        bias(p + "ffn_gate_inp.bias", {s.n_expert}, s.router_std);
        bias(p + "ffn_gate_exps.bias", {ff, s.n_expert}, s.expert_bias_std);
        bias(p + "ffn_up_exps.bias", {ff, s.n_expert}, s.expert_bias_std);
        bias(p + "ffn_down_exps.bias", {s.n_embd, s.n_expert}, 0);
      }
      if (s.selection_bias_std > 0) {
        t.push_back({p + "exp_probs_b.bias",
                     TensorType::kF32,
                     {s.n_expert},
                     Fill::kNormal,
                     {},
                     s.selection_bias_std});
      }
      if (s.n_expert_shared > 0) {  // deepseek2's shared experts, one ungated FFN
        matrix(p + "ffn_gate_shexp.weight", ff * s.n_expert_shared, s.n_embd);
        matrix(p + "ffn_up_shexp.weight", ff * s.n_expert_shared, s.n_embd);
        matrix(p + "ffn_down_shexp.weight", s.n_embd, ff * s.n_expert_shared, Role::kFfnDown);
      }
      if (s.n_ff_shared > 0) {  // qwen2moe's shared expert and its gate
        vec(p + "ffn_gate_inp_shexp.weight", s.n_embd, Fill::kNormal);
        matrix(p + "ffn_gate_shexp.weight", s.n_ff_shared, s.n_embd);
        matrix(p + "ffn_up_shexp.weight", s.n_ff_shared, s.n_embd);
        matrix(p + "ffn_down_shexp.weight", s.n_embd, s.n_ff_shared, Role::kFfnDown);
      }
    } else if (fused_ffn) {
      matrix(p + "ffn_up.weight", 2 * s.n_ff, s.n_embd);
    } else {
      matrix(p + "ffn_gate.weight", s.n_ff, s.n_embd);
      matrix(p + "ffn_up.weight", s.n_ff, s.n_embd);
    }
    if (dense) matrix(p + "ffn_down.weight", s.n_embd, s.n_ff, Role::kFfnDown);
    if (post_norms) vec(p + "post_ffw_norm.weight", s.n_embd, norm);
  }
  return t;
}

Status CopyVocabulary(const std::string& path, GgufWriter& writer, int64_t* n_vocab) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status().WithContext("--vocab-from");
  bool any = false;
  for (const auto& [key, value] : (*file)->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      writer.Set(key, value);
      any = true;
    }
  }
  auto tokens = (*file)->GetStringArray("tokenizer.ggml.tokens");
  if (!any || !tokens.ok() || tokens->empty()) {
    return InvalidArgument(path + ": no tokenizer.ggml.tokens to copy (--vocab-from)");
  }
  *n_vocab = static_cast<int64_t>(tokens->size());
  return Status::Ok();
}

// deepseek2's keys (ModelShape's deepseek2 fields).
void SetDeepseek2Metadata(const ModelShape& s, GgufWriter& w) {
  const std::string& a = s.architecture;
  if (s.q_lora_rank > 0) w.Set(a + ".attention.q_lora_rank", GgufValue::Uint32(uint32_t(s.q_lora_rank)));
  w.Set(a + ".attention.kv_lora_rank", GgufValue::Uint32(uint32_t(s.kv_lora_rank)));
  w.Set(a + ".leading_dense_block_count", GgufValue::Uint32(uint32_t(s.n_layer_dense_lead)));
  w.Set(a + ".expert_shared_count", GgufValue::Uint32(uint32_t(s.n_expert_shared)));
  w.Set(a + ".expert_gating_func", GgufValue::Uint32(uint32_t(s.expert_gating)));
  w.Set(a + ".expert_weights_norm", GgufValue::Bool(s.expert_weights_norm));
  w.Set(a + ".expert_weights_scale", GgufValue::Float32(s.expert_weights_scale));
}

void SetModelMetadata(const MakeModelOptions& o, int64_t n_vocab, GgufWriter& w) {
  const ModelShape& s = o.shape;
  const std::string& a = s.architecture;  // the keys' prefix
  const std::string family = TextArchitecture(a);
  const int64_t head_dim = HeadDim(s);
  w.Set("general.architecture", GgufValue::String(a));
  // No shape in general.name: llama.cpp keys vocabulary rules on it (a "phi3" there makes it look up
  // Phi-3's </s>, which the built-in vocabulary lacks).
  w.Set("general.name", GgufValue::String("lockstep random weights"));
  w.Set("lockstep.shape", GgufValue::String(s.name));
  w.Set("general.file_type", GgufValue::Uint32(uint32_t(FileTypeOf(o))));
  w.Set("general.quantization_version", GgufValue::Uint32(2));
  w.Set(a + ".vocab_size", GgufValue::Uint32(uint32_t(n_vocab)));
  w.Set(a + ".context_length", GgufValue::Uint32(uint32_t(s.n_ctx)));
  w.Set(a + ".embedding_length", GgufValue::Uint32(uint32_t(s.n_embd)));
  w.Set(a + ".block_count", GgufValue::Uint32(uint32_t(s.n_layer)));
  w.Set(a + ".feed_forward_length", GgufValue::Uint32(uint32_t(s.n_ff)));
  w.Set(a + ".attention.head_count", GgufValue::Uint32(uint32_t(s.n_head)));
  w.Set(a + ".attention.head_count_kv", GgufValue::Uint32(uint32_t(s.n_head_kv)));
  w.Set(a + ".attention.key_length", GgufValue::Uint32(uint32_t(head_dim)));
  w.Set(a + ".attention.value_length", GgufValue::Uint32(uint32_t(ValueDim(s))));
  w.Set(a + ".attention.layer_norm_rms_epsilon", GgufValue::Float32(s.rms_eps));
  w.Set(a + ".rope.freq_base", GgufValue::Float32(s.rope_freq_base));
  w.Set(a + ".rope.dimension_count", GgufValue::Uint32(uint32_t(RopeDim(s))));
  // Phi-3 files always carry the window (0: none, Phi-4), Gemma's their own; others only when windowed.
  if (s.sliding_window > 0 || a == "phi3" || a == "gemma2" || a == "gemma3" || a == "gemma4") {
    w.Set(a + ".attention.sliding_window", GgufValue::Uint32(uint32_t(s.sliding_window)));
  }
  if (a == "granite" || a == "granitemoe") {
    w.Set(a + ".embedding_scale", GgufValue::Float32(s.granite_embedding_scale));
    w.Set(a + ".residual_scale", GgufValue::Float32(s.granite_residual_scale));
    w.Set(a + ".attention.scale", GgufValue::Float32(s.granite_attention_scale));
    w.Set(a + ".logit_scale", GgufValue::Float32(s.granite_logit_scale));
  }
  if (s.attn_temperature_scale > 0) {
    w.Set(a + ".attention.temperature_scale", GgufValue::Float32(s.attn_temperature_scale));
  }
  if (a == "gemma4") SetGemma4Metadata(s, w);  // after the common keys: replaces two with arrays
  if (a == "gemma2") {
    w.Set(a + ".attn_logit_softcapping", GgufValue::Float32(s.attn_softcap));
    w.Set(a + ".final_logit_softcapping", GgufValue::Float32(s.final_softcap));
  }
  if (s.yarn_factor > 0) {
    w.Set(a + ".rope.scaling.type", GgufValue::String("yarn"));
    w.Set(a + ".rope.scaling.factor", GgufValue::Float32(s.yarn_factor));
    w.Set(a + ".rope.scaling.original_context_length", GgufValue::Uint32(uint32_t(s.yarn_original_ctx)));
    if (s.yarn_log_mul > 0)
      w.Set(a + ".rope.scaling.yarn_log_multiplier", GgufValue::Float32(s.yarn_log_mul));
  }
  if (s.rope_linear_factor > 0) {
    w.Set(a + ".rope.scaling.type", GgufValue::String("linear"));
    w.Set(a + ".rope.scaling.factor", GgufValue::Float32(s.rope_linear_factor));
  }
  if (s.n_expert > 0) {
    w.Set(a + ".expert_count", GgufValue::Uint32(uint32_t(s.n_expert)));
    w.Set(a + ".expert_used_count", GgufValue::Uint32(uint32_t(s.n_expert_used)));
    if (family == "qwen3moe" || family == "qwen2moe" || family == "gpt-oss" || family == "deepseek2" ||
        family == "qwen35moe") {
      const int64_t ff = s.n_ff_expert > 0 ? s.n_ff_expert : s.n_ff;
      w.Set(a + ".expert_feed_forward_length", GgufValue::Uint32(uint32_t(ff)));
    }
    if (s.n_ff_shared > 0) {
      w.Set(a + ".expert_shared_feed_forward_length", GgufValue::Uint32(uint32_t(s.n_ff_shared)));
    }
  }
  if (s.kv_lora_rank > 0) SetDeepseek2Metadata(s, w);
  if (a != family) {  // a vision-language file's text: M-RoPE sections (t, h, w, unused) of the rotated pairs
    // in Qwen2-VL's proportions 16:24:24 (Qwen3-VL's interleaved 24:20:20 for qwen3vl*), and Qwen3-VL's
    // three deepstack layers, which only images reach.
    const int64_t pairs = RopeDim(s) / 2, t = family == "qwen2" ? pairs / 4 : pairs / 2;
    const std::vector<int32_t> sections = {int32_t(t), int32_t((pairs - t) / 2),
                                           int32_t(pairs - t - (pairs - t) / 2), 0};
    w.Set(a + ".rope.dimension_sections", GgufValue::Int32Array(sections));
    if (family != "qwen2") w.Set(a + ".n_deepstack_layers", GgufValue::Uint32(3));
  }
  if (a == "qwen35" ||
      a == "qwen35moe") {  // Gated DeltaNet and M-RoPE sections (t, h, w, unused) in Qwen3.5's 11:11:10
    const int64_t key_width = s.ssm_head_dim;
    w.Set(a + ".ssm.conv_kernel", GgufValue::Uint32(uint32_t(s.ssm_conv_kernel)));
    w.Set(a + ".ssm.group_count", GgufValue::Uint32(uint32_t(s.ssm_k_heads)));
    w.Set(a + ".ssm.time_step_rank", GgufValue::Uint32(uint32_t(s.ssm_v_heads)));
    w.Set(a + ".ssm.state_size", GgufValue::Uint32(uint32_t(key_width)));
    w.Set(a + ".ssm.inner_size", GgufValue::Uint32(uint32_t(s.ssm_v_heads * s.ssm_head_dim)));
    w.Set(a + ".full_attention_interval", GgufValue::Uint32(uint32_t(s.full_attention_interval)));
    const int64_t pairs = RopeDim(s) / 2, t = (pairs + 2) / 3, h = (pairs - t + 1) / 2;
    w.Set(a + ".rope.dimension_sections",
          GgufValue::Int32Array({int32_t(t), int32_t(h), int32_t(pairs - t - h), 0}));
  }
  if (a == "bert") {  // an encoder: LayerNorm epsilon, bidirectional, CLS pooling (as bge's files)
    w.Set(a + ".attention.layer_norm_epsilon", GgufValue::Float32(s.rms_eps));
    w.Set(a + ".attention.causal", GgufValue::Bool(false));
    w.Set(a + ".pooling_type", GgufValue::Uint32(2));
  }
  if (s.n_cls_out > 0) {
    w.Set(a + ".pooling_type", GgufValue::Uint32(4));  // rank
    std::vector<std::string> labels = {"yes", "no"};
    labels.resize(size_t(s.n_cls_out));
    for (size_t i = 2; i < labels.size(); ++i) labels[i] = "label" + std::to_string(i);
    w.Set("classifier.output_labels", GgufValue::StringArray(labels));
  }
  if (s.longrope_orig_ctx > 0) {
    w.Set(a + ".rope.scaling.original_context_length", GgufValue::Uint32(uint32_t(s.longrope_orig_ctx)));
    w.Set(a + ".rope.scaling.attn_factor", GgufValue::Float32(LongRopeAttnFactor(s)));
  }
}

// Fills one tensor row by row into `out` (RowBytes * rows bytes).
void GenerateTensor(const PlannedTensor& t, uint64_t seed, float stddev, std::vector<std::byte>& out) {
  const int64_t n = t.dims[0];
  int64_t rows = 1;
  for (size_t i = 1; i < t.dims.size(); ++i) rows *= t.dims[i];
  const size_t row_bytes = RowBytes(t.type, n);
  out.resize(row_bytes * size_t(rows));
  NormalStream normal(seed ^ HashName(t.name));
  std::vector<float> row(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      switch (t.fill) {
        case Fill::kOnes:
          row[i] = 1.0f;
          break;
        case Fill::kNearOne:
          row[i] = 1.0f + normal.Next(0.2f);
          break;
        case Fill::kValues:
          row[i] = t.values[i];
          break;
        case Fill::kNormal:
          row[i] = normal.Next(t.stddev > 0 ? t.stddev : stddev);
          break;
      }
    }
    QuantizeRow(t.type, row.data(), out.data() + size_t(r) * row_bytes, n);
  }
}

}  // namespace

std::string WeightTypeNames() {
  return "f32|f16|bf16|q8_0|q4_0|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k|iq4_nl|iq4_xs|mxfp4|q4_k_m|q4_k_s|q5_k_m|"
         "q5_k_s";
}

Status SetWeightTypes(const std::string& name, MakeModelOptions& options) {
  std::string lower = name;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string names = WeightTypeNames();
  if (lower.empty() || ("|" + names + "|").find("|" + lower + "|") == std::string::npos) {
    return InvalidArgument("weight type '" + name + "' is not supported; use one of " + names);
  }
  options.mix = lower == "q4_k_m"   ? KQuantMix::kQ4KM
                : lower == "q4_k_s" ? KQuantMix::kQ4KS
                : lower == "q5_k_m" ? KQuantMix::kQ5KM
                : lower == "q5_k_s" ? KQuantMix::kQ5KS
                                    : KQuantMix::kNone;
  if (options.mix != KQuantMix::kNone) {
    options.type = MixBaseType(options.mix);
    return Status::Ok();
  }
  LOCKSTEP_ASSIGN_OR_RETURN(options.type, ParseTensorType(lower));
  return Status::Ok();
}

bool UsesMoreBits(int64_t layer, int64_t n_layer) {
  const int64_t eighth = n_layer / 8;
  return layer < eighth || layer >= 7 * n_layer / 8 || (layer - eighth) % 3 == 2;
}

std::vector<std::pair<std::string, GgufValue>> BuiltinVocabulary(bool ascii_only) {
  // GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others for U+0100 onwards.
  std::vector<std::string> byte_piece(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    byte_piece[b] = s;
  }
  std::vector<std::string> tokens(byte_piece.begin(), byte_piece.begin() + (ascii_only ? 128 : 256));
  std::vector<int32_t> types(tokens.size(), 1);
  const std::string sp = byte_piece[' '];  // "Ġ"
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sp, "t"},  {"h", "e"}, {sp, "a"},  {"i", "n"}, {sp + "t", "he"}, {"e", "r"}, {"o", "n"},
      {sp, "s"},  {"e", "d"}, {"r", "e"}, {sp, "w"},  {"o", "u"},       {"a", "n"}, {"in", "g"},
      {sp, "o"},  {sp, "b"},  {"n", "d"}, {"a", "t"}, {sp, "c"},        {"i", "s"}, {sp + "a", "nd"},
      {"o", "r"}, {sp, "h"},  {"e", "n"}, {sp, "i"},  {"l", "l"},       {"a", "s"}, {sp, "f"},
  };
  std::vector<std::string> merge_lines;
  for (const auto& [l, r] : merges) {
    merge_lines.push_back(l + " " + r);
    tokens.push_back(l + r);
    types.push_back(1);
  }
  const int32_t eos = static_cast<int32_t>(tokens.size());
  tokens.push_back("<|endoftext|>");
  types.push_back(3);
  return {
      {"tokenizer.ggml.model", GgufValue::String("gpt2")},
      {"tokenizer.ggml.pre", GgufValue::String("default")},
      {"tokenizer.ggml.tokens", GgufValue::StringArray(tokens)},
      {"tokenizer.ggml.token_type", GgufValue::Int32Array(types)},
      {"tokenizer.ggml.merges", GgufValue::StringArray(merge_lines)},
      {"tokenizer.ggml.bos_token_id", GgufValue::Uint32(uint32_t(eos))},
      {"tokenizer.ggml.eos_token_id", GgufValue::Uint32(uint32_t(eos))},
      {"tokenizer.ggml.add_bos_token", GgufValue::Bool(false)},
  };
}

Status WriteRandomModel(const MakeModelOptions& o, const std::string& path) {
  const ModelShape& s = o.shape;
  if (!CanQuantize(o.type)) {
    return InvalidArgument("cannot write weights of type " + std::string(TensorTypeName(o.type)));
  }
  if (s.n_head <= 0 || (s.head_dim <= 0 && s.n_embd % s.n_head != 0) || s.n_head_kv <= 0 ||
      s.n_head % s.n_head_kv != 0 || RopeDim(s) % 2 != 0 || RopeDim(s) > HeadDim(s)) {
    return InvalidArgument("model shape '" + s.name + "' has inconsistent head counts");
  }
  if (o.mix != KQuantMix::kNone && o.type != MixBaseType(o.mix)) {
    return InvalidArgument("the K-quant mix needs type " + std::string(TensorTypeName(MixBaseType(o.mix))) +
                           ", not " + std::string(TensorTypeName(o.type)));
  }
  // K-quant rows that do not fit their 256-element blocks fall back to q5_0 / q5_1 / q8_0 / iq4_nl, which
  // must fit then (llama.cpp would go on to f16).
  const TensorType checked = IsKQuant(o.type) ? KQuantFallback(o.type) : o.type;
  const int64_t block = GetTensorTypeTraits(checked).block_elements;
  const std::string family = TextArchitecture(s.architecture);
  if (s.n_expert < 0 || (s.n_expert > 0 && (s.n_expert_used <= 0 || s.n_expert_used > s.n_expert)) ||
      ((family == "qwen3moe" || family == "qwen2moe" || family == "gpt-oss" || family == "qwen35moe") &&
       s.n_expert == 0) ||
      (family == "qwen2moe" || family == "qwen35moe") != (s.n_ff_shared > 0)) {
    return InvalidArgument("model shape '" + s.name + "' has inconsistent expert counts");
  }
  for (int64_t in :
       {s.n_embd, s.n_ff, s.n_ff_expert > 0 ? s.n_ff_expert : s.n_ff,
        s.n_ff_shared > 0 ? s.n_ff_shared : s.n_ff, s.n_head * ValueDim(s),
        s.q_lora_rank > 0 ? s.q_lora_rank : s.n_embd, s.kv_lora_rank > 0 ? s.kv_lora_rank : s.n_embd}) {
    if (in % block != 0) {
      return InvalidArgument("model shape '" + s.name + "': row length " + std::to_string(in) +
                             " is not a multiple of the " + std::string(TensorTypeName(checked)) +
                             " block (" + std::to_string(block) + ")");
    }
  }
  if (s.architecture == "bert" && o.vocab_from.empty()) {
    return InvalidArgument("model shape '" + s.name +
                           "' needs a WordPiece vocabulary: --vocab-from a bert GGUF (e.g. the test data's "
                           "vocab/ggml-vocab-bert-bge.gguf)");
  }
  GgufWriter writer;
  int64_t n_vocab = 0;
  // Architecture keys first, then the tokenizer (as llama.cpp's converter orders them).
  SetModelMetadata(o, 0, writer);
  if (o.vocab_from.empty()) {
    const auto vocabulary = BuiltinVocabulary(s.ascii_vocabulary);
    for (auto& [key, value] : vocabulary) writer.Set(key, value);
    n_vocab = static_cast<int64_t>(vocabulary[2].second.AsArray()->elements.size());
  } else {
    LOCKSTEP_RETURN_IF_ERROR(CopyVocabulary(o.vocab_from, writer, &n_vocab));
  }
  writer.Set(s.architecture + ".vocab_size", GgufValue::Uint32(uint32_t(n_vocab)));
  if (!s.rerank_template.empty()) {
    writer.Set("tokenizer.chat_template.rerank", GgufValue::String(s.rerank_template));
  }
  const std::vector<PlannedTensor> tensors = PlanTensors(o, n_vocab);
  for (const PlannedTensor& t : tensors)
    LOCKSTEP_RETURN_IF_ERROR(writer.DeclareTensor(t.name, t.type, t.dims));
  // Tensors are generated one at a time while the file is written, so memory stays small even for llama-1b.
  return writer.WriteFile(path, [&](size_t index, std::vector<std::byte>& data) {
    GenerateTensor(tensors[index], o.seed, s.weight_std, data);
    return Status::Ok();
  });
}

}  // namespace lockstep
