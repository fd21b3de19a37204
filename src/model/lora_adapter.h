// LoraAdapter: a GGUF LoRA adapter, as llama.cpp's convert_lora_to_gguf.py writes it, checked against the
// model it adapts; LoraApplier: its application in the forward pass, with a scale of its own for every row.
//
// File: general.type = "adapter", adapter.type = "lora", general.architecture = the model's,
// adapter.lora.alpha (f32; absent reads as 0). For a base matrix W named N (GGUF dims [in, out]: out rows of
// `in` elements) the pair N.lora_a, dims [in, rank] (rank rows of `in`), and N.lora_b, dims [rank, out]:
//   y = W·x + s · B·(A·x),   s = scale × alpha / rank   (scale itself when alpha is 0; rank = lora_b dims[0])
// exactly llama.cpp's and ik_llama.cpp's rule (llama_adapter_lora_weight::get_scale, llm_build_lora_mm).
// Adaptable: blk.L.attn_q/attn_k/attn_v/attn_output/ffn_gate/ffn_up/ffn_down.weight and output.weight (an
// untied output matrix). Tensors ending in "_norm.weight" are skipped, as llama.cpp skips them. Pairs are
// F32, F16 or BF16 (converted to F32 at load); quantized pairs, any other name (a fused attn_qkv, token_embd,
// MoE experts), a missing half of a pair, a rank that differs between a and b or a shape that differs from
// the base matrix are refused with an error naming the file and the tensor.
//
// Application (LoraApplier::Apply): for each adapter in order, the rows whose scale for it is not 0 are
// gathered, multiplied by A (rank-r intermediate) and B with the batch-invariant F32 MatMul, and s · B·A·x is
// added to each row's output. A row's result depends only on its own input and scales, so rows with
// different scales share a step and each gets what it would get alone; a row with every scale 0 is not
// touched at all (bit-identical to no adapter).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/batch.h"
#include "model/model_config.h"
#include "tensor/matmul.h"

namespace lockstep {

class ThreadPool;

enum class LoraTarget : int32_t { kQ, kK, kV, kO, kGate, kUp, kDown, kOutput };
inline constexpr int32_t kLoraLayerTargets = 7;  // kQ..kDown, per layer

// One adapted matrix: A = lora_a, B = lora_b, in f32.
struct LoraMatrices {
  int64_t in = 0, out = 0, rank = 0;  // rank 0: not adapted
  std::vector<float> a;               // [rank][in]
  std::vector<float> b;               // [out][rank]
  WeightMatrix A() const {
    return {TensorType::kF32, in, rank, reinterpret_cast<const std::byte*>(a.data())};
  }
  WeightMatrix B() const {
    return {TensorType::kF32, rank, out, reinterpret_cast<const std::byte*>(b.data())};
  }
};

// Immutable after Load; safe to share between threads.
class LoraAdapter {
 public:
  // Reads the adapter at `path` and checks it against `model` (the base model's file) and its config.
  static Result<LoraAdapter> Load(const std::string& path, const GgufFile& model, const ModelConfig& config);
  // The same for an adapter already open (`adapter.path()` names it in errors).
  static Result<LoraAdapter> FromGguf(const GgufFile& adapter, const GgufFile& model,
                                      const ModelConfig& config);

  const std::string& path() const { return path_; }
  float alpha() const { return alpha_; }
  int64_t adapted() const { return adapted_; }  // matrices with a pair
  // Layer `layer`'s matrix `target` (layer ignored for kOutput); null when the adapter leaves it alone.
  const LoraMatrices* Find(int32_t layer, LoraTarget target) const;
  // s = scale × alpha / rank, or scale when alpha is 0.
  float EffectiveScale(float scale, const LoraMatrices& m) const {
    return alpha_ != 0 ? scale * alpha_ / float(m.rank) : scale;
  }

 private:
  std::string path_;
  float alpha_ = 0;
  int64_t adapted_ = 0;
  int32_t n_layer_ = 0;
  std::vector<LoraMatrices> matrices_;  // [n_layer * kLoraLayerTargets + 1]: layer-major, output last
};

// The adaptable base tensor name of (layer, target): "blk.3.attn_q.weight", "output.weight".
std::string LoraBaseTensorName(int32_t layer, LoraTarget target);

// Per Forward call scratch and row scales. Engine thread only (owned by the Transformer).
class LoraApplier {
 public:
  LoraApplier();
  ~LoraApplier();
  // Reads the user scale of every batch row for every adapter from its sequence (SequenceKv::lora_scales;
  // missing entries are 0). InvalidArgument for a sequence with more scales than adapters or a non-finite
  // scale.
  Status Begin(std::span<const LoraAdapter> adapters, const Batch& batch);
  // Some row has a non-zero scale (else Apply does nothing).
  bool active() const { return active_; }
  int64_t batch_rows() const { return batch_rows_; }
  // y[j] += Σ_k s_k · B_k·(A_k·x[j]) over the adapters k adapting (layer, target), for scratch rows j in
  // [0, rows) holding batch rows row_map[j] (j itself when row_map is null). x: [rows][in], y: [rows][out].
  // kOutput: the rows are the batch's logit rows in order (row_map ignored).
  void Apply(int32_t layer, LoraTarget target, const float* x, int64_t rows, const int64_t* row_map, float* y,
             const MatMulKernels& kernels, ThreadPool& pool);

 private:
  std::span<const LoraAdapter> adapters_;
  bool active_ = false;
  int64_t batch_rows_ = 0;
  std::vector<float> scales_;        // [batch rows][adapters]
  std::vector<int64_t> logit_rows_;  // batch rows that want logits, in order
  std::vector<int64_t> selected_;    // scratch rows with a non-zero scale for the current adapter
  std::vector<float> x_, t_, u_;     // gathered input [m][in], A·x [m][rank], B·A·x [m][out]
  // Small products (decode rows) run on the calling thread: a pool round trip costs more than the work, and
  // MatMul's result does not depend on the pool (tensor/matmul.h).
  std::unique_ptr<ThreadPool> inline_pool_;
};

}  // namespace lockstep
