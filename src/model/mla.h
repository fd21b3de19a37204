// LatentAttention: DeepSeek's multi-head latent attention projections (ModelConfig::kv_lora_rank > 0,
// deepseek2). Per row r, as ik_llama.cpp's deepseek2 graph computes it:
//   q = attn_q . xn, or attn_q_b . RMSNorm(attn_q_a . xn) (attn_q_a_norm)   [n_head][nope | rope]
//   c = attn_kv_a_mqa . xn = [latent (kv_lora_rank) | k_rope (rope_dim)],  l = RMSNorm(latent)
//   (attn_kv_a_norm) attn_kv_b = per head h [W_kb_h (nope rows) ; W_vb_h (value_dim rows)], each row
//   kv_lora_rank wide
//     (split files, ModelConfig::kv_b_split: attn_k_b holds W_kb_h transposed, attn_v_b W_vb_h)
//   head h's output = sum_t softmax_t(q_h . k_h(t) * scale) v_h(t),  k_h = [W_kb_h l | k_rope], v_h = W_vb_h
//   l
// The absorbed form (ModelConfig::mla_latent_cache, the default): since q_nope_h . W_kb_h l = (W_kb_h^T
// q_nope_h) . l and the weighted sum of W_vb_h l is W_vb_h times the weighted sum of l, the KV cache stores
// each row's latent once, as multi-query attention (one KV head for all n_head query heads):
//   key = [k_rope | l] (rope_dim + kv_lora_rank), value = l (kv_lora_rank)
//   query of head h = [q_rope_h | W_kb_h^T q_nope_h]   (AbsorbedQueries)
//   output of head h = W_vb_h . (its attention over the values)   (AbsorbedOutputs)
// with the scale of the heads' width (model/deepseek2_config.h). The decompressed form (mla_latent_cache
// false, ModelLoadOptions::decompressed_mla) stores per head key = [k_rope | W_kb_h l] and value W_vb_h l.
// The rope dims are put first in every key and query (q . k is the same sum over other dims), so RoPE
// rotates them as it rotates the first rope_dim dims of any partially rotated head (model/rope.h); in the
// decompressed form k_rope, one per row, is copied into every head (each copy rotated the same way).
// A row's results depend only on its own input (MatMul's and MatMulGrouped's batch invariance). Scratch
// grows to the largest batch seen. Engine thread only (each Transformer owns one).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "tensor/kernels.h"
#include "tensor/matmul_grouped.h"

namespace lockstep {

class ThreadPool;

class LatentAttention {
 public:
  // The absorbed form. q [rows][n_head][rope_dim + kv_lora_rank] for xn [rows][n_embd] (q_rope not yet
  // rotated).
  void AbsorbedQueries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
                       int64_t rows, float* q, ThreadPool& pool);
  // k [rows][rope_dim + kv_lora_rank] (k_rope not yet rotated, then the normed latent) and v
  // [rows][kv_lora_rank] (the normed latent).
  void LatentKeysValues(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
                        int64_t rows, float* k, float* v, ThreadPool& pool);
  // Each head's output W_vb_h . att[r][h] for att [rows][n_head][kv_lora_rank]: [rows][n_head][value_dim]
  // (attn_output's input) in this object's scratch, valid until its next call.
  const float* AbsorbedOutputs(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                               const float* att, int64_t rows, ThreadPool& pool);

  // The decompressed form. q [rows][q_dim] for xn [rows][n_embd] (each head [rope | nope], not yet rotated).
  void Queries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
               int64_t rows, float* q, ThreadPool& pool);
  // k [rows][kv_dim] (each head [rope | nope], not yet rotated) and v [rows][v_dim] for xn [rows][n_embd].
  void KeysValues(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
                  int64_t rows, float* k, float* v, ThreadPool& pool);

 private:
  // wide_ = the queries as projected, [rows][n_head][nope | rope].
  void ProjectQueries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
                      int64_t rows, ThreadPool& pool);
  // Per head h (ws[h]: [out][in]) in one MatMulGrouped: y[r][h] = ws[h] . x[r][h], head h of row r at
  // x + r * x_row + h * x_head (in floats) and y + r * y_row + h * y_head (out floats).
  void PerHead(const Kernels& kernels, const std::vector<WeightMatrix>& ws, const float* x, int64_t x_row,
               int64_t x_head, int64_t rows, float* y, int64_t y_row, int64_t y_head, ThreadPool& pool);

  std::vector<float> compressed_;  // [rows][q_lora_rank] or [rows][kv_lora_rank + rope_dim]
  std::vector<float> latent_;      // [rows][kv_lora_rank], normed
  std::vector<float> wide_;        // [rows][q_dim] or [rows][n_head * (nope + value_dim)] or [rows][att_dim]
  std::vector<float> heads_in_, heads_out_;  // PerHead's [n_head][rows][in], [n_head][rows][out]
  std::vector<MatMulGroup> groups_;
  std::vector<float*> ys_;
};

}  // namespace lockstep
