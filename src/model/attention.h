// Attention over one sequence's KV blocks (model/batch.h layout), the per-row part of the forward pass.
// WriteKv stores one row's K and V (all KV heads of one layer) at its position; AttendRows computes query
// heads of rows against positions [0, position] of their own sequence, reading only that sequence's blocks,
// so its cost grows with the rows' own context. Every reduction runs over positions in increasing order and
// over head dims in a fixed order: the result depends only on the row's own data (batch invariance).
// Safe to call concurrently for different (row, head) outputs (scratch is per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/batch.h"

namespace lockstep {

// k, v: [n_kv_head][head_dim] f32 for one row; written at `position` of `blocks` in `layer`.
void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v);

// Rows r = 0..rows-1 of one sequence at positions first_position + r (a prefill chunk, or one decode row),
// each with `heads` query heads that share KV head `kv_head` of `layer`: q row r, head h at q + r * q_stride
// + h * head_dim; out likewise with out_stride.
//   out[r][h] = softmax(q[r][h] · K[0..first_position + r] * scale) · V[0..first_position + r]
// Each widened KV block serves every row and head of the call, but each (row, head) result is computed in the
// same order whatever `rows` and `heads` are, so tiling rows or grouping heads never changes a value. Uses
// per-thread scratch (grown once, then reused).
void AttendRows(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
                int32_t first_position, int32_t rows, const float* q, size_t q_stride, int32_t heads,
                float scale, float* out, size_t out_stride);

}  // namespace lockstep
