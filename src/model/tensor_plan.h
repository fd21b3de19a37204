// TensorPlan (internal to make-model, model/model_builder.cc): the list of tensors a random-weight file
// holds, in file order, with each one's type, dims and fill. PlanTensors (model/tensor_plan.cc) plans the
// llama-like decoders; the families with tensors of their own are planned by the functions below
// (model/tensor_plan_families.cc): bert, gemma4, qwen35's Gated DeltaNet layers and deepseek2's latent
// attention. Matrix types follow MatrixType (the K-quant mixes' per-role choices and their fallbacks for rows
// that do not fit 256-element blocks). Pure functions; safe from any thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/tensor_type.h"
#include "model/model_builder.h"

namespace lockstep {

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

// FNV-1a of a tensor's name: each tensor's random stream is seeded with seed ^ HashName(name).
inline uint64_t HashName(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

inline int64_t HeadDim(const ModelShape& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }
inline int64_t ValueDim(const ModelShape& s) { return s.value_dim > 0 ? s.value_dim : HeadDim(s); }
inline int64_t RopeDim(const ModelShape& s) { return s.rope_dim > 0 ? s.rope_dim : HeadDim(s); }

// kKvBKeys / kKvBValues: a split attn_kv_b's halves (PlannedTensor::kv_b).
enum class Fill { kNormal, kOnes, kNearOne, kValues, kKvBKeys, kKvBValues };

// The attn_kv_b a split tensor comes from: its name (whose random stream it draws, so that the split file
// holds the fused file's weights) and its heads' k_nope and value widths.
struct KvBSource {
  std::string name;
  int64_t nope = 0;
  int64_t value = 0;
};

struct PlannedTensor {
  std::string name;
  TensorType type;
  std::vector<int64_t> dims;
  Fill fill = Fill::kNormal;
  std::vector<float> values;  // Fill::kValues
  float stddev = 0;           // Fill::kNormal: 0 = the shape's weight_std
  KvBSource kv_b{};           // Fill::kKvBKeys and kKvBValues
  size_t bytes() const {
    int64_t rows = 1;
    for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
    return RowBytes(type, dims[0]) * size_t(rows);
  }
};

// Which matrix a 2-D tensor is, for the K-quant mixes (kAttnV: attn_v, or phi3's fused attn_qkv).
enum class Role { kPlain, kOutput, kAttnV, kFfnDown };

// The 256-element block types (K-quants and IQ4_XS).
bool IsKQuant(TensorType type);
// llama.cpp's fallback for K-quant rows that are not a multiple of 256 (llama_tensor_get_type): Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K, Q3_K and IQ4_XS -> IQ4_NL (all 32-element blocks).
TensorType KQuantFallback(TensorType type);
// A mix's base type (q4_k or q5_k), or kF32 for none.
TensorType MixBaseType(KQuantMix mix);
// The type of a matrix of rows of `in` elements in `layer` (MakeModelOptions::type and ::mix).
TensorType MatrixType(const MakeModelOptions& o, Role role, int64_t layer, int64_t in);

// The planned tensors, appended in file order by the helpers below; `layer` is the layer whose matrices
// MatrixType types (set it before planning a layer's tensors).
class TensorPlan {
 public:
  explicit TensorPlan(const MakeModelOptions& o) : o_(o) {}
  const ModelShape& shape() const { return o_.shape; }
  // The norms' fill: 1, or near 1 with ModelShape::random_norms.
  Fill NormFill() const { return o_.shape.random_norms ? Fill::kNearOne : Fill::kOnes; }

  // A matrix [out][in] (GGUF dims [in, out]) of MatrixType's type.
  void Matrix(const std::string& name, int64_t out, int64_t in, Role role = Role::kPlain) {
    tensors.push_back({name, MatrixType(o_, role, layer, in), {in, out}, Fill::kNormal, {}});
  }
  // A 3-D tensor of n_expert matrices [out][in] (GGUF dims [in, out, n_expert]).
  void Experts(const std::string& name, int64_t out, int64_t in, int64_t n_expert, Role role) {
    tensors.push_back({name, MatrixType(o_, role, layer, in), {in, out, n_expert}, Fill::kNormal, {}});
  }
  // An F32 tensor; stddev 0: the shape's weight_std.
  void F32(const std::string& name, std::vector<int64_t> dims, Fill fill, float stddev = 0) {
    tensors.push_back({name, TensorType::kF32, std::move(dims), fill, {}, stddev});
  }
  void Vec(const std::string& name, int64_t n, Fill fill) { F32(name, {n}, fill); }
  // attn_kv_b's keys part transposed (attn_k_b, dims [nope, rank, n_head]) or its values part (attn_v_b,
  // [rank, value, n_head]): `fill` kKvBKeys or kKvBValues.
  void KvBPart(const std::string& name, std::vector<int64_t> dims, Fill fill, KvBSource source) {
    const TensorType type = MatrixType(o_, Role::kPlain, layer, dims[0]);
    tensors.push_back({name, type, std::move(dims), fill, {}, 0, std::move(source)});
  }
  void Values(const std::string& name, std::vector<float> v) {
    tensors.push_back({name, TensorType::kF32, {int64_t(v.size())}, Fill::kValues, std::move(v)});
  }

  int64_t layer = 0;
  std::vector<PlannedTensor> tensors;

 private:
  const MakeModelOptions& o_;
};

// Every tensor of the file for `o.shape` with a vocabulary of n_vocab tokens, in file order.
std::vector<PlannedTensor> PlanTensors(const MakeModelOptions& o, int64_t n_vocab);

// The families' plans (model/tensor_plan_families.cc).
// bert (llama.cpp's names and shapes for it): the whole file.
std::vector<PlannedTensor> PlanBertTensors(const MakeModelOptions& o, int64_t n_vocab);
// Gemma 4 (model/gemma4.h): the whole file, and its layer plan (ModelShape's gemma4 fields), which
// SetGemma4Metadata writes.
std::vector<PlannedTensor> PlanGemma4Tensors(const MakeModelOptions& o, int64_t n_vocab);
bool Gemma4Global(const ModelShape& s, int64_t layer);
// deci (ModelShape's layer_heads, layer_kv_heads, layer_ff): the whole file.
std::vector<PlannedTensor> PlanDeciTensors(const MakeModelOptions& o, int64_t n_vocab);
bool Gemma4Shared(const ModelShape& s, int64_t layer);
int64_t Gemma4Ff(const ModelShape& s, int64_t layer);
// qwen35: a Gated DeltaNet layer's tensors (prefix p = "blk.N.").
void PlanDeltaNetLayer(const std::string& p, TensorPlan& plan);
// deepseek2: a layer's latent attention tensors but attn_output (prefix p = "blk.N."); attn_kv_b split into
// attn_k_b and attn_v_b with ModelShape::split_kv_b.
void PlanLatentAttention(const std::string& p, TensorPlan& plan);

}  // namespace lockstep
