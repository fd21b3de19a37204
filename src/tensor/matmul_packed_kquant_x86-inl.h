// x86 int8 GEMM kernels for packed Q4_K / Q5_K / Q6_K (and Q3_K as Q6_K), Q5_0 / Q5_1 and IQ4_NL / IQ4_XS
// weights, and MXFP4 as IQ4_NL with its own table and f32 scales (layouts in tensor/packed_weights.h),
// included inside namespace lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc after matmul_packed_x86-inl.h.
// Same scheme as the Q8_0/Q4_0 kernels (lanes are output rows), one 32-element sub-block at a time (a Q5_0 /
// Q5_1 unit is one), written once over a small vector-traits struct: 512-bit on AVX-512 targets, two 256-bit
// halves on AVX2. Quants are unsigned (<= 63), so VPMADDUBSW cannot saturate. Bit-identical to
// PackedDotReference. IQ4_NL / IQ4_XS (an IQ4_NL unit is one block, as Q5_0's) look their index nibbles up
// with VPSHUFB: VNNI levels as unsigned kIQ4Values + 128 (VPDPBUSD's 32-bit sums are exact), the dot starting
// at -128 * sum(x) (TileArgs::q8_starts); the others as signed values, whose |w| and x with w's sign make
// VPMADDUBSW pair sums of at most 2 * 127 * 127 (no saturation), widened at once (no kSum16).
//
// Without VNNI (avx2), products are summed in 16 bits before they are widened (V::kSum16): Q4_K's nibbles
// (<= 15) make pair sums of at most 3810, so a sub-block's 8 VPMADDUBSW results add up exactly (<= 30480)
// before one VPMADDWD; Q5_K's, Q5_0's and Q5_1's quants (<= 31) make pair sums of at most 7874, so 4 of them
// (<= 31496) per VPMADDWD, two per sub-block; Q6_K's quants (<= 63) allow two (<= 32004), and the VPMADDWD
// that widens them multiplies by the 16-element half's scale at the same time (no VPMULLD), the -32 offset
// cancelled once per sub-block as -32 * (sc_lo * sum_lo + sc_hi * sum_hi) (one more VPMADDWD). The same exact
// integers.

#if HWY_TARGET == HWY_AVX2
// kVnni: the avx2-vnni level (VEX VPDPBUSD, tensor/matmul_packed_avx2-inl.h's DpbusdVex).
template <bool kVnni>
struct KVecAvx2 {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8, kParts = 2;  // a 16-output group is 2 parts
  static constexpr bool kSum16 = !kVnni, kHasVnni = kVnni;
  static I Load(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I And(I a, I b) { return _mm256_and_si256(a, b); }
  static I Or(I a, I b) { return _mm256_or_si256(a, b); }
  static I Srl16(I a, int n) { return _mm256_srl_epi16(a, _mm_cvtsi32_si128(n)); }
  static I Sll16(I a, int n) { return _mm256_sll_epi16(a, _mm_cvtsi32_si128(n)); }
  static I Bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  static I Ints(int32_t v) { return _mm256_set1_epi32(v); }
  static I Add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I MulLo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I Dot(I acc, I w, I x) {
    if constexpr (kVnni) return DpbusdVex(acc, w, x);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
  }
  // Dot of signed w (|w| <= 127) without VNNI: |w| times x with w's sign (pair sums <= 2 * 127 * 127).
  static I DotSigned(I acc, I w, I x) {
    const I pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return Pin(_mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))));
  }
  // Bytes of `table` (16 bytes, in each 128-bit lane) at the indices idx (each < 16).
  static I Lookup(I table, I idx) { return _mm256_shuffle_epi8(table, idx); }
  static I Table16(const int8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  // kSum16: 16-bit pair sums, their exact sum (the caller keeps it in range), widening with 16-bit factors.
  static I PairSums(I w, I x) { return _mm256_maddubs_epi16(w, x); }
  static I Add16(I a, I b) { return Pin(_mm256_add_epi16(a, b)); }  // Pin: see matmul_packed_avx2-inl.h
  static I Widen(I pairs, I factors) { return _mm256_madd_epi16(pairs, factors); }
  static I Sll32(I a, int n) { return _mm256_slli_epi32(a, n); }
  // Per 32-bit lane, the low 16 bits of lo and the high 16 bits of hi (VPBLENDW: no mask register).
  static I Pair16(I lo, I hi) { return _mm256_blend_epi16(lo, hi, 0xaa); }
  static F ToFloat(I a) { return _mm256_cvtepi32_ps(a); }
  static F Floats(float v) { return _mm256_set1_ps(v); }
  // float(*p) in every lane: a broadcast load and one VCVTDQ2PS (a scalar conversion and a broadcast from a
  // register would take three vector instructions).
  static F IntToFloats(const int32_t* p) { return _mm256_cvtepi32_ps(_mm256_set1_epi32(*p)); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F Zero() { return _mm256_setzero_ps(); }
  static F Halves(const std::byte* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F LoadFloats(const std::byte* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static F U8s(const std::byte* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static I I8s(const std::byte* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static void Store(float* dst, F v, int n) {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    __builtin_memcpy(dst, tmp, sizeof(float) * n);
  }
};
#else
struct KVec {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16, kParts = 1;
  static constexpr bool kSum16 = false, kHasVnni = HWY_TARGET == HWY_AVX3_DL;
  static I Load(const std::byte* p) { return _mm512_loadu_si512(p); }
  static I And(I a, I b) { return _mm512_and_si512(a, b); }
  static I Or(I a, I b) { return _mm512_or_si512(a, b); }
  static I Srl16(I a, int n) { return _mm512_srl_epi16(a, _mm_cvtsi32_si128(n)); }
  static I Sll16(I a, int n) { return _mm512_sll_epi16(a, _mm_cvtsi32_si128(n)); }
  static I Bytes(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
  static I Ints(int32_t v) { return _mm512_set1_epi32(v); }
  static I Add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I MulLo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I Dot(I acc, I w, I x) {
#if HWY_TARGET == HWY_AVX3_DL
    asm("vpdpbusd %[x], %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "v"(x));  // see DotAccumulate
    return acc;
#else
    // Pinned as the AVX2 chains are (Pin in matmul_packed_avx2-inl.h): otherwise GCC adds a chain's products
    // as a tree and computes them all first (the 4-row Q6_K tile kept 85 vectors per sub-block on the stack).
    I sum = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), _mm512_set1_epi16(1)));
    asm("" : "+v"(sum));
    return sum;
#endif
  }
  // Dot of signed w (|w| <= 127) without VNNI: |w| times x negated where w < 0 (pair sums <= 2 * 127 * 127).
  static I DotSigned(I acc, I w, I x) {
    const I signed_x = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    I sum = _mm512_add_epi32(
        acc, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(w), signed_x), _mm512_set1_epi16(1)));
    asm("" : "+v"(sum));
    return sum;
  }
  // Bytes of `table` (16 bytes, in each 128-bit lane) at the indices idx (each < 16).
  static I Lookup(I table, I idx) { return _mm512_shuffle_epi8(table, idx); }
  static I Table16(const int8_t* t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static F ToFloat(I a) { return _mm512_cvtepi32_ps(a); }
  static F Floats(float v) { return _mm512_set1_ps(v); }
  static F IntToFloats(const int32_t* p) { return Floats(static_cast<float>(*p)); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F Neg(F a) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
  }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F Zero() { return _mm512_setzero_ps(); }
  static F Halves(const std::byte* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static F LoadFloats(const std::byte* p) { return _mm512_loadu_ps(p); }
  static F U8s(const std::byte* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static I I8s(const std::byte* p) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void Store(float* dst, F v, int n) {
    _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1), v);
  }
};
#endif

// Q6_K's 6-bit quants (0-63) of one 16-element half (half 0: the low nibbles of v, 1: the high ones) for
// activation group k (0-3): v is the k-th 64-byte quant vector of the sub-block, high the half's high-bit
// vector, whose k-th 2-bit field goes to bits 4-5: ((high >> 2k) & 3) << 4 as one 16-bit shift by 4 - 2k
// (bits 4-5 then come from bits 2k and 2k + 1 of the same byte) and one mask.
template <class V>
HWY_INLINE typename V::I Q6KQuants(typename V::I v, typename V::I high, int k, int half) {
  using I = typename V::I;
  const I low4 = V::Bytes(0x0f);
  const I shifted = k < 2 ? V::Sll16(high, 4 - 2 * k) : k == 2 ? high : V::Srl16(high, 2);
  const I nibble = half == 0 ? V::And(v, low4) : V::And(V::Srl16(v, 4), low4);
  return V::Or(nibble, V::And(shifted, V::Bytes(0x30)));
}

// The quants of nibble vector k (0-3) of a Q4_K / Q5_K sub-block: *lo the low nibbles (elements 4k..), *hi
// the high ones (16 + 4k..). Q5_K ORs in their fifth bits from the sub-block's fifth-bit vector (bit k of a
// byte for the low nibble, bit 4 + k for the high one; tensor/packed_weights.h): one 16-bit shift and one
// mask each, the shift never moving a bit across a byte's bit 4. IQ4_NL / IQ4_XS / MXFP4: `fifth` is the
// table (LookupTable) the index nibbles look up.
template <class V, TensorType kType>
HWY_INLINE void NibbleQuants(typename V::I v, typename V::I fifth, int k, typename V::I* lo,
                             typename V::I* hi) {
  using I = typename V::I;
  const I low4 = V::Bytes(0x0f);
  *lo = V::And(v, low4);
  *hi = V::And(V::Srl16(v, 4), low4);
  if constexpr (IsTableType(kType)) {
    *lo = V::Lookup(fifth, *lo);
    *hi = V::Lookup(fifth, *hi);
  } else if constexpr (HasFifthBit(kType)) {
    const I bit4 = V::Bytes(0x10);
    *lo = V::Or(*lo, V::And(V::Sll16(fifth, 4 - k), bit4));
    *hi = V::Or(*hi, V::And(k == 0 ? fifth : V::Srl16(fifth, k), bit4));
  } else {
    (void)fifth;
  }
}

// A table type's values as the tiles multiply them: with VNNI unsigned, the values + 128 (the dot starting
// at -128 * sum(x), as Q8_0's); without, signed (V::DotSigned).
template <class V, TensorType kType>
HWY_INLINE typename V::I LookupTable() {
  static constexpr Table16 kPlus128 = TablePlus128(kType);
  return V::Table16(V::kHasVnni ? kPlus128.v : TableValues(kType));
}

// Sub-block j's fifth-bit vector (Q5_K; Q5_0 / Q5_1: the unit's one; anything for Q4_K, which ignores it;
// IQ4_NL / IQ4_XS / MXFP4: the lookup table).
template <class V, TensorType kType>
HWY_INLINE typename V::I FifthBits(const std::byte* unit, int j, int bo) {
  if constexpr (IsTableType(kType)) return LookupTable<V, kType>();
  if constexpr (kType == TensorType::kQ5_K) return V::Load(unit + kQ5KHigh + 64 * j + bo);
  if constexpr (kType == TensorType::kQ5_0 || kType == TensorType::kQ5_1) return V::Load(unit + kQ5High + bo);
  return V::Ints(0);
}

#if HWY_TARGET == HWY_AVX2
// Q6_K's kSum16 dots of one 16-element half (kHalf 0: elements 0-15, the low nibbles; 1: 16-31, the high
// nibbles) of sub-block j, added into dot[g][r]: two vectors' pair sums (<= 2 * 16002) per widening, which
// multiplies by the half's scale. Row by row, so that the live vectors are the dots, the float accumulators,
// two weight vectors and one row's temporaries (the 4-row tile fits 16 ymm registers); Pin keeps each dot's
// chain in that order (GCC otherwise computes a half's products first and spills them). kHalf is a template
// argument for the same reason as in matmul_packed_avx2-inl.h.
template <class V, int kGroups, int kRows, int kHalf>
HWY_INLINE void Q6KHalfDotsSum16(const std::byte* const* unit, int j, int bo, int eo, const int8_t* const* q,
                                 int64_t x_off, typename V::I (&dot)[kGroups][kRows]) {
  using I = typename V::I;
  I scale16[kGroups];  // the half's scale in both 16-bit halves of each lane
  for (int g = 0; g < kGroups; ++g) {
    const I sc = V::I8s(unit[g] + kQ6KScales + 32 * j + kPackedGroup * kHalf + eo);
    scale16[g] = V::Pair16(sc, V::Sll32(sc, 16));
  }
  for (int k0 = 0; k0 < 4; k0 += 2) {
    I w[2][kGroups];
    for (int i = 0; i < 2; ++i) {
      for (int g = 0; g < kGroups; ++g) {
        const I v = V::Load(unit[g] + 256 * j + bo + 64 * (k0 + i));
        const I high = V::Load(unit[g] + kQ6KHigh + 128 * j + 64 * kHalf + bo);
        w[i][g] = Q6KQuants<V>(v, high, k0 + i, kHalf);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      int32_t x0, x1;
      __builtin_memcpy(&x0, q[r] + x_off + 16 * kHalf + 4 * k0, 4);
      __builtin_memcpy(&x1, q[r] + x_off + 16 * kHalf + 4 * k0 + 4, 4);
      const I xa = V::Ints(x0), xb = V::Ints(x1);
      for (int g = 0; g < kGroups; ++g) {
        const I sum16 = V::Add16(V::PairSums(w[0][g], xa), V::PairSums(w[1][g], xb));
        dot[g][r] = Pin(V::Add(dot[g][r], V::Widen(sum16, scale16[g])));
      }
    }
  }
}

// V::kSum16's sub-block dots (16-bit sums, then widenings), into dot[g][r]: Q4_K / Q5_K / Q5_0 / Q5_1 the
// exact dot of the stored quants (Q5_0's offset of 16 is the caller's), Q6_K sc_lo *
// dot(elements 0-15) + sc_hi * dot(16-31) with the quants' offset of 32 cancelled. q[r] + x_off: the
// sub-block's activation quants; sums16 + r * sums16_stride: its two 16-element sums.
template <class V, TensorType kType, int kGroups, int kRows>
HWY_INLINE void SubBlockDotsSum16(const std::byte* const* unit, int j, int bo, int eo, const int8_t* const* q,
                                  int64_t x_off, const int32_t* sums16, int64_t sums16_stride,
                                  typename V::I (&dot)[kGroups][kRows]) {
  using I = typename V::I;
  if constexpr (kType != TensorType::kQ6_K) {
    const I ones16 = V::Ints(0x00010001);
    // Q4_K: 8 pair sums (<= 8 * 3810) per widening; Q5_K, Q5_0, Q5_1: 4 (<= 4 * 7874), so widened after k = 1
    // and 3.
    constexpr int kWidenEvery = HasFifthBit(kType) ? 2 : 4;
    I sum16[kGroups][kRows];
    I fifth[kGroups];
    for (int g = 0; g < kGroups; ++g) fifth[g] = FifthBits<V, kType>(unit[g], j, bo);
    for (int k = 0; k < 4; ++k) {
      if (k % kWidenEvery == 0) {
        for (int g = 0; g < kGroups; ++g) {
          for (int r = 0; r < kRows; ++r) sum16[g][r] = V::Ints(0);
        }
      }
      I w_lo[kGroups], w_hi[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        NibbleQuants<V, kType>(V::Load(unit[g] + 256 * j + bo + 64 * k), fifth[g], k, &w_lo[g], &w_hi[g]);
      }
      for (int r = 0; r < kRows; ++r) {
        int32_t x_lo, x_hi;
        __builtin_memcpy(&x_lo, q[r] + x_off + 4 * k, 4);
        __builtin_memcpy(&x_hi, q[r] + x_off + 16 + 4 * k, 4);
        const I xl = V::Ints(x_lo), xh = V::Ints(x_hi);
        for (int g = 0; g < kGroups; ++g) {
          sum16[g][r] = V::Add16(V::Add16(sum16[g][r], V::PairSums(w_lo[g], xl)), V::PairSums(w_hi[g], xh));
        }
      }
      if (k % kWidenEvery == kWidenEvery - 1) {
        for (int g = 0; g < kGroups; ++g) {
          for (int r = 0; r < kRows; ++r) {
            const I wide = V::Widen(sum16[g][r], ones16);
            dot[g][r] = k < kWidenEvery ? wide : Pin(V::Add(dot[g][r], wide));
          }
        }
      }
    }
  } else {
    static_assert(kType == TensorType::kQ6_K);
    // The dots start at the offset term, -32 * (sc_lo * sum_lo + sc_hi * sum_hi): one VPMADDWD of the 16-bit
    // pairs (32 * sc_lo, 32 * sc_hi) (|.| <= 4096) and (-sum_lo, -sum_hi) (|.| <= 2032). Every term is an
    // exact integer, so the order of the adds does not change the dot.
    for (int g = 0; g < kGroups; ++g) {
      const std::byte* scales = unit[g] + kQ6KScales + 32 * j + eo;
      asm("" : "+r"(scales));  // opaque: otherwise GCC keeps sc_hi live through half 0 for half 1 (a spill)
      const I sc_lo = V::I8s(scales);
      const I sc_hi = V::I8s(scales + kPackedGroup);
      const I pair_scales = V::Pair16(V::Sll32(sc_lo, 5), V::Sll32(sc_hi, 21));
      for (int r = 0; r < kRows; ++r) {
        const int32_t* s16 = sums16 + r * sums16_stride;
        const uint32_t neg_sums = (-uint32_t(s16[0]) & 0xffffu) | (-uint32_t(s16[1]) << 16);
        dot[g][r] = V::Widen(pair_scales, V::Ints(int32_t(neg_sums)));
      }
    }
    Q6KHalfDotsSum16<V, kGroups, kRows, 0>(unit, j, bo, eo, q, x_off, dot);
    Q6KHalfDotsSum16<V, kGroups, kRows, 1>(unit, j, bo, eo, q, x_off, dot);
  }
}
#endif

// Q6_K's dots with V::Dot (VPDPBUSD, or AVX-512's VPMADDUBSW + VPMADDWD) of the 16-element halves [kH0, kH0 +
// kHalves) of sub-block j (half 0: elements 0-15, the low nibbles; 1: 16-31, the high nibbles), folded into
// total[g][r] = sc_lo * dot(0-15) + sc_hi * dot(16-31) (half 0 sets it, half 1 adds to it). Each dot starts
// at -32 * (the half's activation sum), the quants' offset. Exact integers in another order: the same bits.
// One half at a time (AVX-512), only one half's dots are live beside the totals and the float accumulators;
// both at once (AVX2), each weight vector is loaded once and the core has twice the independent chains.
template <class V, int kGroups, int kRows, int kH0, int kHalves>
HWY_INLINE void Q6KHalfDots(const std::byte* const* unit, int j, int bo, int eo, const int8_t* const* q,
                            int64_t x_off, const int32_t* sums16, int64_t sums16_stride,
                            typename V::I (&total)[kGroups][kRows]) {
  using I = typename V::I;
  I dot[kHalves][kGroups][kRows];
  for (int h = 0; h < kHalves; ++h) {
    for (int r = 0; r < kRows; ++r) {
      const I start = V::Ints(-32 * sums16[r * sums16_stride + kH0 + h]);
      for (int g = 0; g < kGroups; ++g) dot[h][g][r] = start;
    }
  }
  for (int k = 0; k < 4; ++k) {
    I w[kHalves][kGroups];
    for (int g = 0; g < kGroups; ++g) {
      const I v = V::Load(unit[g] + 256 * j + bo + 64 * k);
      for (int h = 0; h < kHalves; ++h) {
        const I high = V::Load(unit[g] + kQ6KHigh + 128 * j + 64 * (kH0 + h) + bo);
        w[h][g] = Q6KQuants<V>(v, high, k, kH0 + h);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      for (int h = 0; h < kHalves; ++h) {
        int32_t xk;
        __builtin_memcpy(&xk, q[r] + x_off + 16 * (kH0 + h) + 4 * k, 4);
        const I x = V::Ints(xk);
        for (int g = 0; g < kGroups; ++g) dot[h][g][r] = V::Dot(dot[h][g][r], w[h][g], x);
      }
    }
  }
  for (int h = 0; h < kHalves; ++h) {
    for (int g = 0; g < kGroups; ++g) {
      const I sc = V::I8s(unit[g] + kQ6KScales + 32 * j + kPackedGroup * (kH0 + h) + eo);
      for (int r = 0; r < kRows; ++r) {
        const I product = V::MulLo(dot[h][g][r], sc);
        total[g][r] = kH0 + h == 0 ? product : V::Add(total[g][r], product);
      }
    }
  }
}

// y for the outputs of `part` of 16-output groups [group0, group0 + kGroups) (KVec::kLanes outputs each) and
// rows [r0, r0 + kRows). Each broadcast activation group serves kGroups dots, each unpacked weight vector
// kRows. kStream: the tile streams the weights from memory (the first row tile) and prefetches ahead.
// Q5_0 / Q5_1 units are one 32-element block (one "sub-block" each, its d (and m) per output).
// kSumD (HasMinTerm types, only where TileArgs::sum_d_exact): the min term from TileArgs::sum_d (same bits;
// per sub-block one conversion per row and one multiply per (group, row) fewer; SumDIsExact in
// tensor/matmul_simd.h).
template <class V, TensorType kType, int kGroups, int kRows, bool kStream, bool kSumD>
HWY_NOINLINE void KQuantMicroTile(const TileArgs& a, int64_t group0, int part, int64_t r0) {
  using I = typename V::I;
  using F = typename V::F;
  const PackedWeights& p = *a.packed;
  const int64_t blocks = a.in / kActBlock;
  const int bo = 32 * part;         // byte offset of this part inside every 64-byte vector
  const int eo = V::kLanes * part;  // element offset inside every per-output array
  F acc[kGroups][kRows];
  for (int g = 0; g < kGroups; ++g) {
    for (int r = 0; r < kRows; ++r) acc[g][r] = V::Zero();
  }
  const int8_t* q[kRows];
  for (int r = 0; r < kRows; ++r) q[r] = a.q + (r0 + r) * a.q_stride;
  // Q6_K: one half at a time on AVX-512 (32 registers; 2 groups x 4 rows make 8 chains per half): the 4-row
  // tiles kept 4 (avx512-vnni) and 18 (avx512) vectors per sub-block on the stack with both halves' dots
  // live, none and 4 this way. avx2-vnni (16 registers, 4 chains per half) keeps both halves: one at a time
  // spilled less (3 against 8) but ran 2-7% slower on Zen 5.
  constexpr bool kQ6KHalfAtATime = V::kParts == 1;
  // Streaming: while computing sub-block j of a unit, prefetch the j-th eighth of the next unit (one unit,
  // 2-3 KiB, ahead; packed_weights.h). Q5_0 / Q5_1: the unit about kPrefetchBytes ahead, as Q4_0's tiles.
  constexpr int kSub = IsKQuant(kType) ? 8 : 1;  // blocks per unit
  const int64_t eighth = (p.unit_bytes / 8 + 63) / 64 * 64;
  const int64_t ahead = (kPrefetchBytes + p.unit_bytes - 1) / p.unit_bytes;
  for (int64_t s = 0; s < p.units; ++s) {
    const std::byte* unit[kGroups];
    F d[kGroups], dmin[kGroups];  // Q5_1: dmin is m
    for (int g = 0; g < kGroups; ++g) {
      unit[g] = p.Unit(group0 + g, s);
      if constexpr (kType == TensorType::kMXFP4) {
        d[g] = V::LoadFloats(unit[g] + PackedScaleOffset(kType) + 4 * eo);
      } else if constexpr (!IsKQuant(kType)) {
        d[g] = V::Halves(unit[g] + PackedScaleOffset(kType) + 2 * eo);
        if constexpr (kType == TensorType::kQ5_1) dmin[g] = V::Halves(unit[g] + kQ5M + 2 * eo);
      } else if constexpr (HasMinTerm(kType)) {
        d[g] = V::Halves(unit[g] + kQ4KD + 2 * eo);
        dmin[g] = V::Halves(unit[g] + kQ4KDmin + 2 * eo);
      } else {
        d[g] = V::Halves(unit[g] + (kType == TensorType::kIQ4_XS ? kIQ4XSD : kQ6KD) + 2 * eo);
      }
    }
    for (int j = 0; j < kSub; ++j) {
      const int64_t b = kSub * s + j;
      if (!IsKQuant(kType) && kStream && s + ahead < p.units) {
        for (int g = 0; g < kGroups; ++g) PrefetchBytes(p.Unit(group0 + g, s + ahead), 0, p.unit_bytes);
      } else if (IsKQuant(kType) && kStream && s + 1 < p.units) {
        for (int g = 0; g < kGroups; ++g) {
          PrefetchBytes(p.Unit(group0 + g, s + 1), j * eighth, std::min(p.unit_bytes, (j + 1) * eighth));
        }
      }
      // Q6_K: sc_lo * dot(0-15) + sc_hi * dot(16-31); the others: the sub-block's dot
      I dot_lo[kGroups][kRows];
      if constexpr (V::kSum16 && !IsTableType(kType)) {  // table products need 16 bits (DotSigned)
        SubBlockDotsSum16<V, kType, kGroups, kRows>(unit, j, bo, eo, q, 32 * b,
                                                    a.sums16 + r0 * 2 * blocks + 2 * b, 2 * blocks, dot_lo);
      } else if constexpr (kType == TensorType::kQ6_K) {
        const int32_t* sums16 = a.sums16 + r0 * 2 * blocks + 2 * b;
        if constexpr (kQ6KHalfAtATime) {
          Q6KHalfDots<V, kGroups, kRows, 0, 1>(unit, j, bo, eo, q, 32 * b, sums16, 2 * blocks, dot_lo);
          Q6KHalfDots<V, kGroups, kRows, 1, 1>(unit, j, bo, eo, q, 32 * b, sums16, 2 * blocks, dot_lo);
        } else {
          Q6KHalfDots<V, kGroups, kRows, 0, 2>(unit, j, bo, eo, q, 32 * b, sums16, 2 * blocks, dot_lo);
        }
      } else {
        // Q5_0 starts at -16 * sum(x), cancelling the quants' offset; tables with VNNI at -128 * sum(x).
        constexpr bool kUnsignedTable = IsTableType(kType) && V::kHasVnni;
        constexpr bool kSignedTable = IsTableType(kType) && !V::kHasVnni;
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = (r0 + r) * blocks + b;
          const I start = kType == TensorType::kQ5_0 ? V::Ints(-16 * a.sums[i])
                          : kUnsignedTable           ? V::Ints(a.q8_starts[i])
                                                     : V::Ints(0);
          for (int g = 0; g < kGroups; ++g) dot_lo[g][r] = start;
        }
        I fifth[kGroups];
        for (int g = 0; g < kGroups; ++g) fifth[g] = FifthBits<V, kType>(unit[g], j, bo);
        for (int k = 0; k < 4; ++k) {
          I w_lo[kGroups], w_hi[kGroups];
          for (int g = 0; g < kGroups; ++g) {
            NibbleQuants<V, kType>(V::Load(unit[g] + 256 * j + bo + 64 * k), fifth[g], k, &w_lo[g], &w_hi[g]);
          }
          for (int r = 0; r < kRows; ++r) {
            int32_t x_lo, x_hi;
            __builtin_memcpy(&x_lo, q[r] + 32 * b + 4 * k, 4);
            __builtin_memcpy(&x_hi, q[r] + 32 * b + 16 + 4 * k, 4);
            const I xl = V::Ints(x_lo), xh = V::Ints(x_hi);
            for (int g = 0; g < kGroups; ++g) {  // one scale for the sub-block: one accumulator
              if constexpr (kSignedTable) {
                dot_lo[g][r] = V::DotSigned(V::DotSigned(dot_lo[g][r], w_lo[g], xl), w_hi[g], xh);
              } else {
                dot_lo[g][r] = V::Dot(V::Dot(dot_lo[g][r], w_lo[g], xl), w_hi[g], xh);
              }
            }
          }
        }
      }
      for (int g = 0; g < kGroups; ++g) {
        if constexpr (HasMinTerm(kType)) {
          F scale = d[g], min_scale = dmin[g];  // Q5_1: d and m
          if constexpr (IsKQuant(kType)) {
            scale = V::Mul(d[g], V::U8s(unit[g] + kQ4KScales + kPackedGroup * j + eo));
            min_scale = V::Neg(V::Mul(dmin[g], V::U8s(unit[g] + kQ4KMins + kPackedGroup * j + eo)));
          }
          for (int r = 0; r < kRows; ++r) {
            const int64_t i = (r0 + r) * blocks + b;
            const F dx = V::Floats(a.d[i]);
            acc[g][r] = V::Fma(V::ToFloat(dot_lo[g][r]), V::Mul(scale, dx), acc[g][r]);
            if constexpr (kSumD) {
              acc[g][r] = V::Fma(V::Floats(a.sum_d[i]), min_scale, acc[g][r]);
            } else {
              acc[g][r] = V::Fma(V::IntToFloats(a.sums + i), V::Mul(min_scale, dx), acc[g][r]);
            }
          }
        } else if constexpr (IsTableType(kType)) {  // d, IQ4_XS times the sub-block's scale ls - 32
          F scale = d[g];
          if constexpr (kType == TensorType::kIQ4_XS) {
            scale = V::Mul(d[g], V::ToFloat(V::I8s(unit[g] + kIQ4XSScales + kPackedGroup * j + eo)));
          }
          for (int r = 0; r < kRows; ++r) {
            const int64_t i = (r0 + r) * blocks + b;
            acc[g][r] = V::Fma(V::ToFloat(dot_lo[g][r]), V::Mul(scale, V::Floats(a.d[i])), acc[g][r]);
          }
        } else if constexpr (kType == TensorType::kQ5_0) {
          for (int r = 0; r < kRows; ++r) {
            const int64_t i = (r0 + r) * blocks + b;
            I dot = dot_lo[g][r];  // kSum16: - 16 * sum(x) here (the other dots started there)
            if constexpr (V::kSum16) dot = V::Add(dot, V::Ints(-16 * a.sums[i]));
            acc[g][r] = V::Fma(V::ToFloat(dot), V::Mul(d[g], V::Floats(a.d[i])), acc[g][r]);
          }
        } else {
          F dg = d[g];
          if constexpr (!V::kSum16) {  // d read again here: a register fewer through the dots (no spill)
            const std::byte* dp = unit[g] + kQ6KD + 2 * eo;
            asm("" : "+r"(dp));  // opaque: otherwise GCC reads d once per unit and keeps it
            dg = V::Halves(dp);
          }
          for (int r = 0; r < kRows; ++r) {  // dot_lo: sc_lo * dot(0-15) + sc_hi * dot(16-31) already
            acc[g][r] = V::Fma(V::ToFloat(dot_lo[g][r]), V::Mul(dg, V::Floats(a.d[(r0 + r) * blocks + b])),
                               acc[g][r]);
          }
        }
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    const int64_t o0 = (group0 + g) * kPackedGroup + eo;
    const int n = static_cast<int>(std::min<int64_t>(V::kLanes, a.out - o0));
    if (n <= 0) continue;
    for (int r = 0; r < kRows; ++r) V::Store(a.y + (r0 + r) * a.out + o0, acc[g][r], n);
  }
}

#if HWY_TARGET == HWY_AVX2
using KVec = KVecAvx2<false>;
#endif

// Groups per tile: two on AVX-512 (each broadcast activation group then feeds two dots), one on AVX2 (whose
// 16-output group is already two 8-output parts).
inline constexpr int kKQuantGroups = KVec::kParts == 1 ? 2 : 1;

// Rows [r0, a.rows), fewer than a full row tile.
template <class V, TensorType kType, int kGroups, bool kStream, bool kSumD>
HWY_INLINE void KQuantLastRows(const TileArgs& a, int64_t group0, int part, int64_t r0) {
  switch (a.rows - r0) {
    case 3:
      return KQuantMicroTile<V, kType, kGroups, 3, kStream, kSumD>(a, group0, part, r0);
    case 2:
      return KQuantMicroTile<V, kType, kGroups, 2, kStream, kSumD>(a, group0, part, r0);
    case 1:
      return KQuantMicroTile<V, kType, kGroups, 1, kStream, kSumD>(a, group0, part, r0);
    default:
      return;
  }
}

// The first row tile of part 0 streams the weights from memory (kStream), the others find them in cache
// (an AVX2 group's two parts share every 64-byte line).
template <class V, TensorType kType, int kGroups, bool kSumD>
HWY_INLINE void KQuantRowsLoop(const TileArgs& a, int64_t group0, int part) {
  constexpr int kRows = 4;
  if (a.rows < kRows) {
    if (part == 0) return KQuantLastRows<V, kType, kGroups, true, kSumD>(a, group0, part, 0);
    return KQuantLastRows<V, kType, kGroups, false, kSumD>(a, group0, part, 0);
  }
  if (part == 0) {
    KQuantMicroTile<V, kType, kGroups, kRows, true, kSumD>(a, group0, part, 0);
  } else {
    KQuantMicroTile<V, kType, kGroups, kRows, false, kSumD>(a, group0, part, 0);
  }
  int64_t r0 = kRows;
  for (; r0 + kRows <= a.rows; r0 += kRows)
    KQuantMicroTile<V, kType, kGroups, kRows, false, kSumD>(a, group0, part, r0);
  KQuantLastRows<V, kType, kGroups, false, kSumD>(a, group0, part, r0);
}

template <TensorType kType, class V, bool kSumD>
HWY_INLINE void KQuantPackedTileWith(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  constexpr int kGroups = kKQuantGroups;
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  int64_t g = o_begin / kPackedGroup;
  for (; g + kGroups <= group_end; g += kGroups) {  // (a part past the matrix's outputs is skipped)
    for (int part = 0; part < V::kParts; ++part) {
      if (g * kPackedGroup + part * V::kLanes < a.out) KQuantRowsLoop<V, kType, kGroups, kSumD>(a, g, part);
    }
  }
  for (; g < group_end; ++g) {
    for (int part = 0; part < V::kParts; ++part) {
      if (g * kPackedGroup + part * V::kLanes < a.out) KQuantRowsLoop<V, kType, 1, kSumD>(a, g, part);
    }
  }
}

template <TensorType kType, class V = KVec>
HWY_INLINE void KQuantPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  if constexpr (HasMinTerm(kType)) {
    if (a.sum_d_exact) return KQuantPackedTileWith<kType, V, true>(a, o_begin, o_end);
  }
  KQuantPackedTileWith<kType, V, false>(a, o_begin, o_end);
}
