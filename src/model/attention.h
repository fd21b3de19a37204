// Attention over one sequence's KV blocks (model/batch.h layout), the per-row part of the forward pass.
// WriteKv stores one row's K and V (all KV heads of one layer) at its position; AttendHeads computes query
// heads of one row against positions [0, position] of its own sequence, reading only that sequence's blocks,
// so its cost grows with the row's own context. Every reduction runs over positions in increasing order and
// over head dims in a fixed order: the result depends only on the row's own data (batch invariance).
// Pure functions over caller-owned buffers; safe to call concurrently for different (row, head) outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/batch.h"

namespace lockstep {

// k, v: [n_kv_head][head_dim] f32 for one row; written at `position` of `blocks` in `layer`.
void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v);

// For `heads` query heads that share KV head `kv_head` of `layer` (q: [heads][head_dim]):
// out[h] = softmax(q[h] · K[0..position] * scale) · V[0..position]  ([heads][head_dim]).
// Each head's result is computed in the same order whatever `heads` is, so grouping heads never changes a
// value. scores: scratch of AttentionScoresFloats(heads, position) floats.
void AttendHeads(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
                 int32_t position, const float* q, int32_t heads, float scale, float* scores, float* out);
size_t AttentionScoresFloats(int32_t heads, int32_t position);

}  // namespace lockstep
