// Kernels of attention over widened (f32) KV blocks, used by model/attention.cc. Each has a scalar reference
// and AVX2 and AVX-512 versions chosen once at run time; all levels give bit-identical results: the same
// fused multiply-adds per lane in the same order and the same final reduction, so a row's attention never
// depends on the CPU's vector width, on the batch around it, or on how rows and heads are grouped into calls.
//
// Keys are widened into a paired layout so that one 16-lane vector advances two positions at once while each
// position keeps the 8-lane arithmetic: positions 2p and 2p+1 share 2 * PaddedHeadDim floats, dims in chunks
// of 8, [k_2p[0..8), k_2p+1[0..8), k_2p[8..16), k_2p+1[8..16), ...]; dims past head_dim and an odd last
// position's partner are zero. Values are widened to plain [position][head_dim] f32. Pure functions,
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/model_config.h"  // kMaxHeadDim: the largest head_dim (a multiple of 8) the kernels take

namespace lockstep::attention {

enum class KernelLevel { kScalar, kAvx2, kAvx512 };
// The fastest level this CPU runs (AVX-512 needs F, DQ and VL).
KernelLevel BestKernelLevel();
const char* KernelLevelName(KernelLevel level);

// head_dim rounded up to a multiple of 8: the query and key length the dot kernels read.
inline int PaddedHeadDim(int head_dim) { return (head_dim + 7) / 8 * 8; }
// Floats of a paired key block holding `count` positions.
inline size_t PairedKeyFloats(int32_t count, int head_dim) {
  return size_t((count + 1) / 2) * 2 * size_t(PaddedHeadDim(head_dim));
}

// src: `count` vectors of head_dim elements (f16 bits when `f16`, else f32), consecutive. Exact conversions.
void WidenKeysPaired(const void* src, bool f16, int32_t count, int head_dim, float* dst);
void WidenValues(const void* src, bool f16, int32_t count, int head_dim, float* dst);

// scores[s] = scale * (q · k_s) for s in [0, count), keys in the paired layout starting at an even position.
// q holds PaddedHeadDim(head_dim) floats (zero past head_dim). Per position: 8 lane accumulators, each a
// chain of fused multiply-adds over the dim chunks in order, then ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). For
// `queries` queries at once (query j at q + j * q_stride, its scores at scores + j * scores_stride): each
// loaded key serves all of them, and each query's scores are exactly those of a call with it alone.
void DotKeys(KernelLevel level, const float* q, size_t q_stride, int queries, const float* keys,
             int32_t count, int head_dim, float scale, float* scores, size_t scores_stride);

// out[d] = fma(w[s], v_s[d], out[d]) for s = 0, 1, ..., count - 1 in order, for every d < head_dim; for
// `queries` weight vectors and outputs at once (w + j * w_stride, out + j * out_stride), each loaded value
// serving all of them, each output exactly that of a call with it alone.
void AccumulateValues(KernelLevel level, const float* w, size_t w_stride, int queries, const float* values,
                      int32_t count, int head_dim, float* out, size_t out_stride);

// x[0..len) <- softmax(x[0..len)); x has room for len rounded up to 8 (the padding is overwritten). The max,
// then e^(x - max) with Exp8's polynomial, summed in 8 lanes over the chunks of 8 in order and reduced as in
// DotKeys, then each scaled by 1 / sum. (The scalar level, for non-x86 builds only, uses std::exp.)
void Softmax(KernelLevel level, float* x, int32_t len);

}  // namespace lockstep::attention
