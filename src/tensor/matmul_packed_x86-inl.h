// x86 int8 GEMM kernels for packed weights (tensor/packed_weights.h), included inside namespace
// lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc after matmul_x86-inl.h. Lanes are output rows: each 4-byte
// activation group is broadcast and multiplied into 16 outputs at once (one 512-bit vector on AVX-512
// targets, two 256-bit halves on AVX2), so a weight tile loaded once serves a tile of activation rows
// (kPackedRowsFor; AVX2: tensor/matmul_packed_avx2-inl.h). Integer block dots are exact; the float order is
// the packed order of tensor/matmul_internal.h, bit-identical to PackedDotReference on every target.

#if HWY_TARGET == HWY_AVX2
#include "tensor/matmul_packed_avx2-inl.h"
#else
// ---- AVX-512 (AVX3, AVX3_DL): one 512-bit vector per 16-output group. ----
// A tile is 3 groups x 4 rows (Q8_0) or 2 x 4 (Q4_0, which needs two registers per weight load): 12 (8)
// chains of 8 dots per block keep both VPDPBUSD ports busy. The scale product weight scale * activation scale
// is VSCALEFPS (activation scales are powers of two, tensor/matmul_internal.h), which runs beside the dots;
// a VMULPS would take a dot's port (on Zen 5 the dots share two ports with multiplies and FMAs). Q8_0 dots
// start from a broadcast load of q8_starts rather than a scalar computed and moved into a vector.
template <TensorType kType>
inline constexpr int kPackedGroupsPerTile = kType == TensorType::kQ8_0 ? 3 : 2;
template <TensorType kType>
inline constexpr int kPackedRowsFor = 4;

template <TensorType kType>
HWY_INLINE void LoadPackedPair(const std::byte* block, int k, __m512i* lo, __m512i* hi) {
  if constexpr (kType == TensorType::kQ8_0) {
    *lo = _mm512_loadu_si512(block + 64 * k);
    *hi = _mm512_loadu_si512(block + 64 * (k + 4));
  } else {
    const __m512i v = _mm512_loadu_si512(block + 64 * k);
    const __m512i mask = _mm512_set1_epi8(0x0f);
    *lo = _mm512_and_si512(v, mask);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
  }
}

template <TensorType kType>
HWY_INLINE __m512i DotAccumulate(__m512i acc, __m512i w_u8, __m512i x_s8) {
#if HWY_TARGET == HWY_AVX3_DL
  // Inline assembly: Highway 1.0.3's AVX3_DL target attributes enable AVX-VNNI but not AVX512-VNNI, so the
  // compiler refuses the intrinsic; the CPUs this target is chosen for have AVX512-VNNI.
  asm("vpdpbusd %[x], %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w_u8), [x] "v"(x_s8));
  return acc;
#else
  const __m512i ones16 = _mm512_set1_epi16(1);
  if constexpr (kType == TensorType::kQ4_0) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w_u8, x_s8), ones16));
  } else {
    const __m512i w = _mm512_xor_si512(w_u8, _mm512_set1_epi8(static_cast<char>(0x80)));
    const __mmask64 negative = _mm512_movepi8_mask(w);
    const __m512i signed_x = _mm512_mask_sub_epi8(x_s8, negative, _mm512_setzero_si512(), x_s8);
    const __m512i dot = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(w), signed_x), ones16);
    const __m512i x128 =
        _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(1), x_s8), _mm512_set1_epi16(128));
    return _mm512_add_epi32(acc, _mm512_add_epi32(dot, x128));
  }
#endif
}

// The block dots of one tile: dot[g][r] += weights of group g (block wb[g]) x activation row r (q[r]).
template <TensorType kType, int kGroups, int kRows>
HWY_INLINE void PackedBlockDots(const std::byte* const* wb, const int8_t* const* q,
                                __m512i (&dot)[kGroups][kRows]) {
  if constexpr (kType == TensorType::kQ8_0) {  // one weight vector live per group
    for (int k = 0; k < 8; ++k) {
      __m512i w[kGroups];
      for (int g = 0; g < kGroups; ++g) w[g] = _mm512_loadu_si512(wb[g] + 64 * k);
      for (int r = 0; r < kRows; ++r) {
        int32_t xk;
        __builtin_memcpy(&xk, q[r] + 4 * k, 4);
        const __m512i x = _mm512_set1_epi32(xk);
        for (int g = 0; g < kGroups; ++g) dot[g][r] = DotAccumulate<kType>(dot[g][r], w[g], x);
      }
    }
  } else {  // one load gives two weight vectors (low and high nibbles)
    for (int k = 0; k < 4; ++k) {
      __m512i w_lo[kGroups], w_hi[kGroups];
      for (int g = 0; g < kGroups; ++g) LoadPackedPair<kType>(wb[g], k, &w_lo[g], &w_hi[g]);
      for (int r = 0; r < kRows; ++r) {
        int32_t x_lo, x_hi;
        __builtin_memcpy(&x_lo, q[r] + 4 * k, 4);
        __builtin_memcpy(&x_hi, q[r] + 4 * (k + 4), 4);
        const __m512i xl = _mm512_set1_epi32(x_lo), xh = _mm512_set1_epi32(x_hi);
        for (int g = 0; g < kGroups; ++g) {
          dot[g][r] = DotAccumulate<kType>(dot[g][r], w_lo[g], xl);
          dot[g][r] = DotAccumulate<kType>(dot[g][r], w_hi[g], xh);
        }
      }
    }
  }
}

// kStream: the tile streams the weights from memory (the first row tile) and prefetches about kPrefetchBytes
// ahead in each group (packed_weights.h); a separate instantiation, so the other tiles' loop is unchanged.
template <TensorType kType, int kGroups, int kRows, bool kStream>
HWY_NOINLINE void PackedMicroTile(const TileArgs& a, int64_t group0, int64_t r0) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = p.units;
  __m512 acc[kGroups][kRows];
  for (int g = 0; g < kGroups; ++g) {
    for (int r = 0; r < kRows; ++r) acc[g][r] = _mm512_setzero_ps();
  }
  const int8_t* q[kRows];
  const float* d[kRows];
  const int32_t* starts[kRows];  // Q8_0: q8_starts; Q4_0: sums (times -offset below)
  for (int r = 0; r < kRows; ++r) {
    q[r] = a.q + (r0 + r) * a.q_stride;
    d[r] = a.d + (r0 + r) * blocks;
    starts[r] = (kType == TensorType::kQ8_0 ? a.q8_starts : a.sums) + (r0 + r) * blocks;
  }
  const int64_t ahead = (kPrefetchBytes + p.unit_bytes - 1) / p.unit_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* wb[kGroups];
    for (int g = 0; g < kGroups; ++g) wb[g] = p.Unit(group0 + g, b);
    if (kStream && b + ahead < blocks) {
      for (int g = 0; g < kGroups; ++g) PrefetchBytes(p.Unit(group0 + g, b + ahead), 0, p.unit_bytes);
    }
    const int8_t* qb[kRows];
    __m512i dot[kGroups][kRows];
    for (int r = 0; r < kRows; ++r) {  // start at -offset * sum(x): cancels the weights' offset exactly
      qb[r] = q[r] + 32 * b;
      const __m512i start = _mm512_set1_epi32(
          kType == TensorType::kQ8_0 ? starts[r][b] : -PackedValueOffset(kType) * starts[r][b]);
      for (int g = 0; g < kGroups; ++g) dot[g][r] = start;
    }
    PackedBlockDots<kType, kGroups, kRows>(wb, qb, dot);
    __m512 exponent[kRows];  // log2 of the activation scale (-inf for a zero block: the scale becomes 0)
    for (int r = 0; r < kRows; ++r) exponent[r] = _mm512_getexp_ps(_mm512_set1_ps(d[r][b]));
    for (int g = 0; g < kGroups; ++g) {
      const __m512 dw = _mm512_cvtph_ps(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[g] + PackedScaleOffset(kType))));
      for (int r = 0; r < kRows; ++r) {
        const __m512 scale = _mm512_scalef_ps(dw, exponent[r]);  // == dw * d, exactly as rounded
        acc[g][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[g][r]), scale, acc[g][r]);
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    const int64_t o0 = (group0 + g) * kPackedGroup;
    const int64_t n = std::min<int64_t>(kPackedGroup, a.out - o0);
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
    for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(a.y + (r0 + r) * a.out + o0, mask, acc[g][r]);
  }
}
#endif

#if HWY_TARGET != HWY_AVX2
template <TensorType kType, int kGroups, int kRows, bool kStream>
HWY_INLINE void PackedTile(const TileArgs& a, int64_t group0, int64_t r0) {
  PackedMicroTile<kType, kGroups, kRows, kStream>(a, group0, r0);
}

// Rows [r0, a.rows), fewer than a full row tile.
template <TensorType kType, int kGroups, bool kStream>
HWY_INLINE void PackedLastRows(const TileArgs& a, int64_t group0, int64_t r0) {
  static_assert(kPackedRowsFor<kType> <= 4);
  switch (a.rows - r0) {
    case 3:
      return PackedTile<kType, kGroups, 3, kStream>(a, group0, r0);
    case 2:
      return PackedTile<kType, kGroups, 2, kStream>(a, group0, r0);
    case 1:
      return PackedTile<kType, kGroups, 1, kStream>(a, group0, r0);
    default:
      return;
  }
}

// The first row tile streams the group's weights from memory (kStream), the others find them in cache.
template <TensorType kType, int kGroups>
HWY_INLINE void PackedRowsLoop(const TileArgs& a, int64_t group0) {
  constexpr int kPackedRows = kPackedRowsFor<kType>;
  if (a.rows < kPackedRows) return PackedLastRows<kType, kGroups, true>(a, group0, 0);
  PackedTile<kType, kGroups, kPackedRows, true>(a, group0, 0);
  int64_t r0 = kPackedRows;
  for (; r0 + kPackedRows <= a.rows; r0 += kPackedRows)
    PackedTile<kType, kGroups, kPackedRows, false>(a, group0, r0);
  PackedLastRows<kType, kGroups, false>(a, group0, r0);
}

template <TensorType kType>
HWY_INLINE void PackedTileTyped(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  int64_t g = o_begin / kPackedGroup;
  constexpr int kGroups = kPackedGroupsPerTile<kType>;
  for (; g + kGroups <= group_end; g += kGroups) PackedRowsLoop<kType, kGroups>(a, g);
  if constexpr (kGroups > 2) {
    if (g + 2 <= group_end) {
      PackedRowsLoop<kType, 2>(a, g);
      g += 2;
    }
  }
  for (; g < group_end; ++g) PackedRowsLoop<kType, 1>(a, g);
}

#else
template <TensorType kType>
HWY_INLINE void PackedTileTyped(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  Avx2PackedTileTyped<kType, false>(a, o_begin, o_end);
}
#endif

#include "tensor/matmul_packed_kquant_x86-inl.h"

inline void PackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.type) {
    case TensorType::kQ8_0:
      return PackedTileTyped<TensorType::kQ8_0>(a, o_begin, o_end);
    case TensorType::kQ4_0:
      return PackedTileTyped<TensorType::kQ4_0>(a, o_begin, o_end);
    case TensorType::kQ4_K:
      return KQuantPackedTile<TensorType::kQ4_K>(a, o_begin, o_end);
    case TensorType::kQ5_K:
      return KQuantPackedTile<TensorType::kQ5_K>(a, o_begin, o_end);
    case TensorType::kQ5_0:
      return KQuantPackedTile<TensorType::kQ5_0>(a, o_begin, o_end);
    case TensorType::kQ5_1:
      return KQuantPackedTile<TensorType::kQ5_1>(a, o_begin, o_end);
    case TensorType::kQ6_K:
    case TensorType::kQ3_K:  // packed as Q6_K
      return KQuantPackedTile<TensorType::kQ6_K>(a, o_begin, o_end);
    case TensorType::kIQ4_NL:
      return KQuantPackedTile<TensorType::kIQ4_NL>(a, o_begin, o_end);
    case TensorType::kIQ4_XS:
      return KQuantPackedTile<TensorType::kIQ4_XS>(a, o_begin, o_end);
    case TensorType::kMXFP4:
      return KQuantPackedTile<TensorType::kMXFP4>(a, o_begin, o_end);
    default:
      HWY_ASSERT(false);
  }
}
