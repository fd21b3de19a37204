// Attention over one sequence's KV blocks (model/batch.h layout), the per-row part of the forward pass.
// WriteKv stores one row's K and V (all KV heads of one layer) at its position; AttendRows computes query
// heads of rows against positions [0, position] of their own sequence, reading only that sequence's blocks,
// so its cost grows with the rows' own context. Every reduction runs over positions in increasing order and
// over head dims in a fixed order: the result depends only on the row's own data (batch invariance). The
// kernels come from the caller's table (tensor/kernels.h); scratch from the caller (the thread pool's
// arenas), sized by the *ScratchBytes functions. Safe to call concurrently for different (row, head) outputs
// with different scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/batch.h"
#include "tensor/kernels.h"

namespace lockstep {

// k: [n_kv_head][head_dim], v: [n_kv_head][ValueDim()] f32 for one row; written at `position` of `blocks` in
// `layer`.
void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v);

// Long contexts are attended in parts of kAttentionPart positions ([0, 256), [256, 512), ...): each part's
// softmax and values on their own, then the parts merged (attention::PartitionWeights). A row's result
// depends only on its own position and data; a row of one part is the plain softmax. One row's parts can run
// on different threads (flash-decoding: AttendRowPart, MergeRowParts) and give the same bits.
inline constexpr int32_t kAttentionPart = 256;
// Parts of a row at `position` (it attends to positions [0, position]).
inline int32_t AttentionParts(int32_t position) { return position / kAttentionPart + 1; }

// What a layer's attention does beyond softmax(q·k * scale)·v (model/model_config.h LayerAttention).
struct AttentionRule {
  // Sliding window: a row at position p attends to positions [Lo(p), p], Lo(p) = max(0, p - window + 1)
  // (llama.cpp's mask: p - key position < window); 0: [0, p].
  int32_t window = 0;
  // Gemma 2's attention logit soft-capping: each score s (after the scale) becomes
  // softcap * tanh(s / softcap) before the softmax; 0: none.
  float softcap = 0;
  // Attention sinks (gpt-oss): one learned logit per query head of the call (sinks[h] for head h), which
  // joins the softmax's denominator as a score without a value: out[h] *= L / (L + e^(sinks[h] - M)), M the
  // largest score and L the sum of e^(s - M) over the row's positions (ApplySinks). nullptr: none.
  const float* sinks = nullptr;
  // ALiBi (bloom): one slope per query head of the call (alibi_slopes[h]); the score of the key at position
  // t from the row at position p becomes fma(slope_h, t - p, score) (after the scale, before the softmax).
  // nullptr: none.
  const float* alibi_slopes = nullptr;
};

// The sinks' rescaling of `heads` outputs (out + h * head_dim), each a softmax over `parts` parts (head h's
// stats at stats + h * stride + p) times the values: M = the largest part max, L = the sum over p in order of
// fma(e^(max_p - M), sum_p, L) (parts whose max is -inf left out), then every element times
// L / (L + e^(sinks[h] - M)) (exp: tensor/activations.h's ExpPolynomial, the same bits on every CPU).
void ApplySinks(const float* sinks, const attention::SoftmaxStats* stats, size_t stride, int32_t parts,
                int32_t heads, int32_t head_dim, float* out);

// The first position a row at `position` reads under `window`: Lo(position) rounded down to a multiple of
// both 16 (a key group) and block_tokens, so that whole blocks are read; the positions in [start, Lo) get
// weight exactly 0. 0 without a window. Blocks wholly below it are never read (they may be released).
int32_t AttentionStart(const KvLayout& kv, int32_t position, int32_t window);

// Rows r = 0..rows-1 of one sequence at positions first_position + r (a prefill chunk, or one decode row),
// each with `heads` query heads that share KV head `kv_head` of `layer`: q row r, head h at q + r * q_stride
// + h * head_dim; out likewise with out_stride, head h at h * ValueDim() (values may be narrower than keys).
//   out[r][h] = softmax(cap(q[r][h] · K[Lo..p] * scale)) · V[Lo..p],  p = first_position + r
// (Lo and cap from `rule`). Each widened KV block serves every row and head of the call, but each (row,
// head) result is computed in the same order whatever `rows` and `heads` are, so tiling rows or grouping
// heads never changes a value: under a window, a row's softmax starts at its own AttentionStart and the
// positions before its Lo get weight exactly 0 (adding +0 to +0 sums). Reads no block below
// AttentionStart(first_position).
// scratch: AttendRowsScratchBytes(k, kv, first_position, rows, heads, rule) bytes, 64-byte aligned.
void AttendRows(const AttentionKernels& k, const KvLayout& kv, const std::vector<std::byte*>& blocks,
                int32_t layer, int32_t kv_head, int32_t first_position, int32_t rows, const float* q,
                size_t q_stride, int32_t heads, float scale, float* out, size_t out_stride,
                std::byte* scratch, const AttentionRule& rule = {});
size_t AttendRowsScratchBytes(const AttentionKernels& k, const KvLayout& kv, int32_t first_position,
                              int32_t rows, int32_t heads, const AttentionRule& rule = {});

// One row's parts on separate threads: whether AttendRowPart runs for this layout, number of heads (the
// shapes attention::CanAttendDecodeRow takes at k's level) and rule (the decode-row kernels know no window
// or cap: such rows take AttendRows' general path, whatever their number; sinks apply after the merge).
bool CanSplitRow(const AttentionKernels& k, const KvLayout& kv, int32_t heads,
                 const AttentionRule& rule = {});
// Part `part` of AttendRows for one row at `position`: query head h's output within the part (normalised by
// the part's own softmax sum) to partials + (h * parts + part) * ValueDim(), its softmax max and sum to
// stats[h * parts + part], where parts = AttentionParts(position). scratch: AttendRowPartScratchBytes(heads).
void AttendRowPart(const AttentionKernels& k, const KvLayout& kv, const std::vector<std::byte*>& blocks,
                   int32_t layer, int32_t kv_head, int32_t position, int32_t part, const float* q,
                   int32_t heads, float scale, float* partials, attention::SoftmaxStats* stats,
                   std::byte* scratch);
size_t AttendRowPartScratchBytes(int32_t heads);
// The row's attention from all its parts (as written by AttendRowPart): head h to out + h * ValueDim(), the
// bits AttendRows gives (with the rule's `sinks`, per head of the call, when not null).
// scratch: MergeRowPartsScratchBytes(position, heads).
void MergeRowParts(const AttentionKernels& k, const KvLayout& kv, int32_t position, int32_t heads,
                   const float* partials, const attention::SoftmaxStats* stats, float* out,
                   std::byte* scratch, const float* sinks = nullptr);
size_t MergeRowPartsScratchBytes(int32_t position, int32_t heads);

}  // namespace lockstep
