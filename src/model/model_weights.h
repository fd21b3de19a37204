// ModelWeights: the tensors of a model, checked against its ModelConfig and bound to the GGUF mapping, with
// llama.cpp's tensor names (blk.N.attn_q, ..., attn_q_norm, post_attention_norm, post_ffw_norm). Matrices
// are borrowed views (WeightMatrix) into the GgufFile's data; a fused matrix (phi3's attn_qkv [q|k|v] and
// ffn_up [gate|up], gate rows first) is bound as views of its row ranges, so the forward pass never sees
// the fusion. 1-D tensors (norms, biases) are dequantized once into owned f32 vectors. Bind() checks every
// tensor's presence, shape and type and reports ALL problems in one error, then repacks every matrix whose
// type has packed int8 GEMM kernels (tensor/matmul.h PackWeights) and points its WeightMatrix::packed at the
// copy, which ModelWeights owns (an expert's slice of a 3-D tensor is packed as a matrix of its own; heap
// objects: the pointers stay valid when ModelWeights is moved). Move-only; immutable after Bind(); the
// GgufFile must outlive it.
#pragma once

#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "tensor/matmul.h"

namespace lockstep {

struct LayerWeights {
  std::vector<float> attn_norm;    // [n_embd]; empty without pre-norms (olmo2)
  std::vector<float> attn_norm_b;  // ModelConfig::norm_bias only (stablelm): [n_embd]; ffn_norm_b likewise
  std::vector<float> ffn_norm_b;
  WeightMatrix wq;                // [n_head * head_dim][n_embd]
  WeightMatrix wk;                // [n_head_kv * head_dim][n_embd]
  WeightMatrix wv;                // [n_head_kv * head_dim][n_embd]
  std::vector<float> bq, bk, bv;  // qkv_bias only: [q_dim], [kv_dim], [kv_dim]
  std::vector<float> sinks;       // attn_sinks only (gpt-oss): [n_head]
  std::vector<float> q_norm;      // qk_norm only: [head_dim] (olmo2: [q_dim], k_norm [kv_dim])
  std::vector<float> k_norm;      // qk_norm only: [head_dim]
  WeightMatrix wo;                // [n_embd][n_head * value_dim]
  // Multi-head latent attention only (deepseek2, ModelConfig::kv_lora_rank > 0; then wk and wv are empty, and
  // wq is attn_q or empty with q_lora_rank): attn_q_a [q_lora_rank][n_embd], attn_q_a_norm [q_lora_rank],
  // attn_q_b [n_head * head_dim][q_lora_rank]; attn_kv_a_mqa [kv_lora_rank + rope_dim][n_embd],
  // attn_kv_a_norm [kv_lora_rank], attn_kv_b [n_head * (head_dim - rope_dim + value_dim)][kv_lora_rank]
  // (each head's k_nope rows, then its value rows). ModelConfig::kv_b_split: wkv_b is empty, wk_b its k_nope
  // rows [n_head * (head_dim - rope_dim)][kv_lora_rank] (attn_k_b transposed, owned: ModelWeights::owned)
  // and wv_b its value rows [n_head * value_dim][kv_lora_rank] (attn_v_b, a view).
  // ModelConfig::mla_latent_cache (the absorbed form; then wkv_b, wk_b and wv_b are empty), per head h:
  // k_b_heads[h] [kv_lora_rank][head_dim - rope_dim], its k_nope rows transposed (attn_k_b's head h as the
  // file stores it, a view; or attn_kv_b's rows transposed, owned), and v_b_heads[h]
  // [value_dim][kv_lora_rank], its value rows (views of attn_v_b or attn_kv_b).
  WeightMatrix wq_a, wq_b, wkv_a, wkv_b, wk_b, wv_b;
  std::vector<WeightMatrix> k_b_heads, v_b_heads;
  std::vector<float> q_a_norm, kv_a_norm;
  std::vector<float> post_attn_norm;  // post_norms only: [n_embd]
  std::vector<float> ffn_norm;        // [n_embd]; empty without pre-norms (olmo2)
  // The dense FFN, or the shared expert of qwen2moe and deepseek2 (ffn_{gate,up,down}_shexp, n_ff_shared for
  // n_ff).
  WeightMatrix w_gate;               // [n_ff][n_embd]
  WeightMatrix w_up;                 // [n_ff][n_embd]
  WeightMatrix w_down;               // [n_embd][n_ff]
  std::vector<float> post_ffn_norm;  // post_norms only: [n_embd]
  // bert only (model/bert_encoder.h): post_attn_norm / post_ffn_norm are attn_output_norm /
  // layer_output_norm, LayerNorms with these biases; bo, b_up, b_down the biases of wo, w_up, w_down (w_gate
  // is empty). bo also for attn_output_bias (gpt-oss, phi2); b_up and b_down also for the ungated FFN (phi2,
  // starcoder2), and with b_gate for the gated FFN with biases (jais).
  std::vector<float> post_attn_norm_b, post_ffn_norm_b;  // [n_embd]
  std::vector<float> bo, b_up, b_down;                   // [n_embd], [n_ff], [n_embd]
  std::vector<float> b_gate;                             // [n_ff]
  // Mixture of experts only (ModelConfig::n_expert > 0; then w_gate, w_up and w_down are empty): the router
  // and each expert's matrices, views of expert e's slice of the 3-D tensors ffn_{gate,up,down}_exps
  // (GGUF dims [n_embd, n_ff_expert, n_expert] and [n_ff_expert, n_embd, n_expert]).
  WeightMatrix router;  // ffn_gate_inp: [n_expert][n_embd]
  // expert_biases only (gpt-oss): the router's [n_expert], and the experts' [n_expert][n_ff_expert] (gate,
  // up) and [n_expert][n_embd] (down).
  std::vector<float> router_b, expert_gate_b, expert_up_b, expert_down_b;
  // expert_selection_bias only (deepseek2's exp_probs_b): [n_expert], added to the scores that choose.
  std::vector<float> selection_bias;
  std::vector<WeightMatrix> expert_gate;  // [n_expert] x [n_ff_expert][n_embd]
  std::vector<WeightMatrix> expert_up;    // [n_expert] x [n_ff_expert][n_embd]
  std::vector<WeightMatrix> expert_down;  // [n_expert] x [n_embd][n_ff_expert]
  // Gemma 4's experts (ModelConfig::dense_beside_experts; w_gate / w_up / w_down are then the dense FFN
  // beside them, from ffn_gate / ffn_up / ffn_down): the router reads RMSNorm(x) with router_input_scale
  // (ffn_gate_inp.scale / sqrt(n_embd)) [n_embd] as its weight; expert e's weight is times expert_scale[e]
  // (ffn_down_exps.scale [n_expert]; empty: 1); pre_ffw_norm_2 (the experts' input), post_ffw_norm_1 (the
  // dense output), post_ffw_norm_2 (the experts' output), each [n_embd].
  std::vector<float> router_input_scale, expert_scale;
  std::vector<float> pre_ffn_norm_2, post_ffn_norm_1, post_ffn_norm_2;
  // qwen2moe: ffn_gate_inp_shexp, the shared expert's gate (GGUF dims [n_embd] or [n_embd, 1]: llama.cpp
  // reads both).
  WeightMatrix shared_gate;  // [1][n_embd]
  // Gemma 4: layer_output_scale [1] (empty: none); with per-layer token inputs (n_embd_per_layer > 0)
  // inp_gate [n_embd_per_layer][n_embd], proj [n_embd][n_embd_per_layer] and post_norm [n_embd].
  // Its shared-KV layers have no wk / wv / k_norm; wv is empty where V is K's projection.
  std::vector<float> out_scale;
  WeightMatrix pl_gate, pl_proj;
  std::vector<float> pl_post_norm;
  // qwen35's recurrent layers (LayerAttention::recurrent; then the attention fields are empty), Gated
  // DeltaNet (model/delta_net.h): attn_qkv [q | k | v: ConvChannels()][n_embd], attn_gate (z)
  // [value_dim][n_embd], ssm_beta and ssm_alpha [v_heads][n_embd], ssm_out [n_embd][value_dim]; ssm_conv1d
  // [ConvChannels()][conv_kernel], ssm_a [v_heads] (-exp(A_log)), ssm_dt.bias [v_heads], ssm_norm
  // [head_v_dim]. qwen3next (DeltaNetConfig::fused_projections) has instead of the first four ssm_in
  // [ConvChannels() + value_dim][n_embd] and ssm_ba [2 v_heads][n_embd], their rows grouped per key head.
  WeightMatrix dn_qkv, dn_z, dn_beta, dn_alpha, dn_qkvz, dn_ba, dn_out;
  std::vector<float> dn_conv, dn_a, dn_dt_bias, dn_norm;
};

struct ModelWeights {
  const GgufTensorInfo* token_embd = nullptr;  // [n_vocab][n_embd], rows dequantized on lookup
  std::vector<float> output_norm;              // [n_embd]
  std::vector<float> output_norm_b;            // ModelConfig::norm_bias only (stablelm, phi2): [n_embd]
  std::vector<float> output_b;                 // ModelConfig::output_bias only (phi2): [n_vocab]
  WeightMatrix output;                         // [n_vocab][n_embd] (token_embd when tied)
  bool tied_output = false;
  // bert (no output norm, no output matrix) and ModelConfig::learned_positions (gpt2, starcoder):
  // position_embd [n_ctx_train][n_embd]; bert only: row 0 of token_types [n_embd] (every token is of type 0,
  // "sentence A", as llama.cpp runs it); bert and ModelConfig::embedding_norm (bloom): token_embd_norm
  // weight and bias.
  std::vector<float> position_embd, token_type0, embd_norm, embd_norm_b;
  std::vector<LayerWeights> layers;
  // Gemma 4's per-layer token inputs: per_layer_token_embd [n_vocab][n_layer * n_embd_per_layer] (rows
  // dequantized on lookup), per_layer_model_proj [n_layer * n_embd_per_layer][n_embd], per_layer_proj_norm.
  const GgufTensorInfo* per_layer_embd = nullptr;
  WeightMatrix per_layer_model_proj;
  std::vector<float> per_layer_proj_norm;
  std::vector<PackedWeightsPtr> packed;  // owns what the matrices' `packed` fields point at
  // Matrices rebuilt at load (LayerWeights::wk_b, or k_b_heads from attn_kv_b), one buffer per layer
  // (moving ModelWeights keeps them).
  std::vector<std::vector<std::byte>> owned;

  // pack_threads: how many threads repack the matrices (0: one per hardware thread, capped at 8; negative:
  // do not repack).
  static Result<ModelWeights> Bind(const GgufFile& file, const ModelConfig& config, int pack_threads = 0);

 private:
  void PackMatrices(int threads);
  static Result<ModelWeights> BindBert(const GgufFile& file, const ModelConfig& config, int pack_threads);
};

}  // namespace lockstep
