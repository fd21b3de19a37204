#include "tensor/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/activations.h"
#include "tensor/float16.h"
#include "tensor/vec_math.h"
#include "tensor/with_count.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_ATTENTION_X86 1
#define LOCKSTEP_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include "tensor/neon_lanes.h"
#define LOCKSTEP_ATTENTION_NEON 1
#endif

namespace lockstep::attention {
namespace {

// ---- Scalar reference: the definition every SIMD level reproduces bit for bit. ----

void DotKeysScalar(const float* q, const float* keys, int32_t count, int head_dim, float scale,
                   float* scores) {
  for (int32_t s = 0; s < count; ++s) {
    const float* k = keys + size_t(s / kKeyLanes) * kKeyLanes * head_dim + s % kKeyLanes;
    float acc = 0.0f;
    for (int d = 0; d < head_dim; ++d) acc = std::fma(q[d], k[size_t(d) * kKeyLanes], acc);
    scores[s] = acc * scale;
  }
}

// Dims [d0, head_dim) (d0 > 0: a SIMD level's tail).
void AccumulateValuesScalar(const float* w, const float* values, int32_t count, int head_dim, float* out,
                            int d0 = 0) {
  for (int32_t s = 0; s < count; ++s) {
    const float* v = values + size_t(s) * head_dim;
    for (int d = d0; d < head_dim; ++d) out[d] = std::fma(w[s], v[d], out[d]);
  }
}

#ifdef LOCKSTEP_ATTENTION_NEON
#include "tensor/attention_kernels_neon-inl.h"
#endif

#ifdef LOCKSTEP_ATTENTION_X86
#include "tensor/attention_kernels_x86-inl.h"
#endif

// SoftmaxAvx2's operations one element at a time (the polynomial exp, 8 lane sums over the chunks of 8 in
// order, the same final reduction), so the scalar and NEON levels give the x86 levels' bits: a request's
// attention, and so its tokens, are the same on every CPU (std::exp's last bits differ between libm builds).
SoftmaxStats SoftmaxScalar(float* x, int32_t len) {
  float max_v = -INFINITY;
  for (int32_t t = 0; t < len; ++t) max_v = std::max(max_v, x[t]);
  float lanes[8] = {};
  for (int32_t t = 0; t < len; ++t) lanes[t % 8] += (x[t] = ExpPolynomial(x[t] - max_v));
  const float sum =
      ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  const float inv = 1.0f / sum;
  for (int32_t t = 0; t < len; ++t) x[t] *= inv;
  return {max_v, sum};
}

// Elements [offset, offset + n) of src widened: f16 -> f32 (exact) or a copy.
void WidenRun(const void* src, bool f16, size_t offset, int n, float* dst) {
  if (!f16) {
    std::memcpy(dst, static_cast<const float*>(src) + offset, size_t(n) * sizeof(float));
    return;
  }
  const uint16_t* h = static_cast<const uint16_t*>(src) + offset;
  int i = 0;
#ifdef LOCKSTEP_ATTENTION_X86
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  }
#endif
  for (; i < n; ++i) dst[i] = F16ToF32(h[i]);
}

// q8_0: dst[i] = q[i] * scales[i] (one scale per element here), exact in f32.
void WidenQ8Run(const int8_t* q, const uint16_t* scales, int n, float* dst) {
  int i = 0;
#ifdef LOCKSTEP_ATTENTION_X86
  for (; i + 8 <= n; i += 8) {
    const __m256 quants =
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i))));
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + i)));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(quants, d));
  }
#endif
  for (; i < n; ++i) dst[i] = float(q[i]) * F16ToF32(scales[i]);
}

}  // namespace

KernelLevel AttentionLevelFor(CpuLevel level) {
  switch (level) {
#ifdef LOCKSTEP_ATTENTION_X86
    case CpuLevel::kAvx2:
    case CpuLevel::kAvx2Vnni:
      return KernelLevel::kAvx2;
    case CpuLevel::kAvx512:
    case CpuLevel::kAvx512Vnni:
    case CpuLevel::kAmx:
      return KernelLevel::kAvx512;
#endif
#ifdef LOCKSTEP_ATTENTION_NEON
    case CpuLevel::kNeon:
    case CpuLevel::kNeonDotprod:
    case CpuLevel::kNeonI8mm:
      return KernelLevel::kNeon;
#endif
    default:
      return KernelLevel::kScalar;
  }
}

const char* KernelLevelName(KernelLevel level) {
  switch (level) {
    case KernelLevel::kAvx512:
      return "avx512";
    case KernelLevel::kAvx2:
      return "avx2";
    case KernelLevel::kNeon:
      return "neon";
    default:
      return "scalar";
  }
}

void WidenKeysTransposed(const void* src, KvDtype dtype, int32_t block_tokens, int32_t count, int head_dim,
                         float* dst, int32_t first) {
  const bool f16 = dtype == KvDtype::kF16, q8 = dtype == KvDtype::kQ8_0;
  const int8_t* quants = static_cast<const int8_t*>(src);
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(static_cast<const std::byte*>(src) +
                                                             KvScaleOffset(block_tokens, head_dim));
  const int group = KvScaleGroup(head_dim);
  for (int32_t s = 0; s < count;) {  // runs of positions within one group
    const int32_t p = first + s;
    const int lane = p % kKeyLanes;
    const int n = std::min<int32_t>(kKeyLanes - lane, count - s);
    float* group_out = dst + size_t(p / kKeyLanes) * kKeyLanes * head_dim;
#ifdef LOCKSTEP_ATTENTION_X86
    if (n == kKeyLanes && f16) {  // a whole group (the common case): inline, 16 halves per dim
      const uint16_t* h = static_cast<const uint16_t*>(src) + s;
      for (int d = 0; d < head_dim; ++d) {
        const uint16_t* in = h + size_t(d) * block_tokens;
        float* out = group_out + size_t(d) * kKeyLanes;
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
        _mm256_storeu_ps(out + 8, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 8))));
      }
      s += n;
      continue;
    }
    if (n == kKeyLanes && q8) {  // the same for q8_0: 16 quants per dim times their positions' scales
      __m256 d_lo = _mm256_setzero_ps(), d_hi = _mm256_setzero_ps();
      for (int d = 0; d < head_dim; ++d) {
        if (d % group == 0) {
          const uint16_t* sc = scales + size_t(d / group) * block_tokens + s;
          d_lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
          d_hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 8)));
        }
        const __m128i in =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(quants + size_t(d) * block_tokens + s));
        float* out = group_out + size_t(d) * kKeyLanes;
        _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(in)), d_lo));
        _mm256_storeu_ps(
            out + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(in, 8))), d_hi));
      }
      s += n;
      continue;
    }
#endif
    for (int d = 0; d < head_dim; ++d) {
      float* out = group_out + size_t(d) * kKeyLanes + lane;
      if (q8) {  // dim d of positions s.. and their scales (scale group d / group)
        WidenQ8Run(quants + size_t(d) * block_tokens + s, scales + size_t(d / group) * block_tokens + s, n,
                   out);
      } else {
        WidenRun(src, f16, size_t(d) * block_tokens + s, n, out);
      }
    }
    s += n;
  }
  const int32_t end = first + count;
  if (end % kKeyLanes != 0) {
    float* group_out = dst + size_t(end / kKeyLanes) * kKeyLanes * head_dim;
    for (int d = 0; d < head_dim; ++d) {
      std::fill(group_out + size_t(d) * kKeyLanes + end % kKeyLanes, group_out + size_t(d + 1) * kKeyLanes,
                0.0f);
    }
  }
}

void WidenValues(const void* src, KvDtype dtype, int32_t block_tokens, int32_t count, int head_dim,
                 float* dst) {
  if (dtype != KvDtype::kQ8_0) return WidenRun(src, dtype == KvDtype::kF16, 0, count * head_dim, dst);
  const int group = KvScaleGroup(head_dim), groups = head_dim / group;
  const int8_t* quants = static_cast<const int8_t*>(src);
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(static_cast<const std::byte*>(src) +
                                                             KvScaleOffset(block_tokens, head_dim));
  for (int32_t s = 0; s < count; ++s) {
    for (int g = 0; g < groups; ++g) {
      const int8_t* q = quants + size_t(s) * head_dim + size_t(g) * group;
      float* out = dst + size_t(s) * head_dim + size_t(g) * group;
      const float d = F16ToF32(scales[size_t(s) * groups + g]);
      int i = 0;
#ifdef LOCKSTEP_ATTENTION_X86
      const __m256 dv = _mm256_set1_ps(d);
      for (; i + 8 <= group; i += 8) {
        const __m256 qv = _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(qv, dv));
      }
#endif
      for (; i < group; ++i) out[i] = float(q[i]) * d;
    }
  }
}

void DotKeys(KernelLevel level, const float* q, size_t q_stride, int queries, const float* keys,
             int32_t count, int head_dim, float scale, float* scores, size_t scores_stride) {
#ifdef LOCKSTEP_ATTENTION_X86
  if (level == KernelLevel::kAvx512) {
    return DotKeysAvx512(q, q_stride, queries, keys, count, head_dim, scale, scores, scores_stride);
  }
  if (level == KernelLevel::kAvx2) {
    return DotKeysAvx2(q, q_stride, queries, keys, count, head_dim, scale, scores, scores_stride);
  }
#endif
#ifdef LOCKSTEP_ATTENTION_NEON
  if (level == KernelLevel::kNeon) {
    return DotKeysNeon(q, q_stride, queries, keys, count, head_dim, scale, scores, scores_stride);
  }
#endif
  for (int j = 0; j < queries; ++j) {
    DotKeysScalar(q + j * q_stride, keys, count, head_dim, scale, scores + j * scores_stride);
  }
}

void AccumulateValues(KernelLevel level, const float* w, size_t w_stride, int queries, const float* values,
                      int32_t count, int head_dim, float* out, size_t out_stride) {
#ifdef LOCKSTEP_ATTENTION_X86
  if (level == KernelLevel::kAvx512) {
    return AccumulateValuesAvx512(w, w_stride, queries, values, count, head_dim, out, out_stride);
  }
#endif
#ifdef LOCKSTEP_ATTENTION_NEON
  if (level == KernelLevel::kNeon) {
    return AccumulateValuesNeon(w, w_stride, queries, values, count, head_dim, out, out_stride);
  }
#endif
#ifdef LOCKSTEP_ATTENTION_X86
  if (level == KernelLevel::kAvx2) {
    return AccumulateValuesAvx2(w, w_stride, queries, values, count, head_dim, out, out_stride);
  }
#endif
  for (int j = 0; j < queries; ++j) {
    AccumulateValuesScalar(w + j * w_stride, values, count, head_dim, out + j * out_stride);
  }
}

SoftmaxStats Softmax(KernelLevel level, float* x, int32_t len) {
#ifdef LOCKSTEP_ATTENTION_X86
  if (level == KernelLevel::kAvx512) return SoftmaxAvx512(x, len);
  if (level == KernelLevel::kAvx2) return SoftmaxAvx2(x, len);
#endif
  return SoftmaxScalar(x, len);
}

void PartitionWeights(KernelLevel level, const SoftmaxStats* stats, int parts, float* weights, int rows,
                      size_t stride) {
  if (stride == 0) stride = size_t(parts);
  for (int i = 0; i < rows; ++i) {  // max_p - M, and zeros between rows (so one exp pass covers them all)
    const SoftmaxStats* s = stats + i * stride;
    float* w = weights + i * stride;
    float max_v = -INFINITY;
    for (int p = 0; p < parts; ++p) max_v = std::max(max_v, s[p].max);
    for (int p = 0; p < parts; ++p) w[p] = s[p].max - max_v;
    if (i + 1 < rows) std::fill(w + parts, w + stride, 0.0f);
  }
  const int n = int((rows - 1) * stride) + parts;
#ifdef LOCKSTEP_ATTENTION_X86
  if (level == KernelLevel::kAvx512 || level == KernelLevel::kAvx2) {
    ExpInPlaceAvx2(weights, n);
  } else
#endif
  {
    (void)level;
    for (int p = 0; p < n; ++p) weights[p] = ExpPolynomial(weights[p]);
  }
  for (int i = 0; i < rows; ++i) {
    const SoftmaxStats* s = stats + i * stride;
    float* w = weights + i * stride;
    float total = 0.0f;
    for (int p = 0; p < parts; ++p) total = std::fma(w[p], s[p].sum, total);
    for (int p = 0; p < parts; ++p) w[p] = w[p] * s[p].sum / total;
  }
}

}  // namespace lockstep::attention
