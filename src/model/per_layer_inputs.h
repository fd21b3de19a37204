// PerLayerInputs: Gemma 4's per-layer token inputs (E2B / E4B: <arch>.embedding_length_per_layer_input =
// n_epl > 0), as llama.cpp's gemma4 graph computes them. Once per forward pass, for each row:
//   inputs = (RMSNorm(per_layer_model_proj . x) + per_layer_token_embd[token] * sqrt(n_epl)) / sqrt(2)
// (x the scaled token embedding; the norm per layer's n_epl slice with per_layer_proj_norm and eps
// rms_eps * n_embd, which stands for transformers' n_embd^-1/2 scale before it); then after each layer's
// FFN: x += RMSNorm(proj . (GELU(inp_gate . x) * inputs[layer]), post_norm). Each row's result depends only
// on its own data. Engine thread only (one per Transformer); scratch reused across calls.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "tensor/kernels.h"
#include "tensor/thread_pool.h"

namespace lockstep {

class PerLayerInputs {
 public:
  // x: the batch's scaled token embeddings [rows][n_embd].
  void Compute(const Kernels& k, const ModelConfig& c, const ModelWeights& w, const Batch& batch,
               const float* x, ThreadPool& pool);
  // After `layer`'s FFN: x [rows][n_embd], scratch row j holding batch row rows_of[j] (nullptr: j).
  void Apply(const Kernels& k, const ModelConfig& c, const LayerWeights& lw, int32_t layer, float* x,
             int64_t rows, const int64_t* rows_of, ThreadPool& pool);

 private:
  std::vector<float> inputs_;  // [batch rows][n_layer * n_epl]
  std::vector<float> raw_;     // one row of per_layer_token_embd
  std::vector<float> gate_;    // [rows][n_epl]
  std::vector<float> proj_;    // [rows][n_embd]
};

}  // namespace lockstep
