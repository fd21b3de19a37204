// Kernels of attention over widened (f32) KV blocks, used by model/attention.cc through the kernel table
// (tensor/kernels.h). Each has a scalar reference and AVX2, AVX-512 (x86) and NEON (aarch64) versions, one
// per attention level (KernelLevel; AttentionLevelFor maps a CPU level to it); all levels give bit-identical
// results on every CPU, x86 and ARM (Softmax: every level uses the polynomial exp of tensor/vec_math.h): the
// same fused multiply-adds per lane in the same order (and, in Softmax, the same final reduction), so a row's
// attention never depends on the CPU's vector width, on the batch around it, or on how rows and heads are
// grouped into calls.
//
// Keys are widened transposed, in groups of kKeyLanes positions: group g holds head_dim rows of kKeyLanes
// floats, [k_16g[d], k_16g+1[d], ..., k_16g+15[d]] for d = 0, 1, ...; positions past `count` are zero. A
// score is then one lane: a vector holds 16 (AVX-512) or 8 (AVX2) positions' partial dots and no sum across
// lanes is needed. Values are widened to plain [position][head_dim] f32. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/cpu_level.h"
#include "tensor/kv_storage.h"

namespace lockstep::attention {

enum class KernelLevel { kScalar, kAvx2, kAvx512, kNeon };
// The attention kernels a CPU level runs (avx2 and avx2-vnni: kAvx2; avx512, avx512-vnni and amx: kAvx512;
// every NEON level: kNeon).
KernelLevel AttentionLevelFor(CpuLevel level);
const char* KernelLevelName(KernelLevel level);

inline constexpr int kKeyLanes = 16;
// Floats of a transposed key block holding `count` positions.
inline size_t TransposedKeyFloats(int32_t count, int head_dim) {
  return size_t((count + kKeyLanes - 1) / kKeyLanes) * kKeyLanes * size_t(head_dim);
}

// Keys as stored in a KV block's head region (tensor/kv_storage.h: head_dim rows of `block_tokens` elements,
// dim-major, as f32, f16, or q8_0 quants with their scales after them), of which the first `count` are
// positions; widened exactly (q8_0: quant * scale, exact in f32) into the layout above as positions first ..
// first + count - 1 of dst (so consecutive blocks fill one buffer). Lanes of the last group past first +
// count are zeroed. For f32 and f16, src may point at a later slot s of a region (its positions s, s + 1,
// ...); for q8_0 it is the region's start.
void WidenKeysTransposed(const void* src, KvDtype dtype, int32_t block_tokens, int32_t count, int head_dim,
                         float* dst, int32_t first = 0);
// src: a value head region (tensor/kv_storage.h); its first `count` slots' vectors of head_dim elements are
// widened exactly to dst, [count][head_dim] f32.
void WidenValues(const void* src, KvDtype dtype, int32_t block_tokens, int32_t count, int head_dim,
                 float* dst);

// scores[s] = scale * (q · k_s) for s in [0, count), keys transposed as above; q holds head_dim floats. Per
// position: one chain of fused multiply-adds over d = 0, 1, ..., head_dim - 1 from 0, then times scale. For
// `queries` queries at once (query j at q + j * q_stride, its scores at scores + j * scores_stride): each
// loaded key vector serves all of them, and each query's scores are exactly those of a call with it alone.
// Only scores[0..count) of each query are written.
void DotKeys(KernelLevel level, const float* q, size_t q_stride, int queries, const float* keys,
             int32_t count, int head_dim, float scale, float* scores, size_t scores_stride);

// out[d] = fma(w[s], v_s[d], out[d]) for s = 0, 1, ..., count - 1 in order, for every d < head_dim; for
// `queries` weight vectors and outputs at once (w + j * w_stride, out + j * out_stride), each loaded value
// serving all of them, each output exactly that of a call with it alone.
void AccumulateValues(KernelLevel level, const float* w, size_t w_stride, int queries, const float* values,
                      int32_t count, int head_dim, float* out, size_t out_stride);

// A softmax's max and its sum of e^(x - max), the two numbers that merge it with others (PartitionWeights).
struct SoftmaxStats {
  float max, sum;
};

// x[0..len) <- softmax(x[0..len)); x has room for len rounded up to 8 (the padding is overwritten). The max,
// then e^(x - max) with Exp8's polynomial, summed in 8 lanes over the chunks of 8 in order and reduced as in
// DotKeys, then each scaled by 1 / sum; the scalar and NEON levels do the same one element at a time
// (ExpPolynomial). Returns the max and the sum.
SoftmaxStats Softmax(KernelLevel level, float* x, int32_t len);

// Softmaxes over consecutive parts of one row of scores, each part's outputs normalised by its own sum, are
// merged into the whole row's attention as out[d] = fma(weights[p], part_p[d], out[d]) for p in order from 0
// (as AccumulateValues would over the parts), with
// weights[p] = (c_p * sum_p) / L, c_p = e^(max_p - M) (M the largest max; the level's exp, as in Softmax) and
// L the sum over p in order of fma(c_p, sum_p, .) from 0. A single part gets weight exactly 1. For `rows`
// rows of `parts` parts at once, row i's at stats + i * stride and weights + i * stride (stride >= parts).
void PartitionWeights(KernelLevel level, const SoftmaxStats* stats, int parts, float* weights, int rows = 1,
                      size_t stride = 0);

}  // namespace lockstep::attention
