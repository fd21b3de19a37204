#include "model/attention_decode.h"

#include <algorithm>
#include <utility>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_DECODE_X86 1
#define LOCKSTEP_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace lockstep::attention {

bool CanAttendDecodeRow(KernelLevel level, int head_dim, int32_t block_tokens, int queries) {
#ifdef LOCKSTEP_DECODE_X86
  return level == KernelLevel::kAvx512 && head_dim > 0 && head_dim % kKeyLanes == 0 && block_tokens > 0 &&
         block_tokens % kKeyLanes == 0 && queries >= 1 && queries <= 8;
#else
  (void)level, (void)head_dim, (void)block_tokens, (void)queries;
  return false;
#endif
}

#ifdef LOCKSTEP_DECODE_X86
namespace {

// Where the stored KV of one head is: block pointers, the head's offset in each, the block size.
struct StoredHead {
  const std::byte* const* blocks;
  size_t offset;
  int32_t block_tokens;
};

// 16 stored elements from p, widened exactly.
template <bool kF16>
LOCKSTEP_AVX512 inline __m512 Load16(const std::byte* p) {
  if constexpr (kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

inline void PrefetchRange(const std::byte* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(p + i);
}

// Scores of kQueries queries against the kGroups 16-position key groups from group `first` (positions at or
// past len not stored); the next kGroups groups' blocks are prefetched meanwhile.
template <bool kF16, int kQueries, int kGroups>
LOCKSTEP_AVX512 void ScoreGroups(const StoredHead& keys, int32_t first, int32_t len, const float* q,
                                 size_t q_stride, int head_dim, float scale, float* scores,
                                 size_t scores_stride) {
  constexpr size_t kBytes = kF16 ? 2 : 4;
  const int32_t bt = keys.block_tokens;
  const size_t dim_bytes = size_t(bt) * kBytes;  // a block's key rows: dim d's bt positions, then d + 1's
  const std::byte* row[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    const int32_t p = (first + g) * kKeyLanes;
    row[g] = keys.blocks[p / bt] + keys.offset + size_t(p % bt) * kBytes;
    const int32_t next = p + kGroups * kKeyLanes;
    if (next < len && next % bt == 0)
      PrefetchRange(keys.blocks[next / bt] + keys.offset, head_dim * dim_bytes);
  }
  __m512 acc[kQueries][kGroups];
  for (int j = 0; j < kQueries; ++j) {
    for (int g = 0; g < kGroups; ++g) acc[j][g] = _mm512_setzero_ps();
  }
  for (int d = 0; d < head_dim; ++d) {
    __m512 k[kGroups];
    for (int g = 0; g < kGroups; ++g) k[g] = Load16<kF16>(row[g] + size_t(d) * dim_bytes);
    for (int j = 0; j < kQueries; ++j) {
      const __m512 qd = _mm512_set1_ps(q[j * q_stride + d]);
      for (int g = 0; g < kGroups; ++g) acc[j][g] = _mm512_fmadd_ps(qd, k[g], acc[j][g]);
    }
  }
  const __m512 sv = _mm512_set1_ps(scale);
  for (int g = 0; g < kGroups; ++g) {
    const int32_t p = (first + g) * kKeyLanes;
    const int n = std::min<int32_t>(kKeyLanes, len - p);
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
    for (int j = 0; j < kQueries; ++j) {
      _mm512_mask_storeu_ps(scores + j * scores_stride + p, mask, _mm512_mul_ps(acc[j][g], sv));
    }
  }
}

// All scores: ceil(8 / kQueries) groups at a time, so that at least 8 FMA chains are in flight.
template <bool kF16, int kQueries>
LOCKSTEP_AVX512 void Scores(const StoredHead& keys, int32_t len, const float* q, size_t q_stride,
                            int head_dim, float scale, float* scores, size_t scores_stride) {
  constexpr int kGroups = (8 + kQueries - 1) / kQueries;
  const int32_t groups = (len + kKeyLanes - 1) / kKeyLanes;
  int32_t g = 0;
  for (; g + kGroups <= groups; g += kGroups) {
    ScoreGroups<kF16, kQueries, kGroups>(keys, g, len, q, q_stride, head_dim, scale, scores, scores_stride);
  }
  for (; g < groups; ++g) {
    ScoreGroups<kF16, kQueries, 1>(keys, g, len, q, q_stride, head_dim, scale, scores, scores_stride);
  }
}

// out[d] = sum over positions s in order of fma(w[s], v_s[d], .) from 0, for dims [d0, d0 + 16 * kChunks) of
// kQueries weight vectors (w + j * w_stride) and outputs (out + j * out_stride).
template <bool kF16, int kQueries, int kChunks>
LOCKSTEP_AVX512 void AccumulateStoredValues(const StoredHead& values, int32_t len, const float* w,
                                            size_t w_stride, int head_dim, int d0, float* out,
                                            size_t out_stride) {
  constexpr size_t kBytes = kF16 ? 2 : 4;
  const int32_t bt = values.block_tokens;
  const size_t row_bytes = size_t(head_dim) * kBytes;  // a block's values: slot-major rows of head_dim
  const size_t chunk_offset = size_t(d0) * kBytes, chunk_bytes = size_t(kChunks) * kKeyLanes * kBytes;
  __m512 acc[kQueries][kChunks];
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm512_setzero_ps();
  }
  for (int32_t t0 = 0; t0 < len; t0 += bt) {
    const std::byte* block = values.blocks[t0 / bt] + values.offset + chunk_offset;
    if (t0 + bt < len) {
      const std::byte* next = values.blocks[t0 / bt + 1] + values.offset + chunk_offset;
      for (int32_t s = 0; s < bt; ++s) PrefetchRange(next + size_t(s) * row_bytes, chunk_bytes);
    }
    const int32_t n = std::min(bt, len - t0);
    for (int32_t s = 0; s < n; ++s) {
      __m512 v[kChunks];
      for (int c = 0; c < kChunks; ++c)
        v[c] = Load16<kF16>(block + size_t(s) * row_bytes + c * kKeyLanes * kBytes);
      for (int j = 0; j < kQueries; ++j) {
        const __m512 wv = _mm512_set1_ps(w[j * w_stride + t0 + s]);
        for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm512_fmadd_ps(wv, v[c], acc[j][c]);
      }
    }
  }
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) _mm512_storeu_ps(out + j * out_stride + d0 + kKeyLanes * c, acc[j][c]);
  }
}

template <bool kF16, int kQueries>
LOCKSTEP_AVX512 void Values(const StoredHead& values, int32_t len, const float* w, size_t w_stride,
                            int head_dim, float* out, size_t out_stride) {
  int d = 0;
  for (; d + 4 * kKeyLanes <= head_dim; d += 4 * kKeyLanes) {  // 64 dims: 4 x kQueries accumulators
    AccumulateStoredValues<kF16, kQueries, 4>(values, len, w, w_stride, head_dim, d, out, out_stride);
  }
  switch ((head_dim - d) / kKeyLanes) {
    case 3:
      return AccumulateStoredValues<kF16, kQueries, 3>(values, len, w, w_stride, head_dim, d, out,
                                                       out_stride);
    case 2:
      return AccumulateStoredValues<kF16, kQueries, 2>(values, len, w, w_stride, head_dim, d, out,
                                                       out_stride);
    case 1:
      return AccumulateStoredValues<kF16, kQueries, 1>(values, len, w, w_stride, head_dim, d, out,
                                                       out_stride);
    default:
      return;
  }
}

// Calls f(std::integral_constant<int, n>{}) for a run-time n in [1, kMax].
template <int kMax, typename F>
inline void WithCount(int n, const F& f) {
  [&]<int... k>(std::integer_sequence<int, k...>) {
    ((n == k + 1 ? (f(std::integral_constant<int, k + 1>{}), 0) : 0), ...);
  }
  (std::make_integer_sequence<int, kMax>{});
}

template <bool kF16>
void AttendStored(const StoredHead& keys, const StoredHead& values, int32_t len, const float* q,
                  size_t q_stride, int queries, int head_dim, float scale, float* scores,
                  size_t scores_stride, float* out, size_t out_stride) {
  WithCount<8>(queries, [&](auto k) {
    Scores<kF16, k>(keys, len, q, q_stride, head_dim, scale, scores, scores_stride);
  });
  for (int j = 0; j < queries; ++j) Softmax(KernelLevel::kAvx512, scores + j * scores_stride, len);
  for (int j = 0; j < queries; j += 6) {  // 6 queries x 64 dims: 24 accumulators
    WithCount<6>(std::min(6, queries - j), [&](auto k) {
      Values<kF16, k>(values, len, scores + j * scores_stride, scores_stride, head_dim, out + j * out_stride,
                      out_stride);
    });
  }
}

}  // namespace
#endif

void AttendDecodeRow(const std::byte* const* blocks, size_t key_offset, size_t value_offset, bool f16,
                     int32_t block_tokens, int32_t len, const float* q, size_t q_stride, int queries,
                     int head_dim, float scale, float* scores, size_t scores_stride, float* out,
                     size_t out_stride) {
#ifdef LOCKSTEP_DECODE_X86
  const StoredHead keys{blocks, key_offset, block_tokens}, values{blocks, value_offset, block_tokens};
  if (f16) {
    AttendStored<true>(keys, values, len, q, q_stride, queries, head_dim, scale, scores, scores_stride, out,
                       out_stride);
  } else {
    AttendStored<false>(keys, values, len, q, q_stride, queries, head_dim, scale, scores, scores_stride, out,
                        out_stride);
  }
#else
  (void)blocks, (void)key_offset, (void)value_offset, (void)f16, (void)block_tokens, (void)len, (void)q;
  (void)q_stride, (void)queries, (void)head_dim, (void)scale, (void)scores, (void)scores_stride, (void)out;
  (void)out_stride;
#endif
}

}  // namespace lockstep::attention
