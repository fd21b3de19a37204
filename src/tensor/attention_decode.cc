#include "tensor/attention_decode.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/float16.h"
#include "tensor/kv_storage.h"
#include "tensor/prefetch.h"
#include "tensor/with_count.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_DECODE_X86 1
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include "tensor/neon_lanes.h"
#define LOCKSTEP_DECODE_NEON 1
#endif
#if defined(LOCKSTEP_DECODE_X86) || defined(LOCKSTEP_DECODE_NEON)
#define LOCKSTEP_DECODE_KERNELS 1
#endif

namespace lockstep::attention {

bool CanAttendDecodeRow(KernelLevel level, int head_dim, int value_dim, int32_t block_tokens, int queries) {
#if defined(LOCKSTEP_DECODE_X86)
  const bool level_ok = level == KernelLevel::kAvx512 || level == KernelLevel::kAvx2;
#elif defined(LOCKSTEP_DECODE_NEON)
  const bool level_ok = level == KernelLevel::kNeon;
#else
  const bool level_ok = false;
#endif
  return level_ok && head_dim > 0 && head_dim % kKeyLanes == 0 && value_dim > 0 &&
         value_dim % kKeyLanes == 0 && block_tokens > 0 && block_tokens % kKeyLanes == 0 && queries >= 1 &&
         queries <= 8;
}

#ifdef LOCKSTEP_DECODE_KERNELS
namespace {

// One f16 to f32, exactly (F16C's instruction where the build has it).
inline float HalfToFloat(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return F16ToF32(h);
#endif
}

// Where the stored KV of one head is: block pointers, the head's offset in each, the block size.
struct StoredHead {
  const std::byte* const* blocks;
  size_t offset;
  int32_t block_tokens;
  int dim;  // of one key (head_dim) or value (value_dim)
};

// The kernels, once per instruction set: a 16-lane vector V is one 512-bit register, two 256-bit halves or
// four 128-bit NEON quarters. Per lane all do the same fused multiply-adds, so they give the same bits.
// AVX-512 has 32 registers: score tiles of >= 8 accumulators, value tiles of 6 queries x 64 dims; AVX2 (16
// registers) half of each; NEON (32 registers of 4 lanes) one key group and 2 queries x 16 dims.
#if defined(LOCKSTEP_DECODE_NEON)
namespace neon {
struct V : NeonLanes16 {
  static constexpr KernelLevel kLevel = KernelLevel::kNeon;
  static constexpr int kScoreChains = 1, kValueQueries = 2, kValueChunks = 1;
};
#include "tensor/attention_decode-inl.h"
}  // namespace neon
#else
namespace avx2 {
struct V {
  struct F {
    __m256 lo, hi;
  };
  static constexpr KernelLevel kLevel = KernelLevel::kAvx2;
  static constexpr int kScoreChains = 4, kValueQueries = 2, kValueChunks = 2;
  static F Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static F Set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static F Fma(F a, F b, F c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static F Mul(F a, F b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  template <KvDtype kType>
  static F Load16(const std::byte* p) {  // 16 stored elements (q8_0: quants), widened exactly
    if constexpr (kType == KvDtype::kF16) {
      return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
              _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)))};
    } else if constexpr (kType == KvDtype::kQ8_0) {
      return {
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))),
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8))))};
    } else {
      return {_mm256_loadu_ps(reinterpret_cast<const float*>(p)),
              _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8)};
    }
  }
  static void Store(float* p, F v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  // Masked stores, no call: a memcpy of n floats here made GCC keep every score accumulator in memory,
  // stored to the stack on each head dimension (as many stores as FMAs).
  static void StoreFirst(float* p, F v, int n) {
    if (n == 16) return Store(p, v);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), nv = _mm256_set1_epi32(n);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(nv, iota), v.lo);
    _mm256_maskstore_ps(p + 8, _mm256_cmpgt_epi32(nv, _mm256_add_epi32(iota, _mm256_set1_epi32(8))), v.hi);
  }
};
#include "tensor/attention_decode-inl.h"
}  // namespace avx2

// Clang has no `#pragma GCC target`; its attribute pragma gives every function here the same target.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512vl"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl")
#endif
namespace avx512 {
struct V {
  using F = __m512;
  static constexpr KernelLevel kLevel = KernelLevel::kAvx512;
  static constexpr int kScoreChains = 8, kValueQueries = 6, kValueChunks = 4;
  static F Zero() { return _mm512_setzero_ps(); }
  static F Set1(float x) { return _mm512_set1_ps(x); }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  template <KvDtype kType>
  static F Load16(const std::byte* p) {  // 16 stored elements (q8_0: quants), widened exactly
    if constexpr (kType == KvDtype::kF16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else if constexpr (kType == KvDtype::kQ8_0) {
      return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    } else {
      return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
    }
  }
  static void Store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void StoreFirst(float* p, F v, int n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
  }
};
#include "tensor/attention_decode-inl.h"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

}  // namespace
#endif

void AttendDecodeRow(KernelLevel level, const std::byte* const* blocks, size_t key_offset,
                     size_t value_offset, KvDtype dtype, int32_t block_tokens, int32_t begin, int32_t end,
                     const float* q, size_t q_stride, int queries, int head_dim, int value_dim, float scale,
                     float* scores, size_t scores_stride, float* out, size_t out_stride, SoftmaxStats* stats,
                     size_t stats_stride) {
#if defined(LOCKSTEP_DECODE_KERNELS)
  const StoredHead keys{blocks, key_offset, block_tokens, head_dim},
      values{blocks, value_offset, block_tokens, value_dim};
#if defined(LOCKSTEP_DECODE_NEON)
  (void)level;
  neon::AttendStored(dtype, keys, values, begin, end, q, q_stride, queries, head_dim, scale, scores,
                     scores_stride, out, out_stride, stats, stats_stride);
#else
  if (level == KernelLevel::kAvx512) {
    avx512::AttendStored(dtype, keys, values, begin, end, q, q_stride, queries, head_dim, scale, scores,
                         scores_stride, out, out_stride, stats, stats_stride);
  } else {
    avx2::AttendStored(dtype, keys, values, begin, end, q, q_stride, queries, head_dim, scale, scores,
                       scores_stride, out, out_stride, stats, stats_stride);
  }
#endif
#else
  (void)level, (void)blocks, (void)key_offset, (void)value_offset, (void)dtype, (void)block_tokens,
      (void)begin;
  (void)end, (void)q, (void)q_stride, (void)queries, (void)head_dim, (void)value_dim, (void)scale,
      (void)scores;
  (void)scores_stride, (void)out, (void)out_stride, (void)stats, (void)stats_stride;
#endif
}

}  // namespace lockstep::attention
