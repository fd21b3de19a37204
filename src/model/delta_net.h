// DeltaNet: the Gated DeltaNet linear-attention layer of qwen35 and qwen3next (model/architectures.h), run by
// model/transformer_feed_forward.cc on the layers with LayerAttention::recurrent. For each row x (already
// RMS-normed):
//   [q | k | v] = attn_qkv x, z = attn_gate x, b = ssm_beta x, a = ssm_alpha x     (one MatMul each, all
//   rows; qwen3next: ssm_in x and ssm_ba x, taken apart per key head, DeltaNetConfig::fused_projections)
//   [q | k | v] -> causal depthwise convolution of conv_kernel taps over the sequence's latest inputs
//   (the previous conv_kernel - 1 live in the state) -> SiLU; q and k L2-normalised per key head (x /
//   max(|x|, eps)), q scaled by 1 / sqrt(head_k_dim) per value head h (query/key head h % k_heads, or h /
//   (v_heads / k_heads)): beta = sigmoid(b_h), decay = exp(ssm_a_h * softplus(a_h + ssm_dt_h)), and the delta
//   rule on its state S [head_v_dim][head_k_dim]:
//     S = decay S;  delta = beta (v - S k);  S = S + delta k^T;  o = S q
//   o -> RMSNorm per value head (ssm_norm) x SiLU(z) -> ssm_out.
// The state of a sequence (model/batch.h SequenceKv::recurrent_state) is, per recurrent layer, the conv
// window [conv_kernel - 1][ConvChannels()] (oldest first) then the matrices, each stored transposed as the
// delta rule's kernel reads it (tensor/delta_rule.h): [v_heads][head_k_dim][head_v_dim]. Batch invariance:
// each sequence's convolution and recurrence run token by token in position order, one task per (sequence,
// channel range) and per (sequence, value head), with the same float operations in the same order whatever
// the batch, the chunking of its prompt or the thread count (and the CPU level: the delta rule's kernels
// give the same bits at every level); the per-row parts are per-row. Engine thread only (reuses scratch
// buffers).
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "tensor/kernels.h"

namespace lockstep {

class ThreadPool;

class DeltaNet {
 public:
  explicit DeltaNet(const ModelConfig& config) : config_(config) {}

  // Once per Forward, before the first recurrent layer: groups the batch's rows by sequence and zeroes the
  // state of every sequence whose first row is at position 0.
  void Begin(const Batch& batch);
  // Recurrent layer number `index` (0 for the first recurrent layer, ...) with weights `w` over the batch's
  // rows: xn [rows][n_embd] normed inputs, out [rows][n_embd] the layer's output (before the residual add).
  void Forward(const Kernels& kernels, const LayerWeights& w, int64_t index, const Batch& batch,
               const float* xn, float* out, ThreadPool& pool);

 private:
  // qwen3next: qkv_, z_, beta_ and alpha_ from ssm_in and ssm_ba (DeltaNetConfig::fused_projections).
  void FusedProjections(const Kernels& kernels, const LayerWeights& w, const float* xn, int64_t rows,
                        ThreadPool& pool);

  const ModelConfig& config_;
  // Rows of each sequence that has rows in the batch, in position order: seq_rows_[seq_begin_[i] ..
  // seq_begin_[i + 1]) for sequence seq_ids_[i].
  std::vector<int32_t> seq_ids_, seq_begin_, seq_rows_;
  std::vector<float> qkv_, conv_, z_, beta_, alpha_, core_;  // [rows][width] scratch
  std::vector<float> fused_qkvz_, fused_ba_;                 // qwen3next: [rows][width] scratch
};

}  // namespace lockstep
