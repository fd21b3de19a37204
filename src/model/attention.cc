#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/vec_math.h"
#include "tensor/float16.h"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_ATTN_AVX2 1
#endif

namespace lockstep {
namespace {

#ifdef LOCKSTEP_ATTN_AVX2
inline float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}
#endif

// Dot products and axpy against one K/V vector in the KV storage type. Fixed order for a given n.
float DotF32(const float* q, const float* k, int n) {
  int i = 0;
  float sum = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), acc);
  sum = HorizontalSum(acc);
#endif
  for (; i < n; ++i) sum += q[i] * k[i];
  return sum;
}

float DotF16(const float* q, const uint16_t* k, int n) {
  int i = 0;
  float sum = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv, acc);
  }
  sum = HorizontalSum(acc);
#endif
  for (; i < n; ++i) sum += q[i] * F16ToF32(k[i]);
  return sum;
}

void AxpyF32(float w, const float* v, float* out, int n) {
  int i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  const __m256 wv = _mm256_set1_ps(w);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(out + i)));
  }
#endif
  for (; i < n; ++i) out[i] += w * v[i];
}

void AxpyF16(float w, const uint16_t* v, float* out, int n) {
  int i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  const __m256 wv = _mm256_set1_ps(w);
  for (; i + 8 <= n; i += 8) {
    const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(wv, vv, _mm256_loadu_ps(out + i)));
  }
#endif
  for (; i < n; ++i) out[i] += w * F16ToF32(v[i]);
}

void StoreVector(KvDtype dtype, const float* src, std::byte* dst, int n) {
  if (dtype == KvDtype::kF32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
  uint16_t* h = reinterpret_cast<uint16_t*>(dst);
  int i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) h[i] = F32ToF16(src[i]);
}

#ifdef LOCKSTEP_ATTN_AVX2
inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 Load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
#endif
inline float ToF32(float v) { return v; }
inline float ToF32(uint16_t v) { return F16ToF32(v); }

// scores[s] = scale * dot(q, K[s]) for `count` consecutive slots starting at kbase. Four slots run side by
// side for instruction-level parallelism; each slot's arithmetic is exactly that of DotF32 / DotF16.
template <typename T>
void DotRun(const float* q, const std::byte* kbase, size_t stride, int32_t count, int n, float scale,
            float* scores) {
  int32_t s = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  const int vec_end = n / 8 * 8;
  for (; s + 4 <= count; s += 4) {
    const T* k[4];
    for (int j = 0; j < 4; ++j) k[j] = reinterpret_cast<const T*>(kbase + size_t(s + j) * stride);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    for (int i = 0; i < vec_end; i += 8) {
      const __m256 qv = _mm256_loadu_ps(q + i);
      acc0 = _mm256_fmadd_ps(qv, Load8(k[0] + i), acc0);
      acc1 = _mm256_fmadd_ps(qv, Load8(k[1] + i), acc1);
      acc2 = _mm256_fmadd_ps(qv, Load8(k[2] + i), acc2);
      acc3 = _mm256_fmadd_ps(qv, Load8(k[3] + i), acc3);
    }
    float sum[4] = {HorizontalSum(acc0), HorizontalSum(acc1), HorizontalSum(acc2), HorizontalSum(acc3)};
    for (int j = 0; j < 4; ++j) {
      for (int i = vec_end; i < n; ++i) sum[j] += q[i] * ToF32(k[j][i]);
      scores[s + j] = sum[j] * scale;
    }
  }
#endif
  for (; s < count; ++s) {
    const std::byte* kp = kbase + size_t(s) * stride;
    const float dot = sizeof(T) == 2 ? DotF16(q, reinterpret_cast<const uint16_t*>(kp), n)
                                     : DotF32(q, reinterpret_cast<const float*>(kp), n);
    scores[s] = dot * scale;
  }
}

// out += sum over `count` slots of w[s] * V[s], slots in increasing order. With head_dim a multiple of 8 up
// to 128 the output stays in registers; each lane's arithmetic is exactly that of AxpyF32 / AxpyF16.
template <typename T, int kChunks>
void AxpyRunFixed(const float* w, const std::byte* vbase, size_t stride, int32_t count, float* out) {
#ifdef LOCKSTEP_ATTN_AVX2
  __m256 acc[kChunks];
  for (int c = 0; c < kChunks; ++c) acc[c] = _mm256_loadu_ps(out + 8 * c);
  for (int32_t s = 0; s < count; ++s) {
    const T* v = reinterpret_cast<const T*>(vbase + size_t(s) * stride);
    const __m256 wv = _mm256_set1_ps(w[s]);
    for (int c = 0; c < kChunks; ++c) acc[c] = _mm256_fmadd_ps(wv, Load8(v + 8 * c), acc[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
#endif
}

template <typename T>
void AxpyRun(const float* w, const std::byte* vbase, size_t stride, int32_t count, int n, float* out) {
#ifdef LOCKSTEP_ATTN_AVX2
  switch (n) {
    case 32:
      return AxpyRunFixed<T, 4>(w, vbase, stride, count, out);
    case 64:
      return AxpyRunFixed<T, 8>(w, vbase, stride, count, out);
    case 80:
      return AxpyRunFixed<T, 10>(w, vbase, stride, count, out);
    case 96:
      return AxpyRunFixed<T, 12>(w, vbase, stride, count, out);
    case 128:
      return AxpyRunFixed<T, 16>(w, vbase, stride, count, out);
    default:
      break;
  }
#endif
  for (int32_t s = 0; s < count; ++s) {
    const std::byte* vp = vbase + size_t(s) * stride;
    if (sizeof(T) == 2) {
      AxpyF16(w[s], reinterpret_cast<const uint16_t*>(vp), out, n);
    } else {
      AxpyF32(w[s], reinterpret_cast<const float*>(vp), out, n);
    }
  }
}

// x[0..len) <- softmax(x[0..len)). x has room for len rounded up to 8 (the padding is overwritten).
// Fixed order for a given len: max, exp, sum in lanes of 8 then across lanes, scale.
void SoftmaxInPlace(float* x, int32_t len) {
  float max_v = -INFINITY;
  for (int32_t t = 0; t < len; ++t) max_v = std::max(max_v, x[t]);
#ifdef LOCKSTEP_ATTN_AVX2
  const int32_t padded = (len + 7) / 8 * 8;
  for (int32_t t = len; t < padded; ++t) x[t] = max_v;  // exp(0) = 1, zeroed below
  const __m256 m = _mm256_set1_ps(max_v);
  __m256 acc = _mm256_setzero_ps();
  for (int32_t t = 0; t < padded; t += 8) {
    __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + t), m));
    if (t + 8 > len) {
      alignas(32) int32_t mask[8];
      for (int i = 0; i < 8; ++i) mask[i] = t + i < len ? -1 : 0;
      e = _mm256_and_ps(e, _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mask))));
    }
    _mm256_storeu_ps(x + t, e);
    acc = _mm256_add_ps(acc, e);
  }
  const float inv = 1.0f / HorizontalSum(acc);
  const __m256 iv = _mm256_set1_ps(inv);
  for (int32_t t = 0; t < padded; t += 8) _mm256_storeu_ps(x + t, _mm256_mul_ps(_mm256_loadu_ps(x + t), iv));
#else
  float sum = 0;
  for (int32_t t = 0; t < len; ++t) sum += (x[t] = std::exp(x[t] - max_v));
  const float inv = 1.0f / sum;
  for (int32_t t = 0; t < len; ++t) x[t] *= inv;
#endif
}

// Largest KV block (block_tokens x head_dim floats) that AttendHeads widens to f32 on the stack.
constexpr size_t kWidenFloats = 4096;

// dst[i] = src[i] as f32 (exact).
void WidenF16(const uint16_t* src, size_t n, float* dst) {
  size_t i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  for (; i + 8 <= n; i += 8) _mm256_store_ps(dst + i, Load8(src + i));
#endif
  for (; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

}  // namespace

void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v) {
  std::byte* block = blocks[position / kv.block_tokens];
  const size_t slot_offset = size_t(position % kv.block_tokens) * size_t(kv.head_dim) * kv.ElementBytes();
  for (int32_t h = 0; h < kv.n_kv_head; ++h) {
    StoreVector(kv.dtype, k + size_t(h) * kv.head_dim, block + kv.KeyOffset(layer, h) + slot_offset,
                kv.head_dim);
    StoreVector(kv.dtype, v + size_t(h) * kv.head_dim, block + kv.ValueOffset(layer, h) + slot_offset,
                kv.head_dim);
  }
}

size_t AttentionScoresFloats(int32_t heads, int32_t position) {
  return size_t(heads) * ((size_t(position) + 1 + 7) / 8 * 8);
}

void AttendHeads(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
                 int32_t position, const float* q, int32_t heads, float scale, float* scores, float* out) {
  const int n = kv.head_dim;
  const int32_t bt = kv.block_tokens;
  const size_t stride = size_t(n) * kv.ElementBytes();
  const size_t k_off = kv.KeyOffset(layer, kv_head);
  const size_t v_off = kv.ValueOffset(layer, kv_head);
  const bool f16 = kv.dtype == KvDtype::kF16;
  const int32_t len = position + 1;
  const size_t padded = (size_t(len) + 7) / 8 * 8;
  // With several heads per call, each f16 block is widened to f32 once and shared by the heads. The
  // conversion is exact, so every value is bit-identical to reading the f16 block directly.
  const bool widen = f16 && heads > 1 && size_t(bt) * size_t(n) <= kWidenFloats;
  alignas(64) float wide[kWidenFloats];  // 16 KiB, uninitialized
  // Scores, block by block, positions in increasing order; each block's K serves every head of the group.
  for (int32_t t0 = 0; t0 < len; t0 += bt) {
    const std::byte* kbase = blocks[t0 / bt] + k_off;
    const int32_t count = std::min(len - t0, bt);
    if (widen) {
      WidenF16(reinterpret_cast<const uint16_t*>(kbase), size_t(count) * n, wide);
      for (int32_t h = 0; h < heads; ++h) {
        DotRun<float>(q + size_t(h) * n, reinterpret_cast<const std::byte*>(wide), size_t(n) * sizeof(float),
                      count, n, scale, scores + h * padded + t0);
      }
      continue;
    }
    for (int32_t h = 0; h < heads; ++h) {
      if (f16) {
        DotRun<uint16_t>(q + size_t(h) * n, kbase, stride, count, n, scale, scores + h * padded + t0);
      } else {
        DotRun<float>(q + size_t(h) * n, kbase, stride, count, n, scale, scores + h * padded + t0);
      }
    }
  }
  // Softmax per head; scores become weights that sum to 1.
  for (int32_t h = 0; h < heads; ++h) SoftmaxInPlace(scores + h * padded, len);
  for (int32_t h = 0; h < heads; ++h) std::memset(out + size_t(h) * n, 0, size_t(n) * sizeof(float));
  for (int32_t t0 = 0; t0 < len; t0 += bt) {
    const std::byte* vbase = blocks[t0 / bt] + v_off;
    const int32_t count = std::min(len - t0, bt);
    if (widen) {
      WidenF16(reinterpret_cast<const uint16_t*>(vbase), size_t(count) * n, wide);
      for (int32_t h = 0; h < heads; ++h) {
        AxpyRun<float>(scores + h * padded + t0, reinterpret_cast<const std::byte*>(wide),
                       size_t(n) * sizeof(float), count, n, out + size_t(h) * n);
      }
      continue;
    }
    for (int32_t h = 0; h < heads; ++h) {
      if (f16) {
        AxpyRun<uint16_t>(scores + h * padded + t0, vbase, stride, count, n, out + size_t(h) * n);
      } else {
        AxpyRun<float>(scores + h * padded + t0, vbase, stride, count, n, out + size_t(h) * n);
      }
    }
  }
}

}  // namespace lockstep
