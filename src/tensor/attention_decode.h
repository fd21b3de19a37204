// One decode row's attention read straight from its sequence's stored KV blocks (f16, f32 or q8_0), without
// the widened copy the general path (tensor/attention_kernels.h) makes: for a single row, widening each block
// cost more than the few dot products it fed, so long-context decode ran well below the memory bandwidth.
// Keys are stored dim-major (model/batch.h), so 16 positions of one dim are 16 consecutive elements: exactly
// a widened key group's row, converted in registers (q8_0: quants times their scales, exact as in the
// widening). Per lane the arithmetic is the general path's (scores: a
// chain of fused multiply-adds over the dims from 0, times scale; Softmax; values: fused multiply-adds over
// positions in order from 0), so results are bit-identical to it and to every tiling
// (tests/model/attention_test.cc). AVX-512, AVX2 and ARM NEON: the same kernels over a 16-lane vector of one,
// two or four registers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/attention_kernels.h"

namespace lockstep::attention {

// Whether AttendDecodeRow runs at `level` for this shape: AVX-512 or AVX2 (x86) or NEON (ARM), head_dim,
// value_dim and block_tokens multiples of 16, 1 to 8 queries.
bool CanAttendDecodeRow(KernelLevel level, int head_dim, int value_dim, int32_t block_tokens, int queries);

// `queries` query vectors of one row (head_dim floats each, q_stride apart; values of value_dim floats)
// attending to positions [begin, end) of one KV head (begin a multiple of 16), whose keys and values sit at
// key_offset and value_offset of each block in `blocks` (layout model/batch.h): scores, Softmax over them,
// values. Query j's result goes to out + j * out_stride and its softmax's max and sum to stats[j *
// stats_stride] (a part of a longer row, merged by PartitionWeights). scores: scratch of queries x
// scores_stride floats, scores_stride
// >= end - begin rounded up to 8. Only when CanAttendDecodeRow.
void AttendDecodeRow(KernelLevel level, const std::byte* const* blocks, size_t key_offset,
                     size_t value_offset, KvDtype dtype, int32_t block_tokens, int32_t begin, int32_t end,
                     const float* q, size_t q_stride, int queries, int head_dim, int value_dim, float scale,
                     float* scores, size_t scores_stride, float* out, size_t out_stride, SoftmaxStats* stats,
                     size_t stats_stride);

}  // namespace lockstep::attention
