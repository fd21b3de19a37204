// The x86 attention kernels of tensor/attention_kernels.cc: AVX2 (+F16C, FMA) for scores and values, AVX-512
// (function-level target attributes, chosen at run time) for the same, and the softmax both share. Each
// reproduces the scalar reference's operations per lane, so every level gives its bits. Included once,
// inside that file's anonymous namespace, after the scalar reference. No include guard.

// ---- AVX2: a key group is two 8-lane halves; up to 6 queries (12 accumulators) in flight. ----

// Queries scored against a key group at a time: 6 x 2 accumulators, two key halves and a broadcast in 16
// registers (one thread, 48 queries x 256 keys, Zen 5 forced avx2: 55 G FMAs/s against 50 with 4 queries,
// 38 with 7, whose accumulators spill).
constexpr int kAvx2ScoreQueries = 6;

inline float HorizontalSum(__m256 v) {  // ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// Scores of kQueries queries against the (up to) 16 positions of one transposed key group, n of them stored.
template <int kQueries>
inline __attribute__((always_inline)) void DotGroupAvx2(const float* q, size_t q_stride, const float* group,
                                                        int head_dim, int n, float scale, float* scores,
                                                        size_t scores_stride) {
  __m256 acc[kQueries][2];
  for (int j = 0; j < kQueries; ++j) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; ++d) {
    const __m256 k0 = _mm256_loadu_ps(group + size_t(d) * kKeyLanes);
    const __m256 k1 = _mm256_loadu_ps(group + size_t(d) * kKeyLanes + 8);
    for (int j = 0; j < kQueries; ++j) {
      const __m256 qd = _mm256_broadcast_ss(q + j * q_stride + d);
      acc[j][0] = _mm256_fmadd_ps(qd, k0, acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(qd, k1, acc[j][1]);
    }
  }
  // Stores without a call (an memcpy of n floats here made GCC keep the accumulators in memory and store
  // all 8 to the stack on every d: 8 stores per 8 FMAs, about half the FMA rate on one store port).
  const __m256 sv = _mm256_set1_ps(scale);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), nv = _mm256_set1_epi32(n);
  const __m256i mask0 = _mm256_cmpgt_epi32(nv, iota);
  const __m256i mask1 = _mm256_cmpgt_epi32(nv, _mm256_add_epi32(iota, _mm256_set1_epi32(8)));
  for (int j = 0; j < kQueries; ++j) {
    float* s = scores + j * scores_stride;
    const __m256 a0 = _mm256_mul_ps(acc[j][0], sv), a1 = _mm256_mul_ps(acc[j][1], sv);
    if (n == kKeyLanes) {
      _mm256_storeu_ps(s, a0);
      _mm256_storeu_ps(s + 8, a1);
    } else {  // the first n scores only (the row's buffer may end there)
      _mm256_maskstore_ps(s, mask0, a0);
      _mm256_maskstore_ps(s + 8, mask1, a1);
    }
  }
}

void DotKeysAvx2(const float* q, size_t q_stride, int queries, const float* keys, int32_t count, int head_dim,
                 float scale, float* scores, size_t scores_stride) {
  for (int32_t s0 = 0; s0 < count; s0 += kKeyLanes) {
    const float* group = keys + size_t(s0) * head_dim;
    const int n = std::min<int32_t>(kKeyLanes, count - s0);
    for (int j = 0; j < queries; j += kAvx2ScoreQueries) {
      const float* qj = q + j * q_stride;
      float* sj = scores + j * scores_stride + s0;
      WithCount<kAvx2ScoreQueries>(std::min(kAvx2ScoreQueries, queries - j), [&](auto k) {
        DotGroupAvx2<k>(qj, q_stride, group, head_dim, n, scale, sj, scores_stride);
      });
    }
  }
}

// Dims [d0, d0 + 8 * kChunks) of kQueries outputs; each value vector is loaded once for all of them. Always
// inlined: an out-of-line copy (GCC 12 made one once a second caller appeared) kept the accumulators in
// memory, a store per FMA, at half the speed (48 queries: 28 against 57 G FMAs/s).
template <int kQueries, int kChunks>
inline __attribute__((always_inline)) void AccumulateChunksAvx2(const float* w, size_t w_stride,
                                                                const float* values, int32_t count,
                                                                int head_dim, int d0, float* out,
                                                                size_t out_stride) {
  __m256 acc[kQueries][kChunks];
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm256_loadu_ps(out + j * out_stride + d0 + 8 * c);
  }
  for (int32_t s = 0; s < count; ++s) {
    const float* v = values + size_t(s) * head_dim + d0;
    __m256 vv[kChunks];
    for (int c = 0; c < kChunks; ++c) vv[c] = _mm256_loadu_ps(v + 8 * c);
    for (int j = 0; j < kQueries; ++j) {
      const __m256 wv = _mm256_broadcast_ss(w + j * w_stride + s);
      for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm256_fmadd_ps(wv, vv[c], acc[j][c]);
    }
  }
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(out + j * out_stride + d0 + 8 * c, acc[j][c]);
  }
}

// Dims [d, head_dim) of kQueries outputs: kChunks chunks of 8 dims at a time, then chunks of 8, then the
// scalar reference's lane-wise tail. kQueries x kChunks accumulators, kChunks value vectors and a broadcast
// weight in 16 registers: each value vector loaded once for kQueries FMAs, and at least 8 accumulators (FMA
// chains) where 16 registers allow. One thread, 64 positions, Zen 5 forced avx2, G FMAs/s: 48 queries 53
// with 6 x 2, 49 with 4 x 2 or 5 x 2, 46 with 4 x 3, 45 one query at a time x 8 chunks, 41 with 2 x 4 or
// 3 x 3; alone, 1 query 45 with 8 chunks (22 with 2), 2 queries 42 with 4 (34 with 2), 3 queries 57 with 4
// (41 with 2 or 3).
constexpr int kAvx2ValueQueries = 6;
constexpr int Avx2ValueChunks(int queries) { return queries == 1 ? 8 : queries <= 3 ? 4 : 2; }
template <int kQueries>
void AccumulateQueriesAvx2(const float* w, size_t w_stride, const float* values, int32_t count, int head_dim,
                           float* out, size_t out_stride, int d = 0) {
  constexpr int kChunks = Avx2ValueChunks(kQueries);
  for (; d + 8 * kChunks <= head_dim; d += 8 * kChunks) {
    AccumulateChunksAvx2<kQueries, kChunks>(w, w_stride, values, count, head_dim, d, out, out_stride);
  }
  for (; d + 8 <= head_dim; d += 8) {
    AccumulateChunksAvx2<kQueries, 1>(w, w_stride, values, count, head_dim, d, out, out_stride);
  }
  if (d < head_dim) {
    for (int j = 0; j < kQueries; ++j) {
      AccumulateValuesScalar(w + j * w_stride, values, count, head_dim, out + j * out_stride, d);
    }
  }
}

void AccumulateValuesAvx2(const float* w, size_t w_stride, int queries, const float* values, int32_t count,
                          int head_dim, float* out, size_t out_stride) {
  for (int j = 0; j < queries; j += kAvx2ValueQueries) {
    const float* wj = w + j * w_stride;
    float* oj = out + j * out_stride;
    WithCount<kAvx2ValueQueries>(std::min(kAvx2ValueQueries, queries - j), [&](auto k) {
      AccumulateQueriesAvx2<k>(wj, w_stride, values, count, head_dim, oj, out_stride);
    });
  }
}

// ---- AVX-512: one 16-lane accumulator per (query, key group): 8 queries x 1 group, or for fewer queries
// (decode) several groups at once, so that at least 8 independent FMA chains are in flight. ----

// Scores of kQueries queries against kGroups consecutive key groups from position s0; positions at or past
// `count` are not stored.
template <int kQueries, int kGroups>
LOCKSTEP_AVX512 inline void DotGroupsAvx512(const float* q, size_t q_stride, const float* keys, int32_t s0,
                                            int32_t count, int head_dim, float scale, float* scores,
                                            size_t scores_stride) {
  __m512 acc[kQueries][kGroups];
  for (int j = 0; j < kQueries; ++j) {
    for (int g = 0; g < kGroups; ++g) acc[j][g] = _mm512_setzero_ps();
  }
  const float* group = keys + size_t(s0) * head_dim;
  const size_t group_floats = size_t(kKeyLanes) * head_dim;
  for (int d = 0; d < head_dim; ++d) {
    __m512 k[kGroups];
    for (int g = 0; g < kGroups; ++g)
      k[g] = _mm512_loadu_ps(group + g * group_floats + size_t(d) * kKeyLanes);
    for (int j = 0; j < kQueries; ++j) {
      const __m512 qd = _mm512_set1_ps(q[j * q_stride + d]);
      for (int g = 0; g < kGroups; ++g) acc[j][g] = _mm512_fmadd_ps(qd, k[g], acc[j][g]);
    }
  }
  const __m512 sv = _mm512_set1_ps(scale);
  for (int g = 0; g < kGroups; ++g) {
    const int32_t first = s0 + g * kKeyLanes;
    const int n = std::min<int32_t>(kKeyLanes, count - first);
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
    for (int j = 0; j < kQueries; ++j) {
      _mm512_mask_storeu_ps(scores + j * scores_stride + first, mask, _mm512_mul_ps(acc[j][g], sv));
    }
  }
}

// kQueries (< 8) queries against every group: ceil(8 / kQueries) groups at a time.
template <int kQueries>
LOCKSTEP_AVX512 void DotFewQueriesAvx512(const float* q, size_t q_stride, const float* keys, int32_t count,
                                         int head_dim, float scale, float* scores, size_t scores_stride) {
  constexpr int kGroups = (8 + kQueries - 1) / kQueries;
  int32_t s0 = 0;
  for (; s0 + kGroups * kKeyLanes <= count; s0 += kGroups * kKeyLanes) {
    DotGroupsAvx512<kQueries, kGroups>(q, q_stride, keys, s0, count, head_dim, scale, scores, scores_stride);
  }
  for (; s0 < count; s0 += kKeyLanes) {
    DotGroupsAvx512<kQueries, 1>(q, q_stride, keys, s0, count, head_dim, scale, scores, scores_stride);
  }
}

LOCKSTEP_AVX512 void DotKeysAvx512(const float* q, size_t q_stride, int queries, const float* keys,
                                   int32_t count, int head_dim, float scale, float* scores,
                                   size_t scores_stride) {
  const int full = queries / 8 * 8;
  // Two key groups at a time (in L1 for all queries): each broadcast query element feeds two FMAs, so the
  // broadcasts no longer compete with the FMAs for issue slots (16 chains; one group: 8).
  for (int32_t s0 = 0; s0 < count && full > 0; s0 += 2 * kKeyLanes) {
    for (int j = 0; j < full; j += 8) {
      if (s0 + kKeyLanes < count) {
        DotGroupsAvx512<8, 2>(q + j * q_stride, q_stride, keys, s0, count, head_dim, scale,
                              scores + j * scores_stride, scores_stride);
      } else {
        DotGroupsAvx512<8, 1>(q + j * q_stride, q_stride, keys, s0, count, head_dim, scale,
                              scores + j * scores_stride, scores_stride);
      }
    }
  }
  const float* qj = q + full * q_stride;
  float* sj = scores + full * scores_stride;
  if (queries > full) {
    WithCount<7>(queries - full, [&](auto k) {
      DotFewQueriesAvx512<k>(qj, q_stride, keys, count, head_dim, scale, sj, scores_stride);
    });
  }
}

// Dims [d0, d0 + 16 * kChunks) of kQueries outputs; each value vector is loaded once for all of them.
template <int kQueries, int kChunks>
LOCKSTEP_AVX512 inline void AccumulateChunksAvx512(const float* w, size_t w_stride, const float* values,
                                                   int32_t count, int head_dim, int d0, float* out,
                                                   size_t out_stride) {
  __m512 acc[kQueries][kChunks];
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm512_loadu_ps(out + j * out_stride + d0 + 16 * c);
  }
  for (int32_t s = 0; s < count; ++s) {
    const float* v = values + size_t(s) * head_dim + d0;
    __m512 vv[kChunks];
    for (int c = 0; c < kChunks; ++c) vv[c] = _mm512_loadu_ps(v + 16 * c);
    for (int j = 0; j < kQueries; ++j) {
      const __m512 wv = _mm512_set1_ps(w[j * w_stride + s]);
      for (int c = 0; c < kChunks; ++c) acc[j][c] = _mm512_fmadd_ps(wv, vv[c], acc[j][c]);
    }
  }
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) _mm512_storeu_ps(out + j * out_stride + d0 + 16 * c, acc[j][c]);
  }
}

template <int kQueries>
LOCKSTEP_AVX512 void AccumulateQueriesAvx512(const float* w, size_t w_stride, const float* values,
                                             int32_t count, int head_dim, float* out, size_t out_stride) {
  int d = 0;
  for (; d + 64 <= head_dim; d += 64) {
    AccumulateChunksAvx512<kQueries, 4>(w, w_stride, values, count, head_dim, d, out, out_stride);
  }
  for (; d + 16 <= head_dim; d += 16) {
    AccumulateChunksAvx512<kQueries, 1>(w, w_stride, values, count, head_dim, d, out, out_stride);
  }
  if (d < head_dim) {  // up to 15 dims: the AVX2 path (lane-wise identical)
    AccumulateQueriesAvx2<kQueries>(w, w_stride, values, count, head_dim, out, out_stride, d);
  }
}

LOCKSTEP_AVX512 void AccumulateValuesAvx512(const float* w, size_t w_stride, int queries, const float* values,
                                            int32_t count, int head_dim, float* out, size_t out_stride) {
  for (int j = 0; j < queries; j += 6) {  // 6 queries x 64 dims: 24 accumulators, each value loaded once
    const float* wj = w + j * w_stride;
    float* oj = out + j * out_stride;
    WithCount<6>(std::min(6, queries - j), [&](auto k) {
      AccumulateQueriesAvx512<k>(wj, w_stride, values, count, head_dim, oj, out_stride);
    });
  }
}

// ---- Softmax ----

inline __m256 KeepFirst(__m256 v, int32_t n) {  // lanes >= n set to +0
  alignas(32) int32_t mask[8];
  for (int i = 0; i < 8; ++i) mask[i] = i < n ? -1 : 0;
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mask))));
}

// The max of x[0..len), written into the padding x[len..padded) as well (there e^0 = 1, masked off later);
// returns it.
float PadWithMax(float* x, int32_t len) {
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int32_t t = 0;
  for (; t + 8 <= len; t += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + t));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mv);
  float max_v = -INFINITY;
  for (float v : lanes) max_v = std::max(max_v, v);
  for (; t < len; ++t) max_v = std::max(max_v, x[t]);
  for (t = len; t < (len + 7) / 8 * 8; ++t) x[t] = max_v;
  return max_v;
}

// x[t..t+8) <- e^(x - max) (lanes at or past len zeroed); returns acc plus those 8 values.
inline __m256 ExpChunk8(float* x, int32_t t, int32_t len, __m256 max_v, __m256 acc) {
  __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + t), max_v));
  if (t + 8 > len) e = KeepFirst(e, len - t);
  _mm256_storeu_ps(x + t, e);
  return _mm256_add_ps(acc, e);
}

SoftmaxStats SoftmaxAvx2(float* x, int32_t len) {
  const float max_v = PadWithMax(x, len);
  const __m256 m = _mm256_set1_ps(max_v);
  const int32_t padded = (len + 7) / 8 * 8;
  __m256 acc = _mm256_setzero_ps();
  for (int32_t t = 0; t < padded; t += 8) acc = ExpChunk8(x, t, len, m, acc);
  const float sum = HorizontalSum(acc);
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (int32_t t = 0; t < padded; t += 8) _mm256_storeu_ps(x + t, _mm256_mul_ps(_mm256_loadu_ps(x + t), inv));
  return {max_v, sum};
}

LOCKSTEP_AVX512 SoftmaxStats SoftmaxAvx512(float* x, int32_t len) {
  const float max_v = PadWithMax(x, len);
  const __m512 m = _mm512_set1_ps(max_v);
  const int32_t padded = (len + 7) / 8 * 8;
  __m256 acc = _mm256_setzero_ps();
  int32_t t = 0;
  for (; t + 16 <= padded; t += 16) {  // exps 16 at a time, summed chunk by chunk of 8 as SoftmaxAvx2
    __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + t), m));
    if (t + 16 > len) e = _mm512_maskz_mov_ps(static_cast<__mmask16>((1u << (len - t)) - 1), e);
    _mm512_storeu_ps(x + t, e);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
  }
  if (t < padded) acc = ExpChunk8(x, t, len, _mm512_castps512_ps256(m), acc);
  const float sum = HorizontalSum(acc);
  const __m512 iv = _mm512_set1_ps(1.0f / sum);
  t = 0;
  for (; t + 16 <= padded; t += 16) _mm512_storeu_ps(x + t, _mm512_mul_ps(_mm512_loadu_ps(x + t), iv));
  if (t < padded) {
    _mm256_storeu_ps(x + t, _mm256_mul_ps(_mm256_loadu_ps(x + t), _mm512_castps512_ps256(iv)));
  }
  return {max_v, sum};
}

// x[0..n) <- e^x, lane by lane as Exp8 (so as every x86 level's Softmax).
void ExpInPlaceAvx2(float* x, int n) {
  for (int i = 0; i < n; i += 8) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(std::min(8, n - i)), lanes);
    _mm256_maskstore_ps(x + i, mask, Exp8(_mm256_maskload_ps(x + i, mask)));
  }
}
