// LatentAttention: DeepSeek's multi-head latent attention projections (ModelConfig::kv_lora_rank > 0,
// deepseek2), in the straightforward form: each row's latent is decompressed into per-head keys and values,
// which the paged KV cache stores like any other attention's (keys of head_dim, values of value_dim dims),
// so model/attention.h attends to them unchanged. Per row r, as ik_llama.cpp's deepseek2 graph without its
// -mla options computes it:
//   q = attn_q . xn, or attn_q_b . RMSNorm(attn_q_a . xn) (attn_q_a_norm)   [n_head][nope | rope]
//   c = attn_kv_a_mqa . xn = [latent (kv_lora_rank) | k_rope (rope_dim)]
//   kv = attn_kv_b . RMSNorm(latent) (attn_kv_a_norm)                       [n_head][k_nope | v]
//     (split files, ModelConfig::kv_b_split: k_nope = attn_k_b transposed . RMSNorm(latent) and v = attn_v_b
//     . RMSNorm(latent), the same rows' products: model/model_weights.h)
//   key of head h = [k_rope | k_nope_h], value = v_h; query of head h = [q_rope_h | q_nope_h]
// The rope dims are put first in each head of the query and the key (q . k is the same sum over other
// dims), so RoPE rotates them as it rotates the first rope_dim dims of any partially rotated head
// (model/rope.h), and k_rope, one per row, is copied into every head before it (each copy rotated the same
// way). A row's results depend only on its own input (MatMul's batch invariance). Scratch grows to the
// largest batch seen. Engine thread only (each Transformer owns one).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "tensor/kernels.h"

namespace lockstep {

class ThreadPool;

class LatentAttention {
 public:
  // q [rows][q_dim] for xn [rows][n_embd] (each head [rope | nope], not yet rotated).
  void Queries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
               int64_t rows, float* q, ThreadPool& pool);
  // k [rows][kv_dim] (each head [rope | nope], not yet rotated) and v [rows][v_dim] for xn [rows][n_embd].
  void KeysValues(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w, const float* xn,
                  int64_t rows, float* k, float* v, ThreadPool& pool);

 private:
  std::vector<float> compressed_;  // [rows][q_lora_rank] or [rows][kv_lora_rank + rope_dim]
  std::vector<float> latent_;      // [rows][kv_lora_rank], normed
  std::vector<float> wide_;        // [rows][q_dim] or [rows][n_head * (nope + value_dim)]
};

}  // namespace lockstep
