// x86 int8 GEMM kernels for packed Q4_K / Q6_K weights (layouts in tensor/packed_weights.h), included inside
// namespace lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc after matmul_packed_x86-inl.h. Same scheme as
// the Q8_0/Q4_0 kernels (lanes are output rows), one 32-element sub-block at a time, written once over a
// small vector-traits struct: 512-bit on AVX-512 targets, two 256-bit halves on AVX2. Quants are unsigned (<=
// 63), so VPMADDUBSW cannot saturate. Bit-identical to PackedDotReference.

#if HWY_TARGET == HWY_AVX2
struct KVec {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8, kParts = 2;  // a 16-output group is 2 parts
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
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
  }
  static F ToFloat(I a) { return _mm256_cvtepi32_ps(a); }
  static F Floats(float v) { return _mm256_set1_ps(v); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F Zero() { return _mm256_setzero_ps(); }
  static F Halves(const std::byte* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
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
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), _mm512_set1_epi16(1)));
#endif
  }
  static F ToFloat(I a) { return _mm512_cvtepi32_ps(a); }
  static F Floats(float v) { return _mm512_set1_ps(v); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F Neg(F a) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
  }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F Zero() { return _mm512_setzero_ps(); }
  static F Halves(const std::byte* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
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

// y for the outputs of `part` of 16-output group `group` (KVec::kLanes outputs) and rows [r0, r0 + kRows).
template <TensorType kType, int kRows>
HWY_NOINLINE void KQuantMicroTile(const TileArgs& a, int64_t group, int part, int64_t r0) {
  using V = KVec;
  const PackedWeights& p = *a.packed;
  const int64_t blocks = a.in / kActBlock;
  const int bo = 32 * part;         // byte offset of this part inside every 64-byte vector
  const int eo = V::kLanes * part;  // element offset inside every per-output array
  typename V::F acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = V::Zero();
  const int8_t* q[kRows];
  for (int r = 0; r < kRows; ++r) q[r] = a.q + (r0 + r) * a.q_stride;
  const typename V::I low4 = V::Bytes(0x0f);
  for (int64_t s = 0; s < p.units; ++s) {
    const std::byte* unit = p.Unit(group, s);
    typename V::F d, dmin;
    if constexpr (kType == TensorType::kQ4_K) {
      d = V::Halves(unit + kQ4KD + 2 * eo);
      dmin = V::Halves(unit + kQ4KDmin + 2 * eo);
    } else {
      d = V::Halves(unit + kQ6KD + 2 * eo);
    }
    for (int j = 0; j < 8; ++j) {
      const int64_t b = 8 * s + j;
      const std::byte* nibbles = unit + 256 * j + bo;
      typename V::I dot_lo[kRows], dot_hi[kRows];  // elements 0-15 and 16-31 of the sub-block
      for (int r = 0; r < kRows; ++r) {
        if constexpr (kType == TensorType::kQ4_K) {
          dot_lo[r] = V::Ints(0);
        } else {  // quants are value + 32: start at -32 * (sum of x over each half)
          dot_lo[r] = V::Ints(-32 * a.sums16[(r0 + r) * 2 * blocks + 2 * b]);
          dot_hi[r] = V::Ints(-32 * a.sums16[(r0 + r) * 2 * blocks + 2 * b + 1]);
        }
      }
      typename V::I high0, high1;
      if constexpr (kType == TensorType::kQ6_K) {
        high0 = V::Load(unit + kQ6KHigh + 128 * j + bo);
        high1 = V::Load(unit + kQ6KHigh + 128 * j + 64 + bo);
      }
      for (int k = 0; k < 4; ++k) {
        const typename V::I v = V::Load(nibbles + 64 * k);
        typename V::I w_lo = V::And(v, low4), w_hi = V::And(V::Srl16(v, 4), low4);
        if constexpr (kType == TensorType::kQ6_K) {
          const typename V::I three = V::Bytes(3);
          w_lo = V::Or(w_lo, V::Sll16(V::And(V::Srl16(high0, 2 * k), three), 4));
          w_hi = V::Or(w_hi, V::Sll16(V::And(V::Srl16(high1, 2 * k), three), 4));
        }
        for (int r = 0; r < kRows; ++r) {
          int32_t x_lo, x_hi;
          __builtin_memcpy(&x_lo, q[r] + 32 * b + 4 * k, 4);
          __builtin_memcpy(&x_hi, q[r] + 32 * b + 16 + 4 * k, 4);
          if constexpr (kType == TensorType::kQ4_K) {  // one scale for the sub-block: one accumulator
            dot_lo[r] = V::Dot(V::Dot(dot_lo[r], w_lo, V::Ints(x_lo)), w_hi, V::Ints(x_hi));
          } else {
            dot_lo[r] = V::Dot(dot_lo[r], w_lo, V::Ints(x_lo));
            dot_hi[r] = V::Dot(dot_hi[r], w_hi, V::Ints(x_hi));
          }
        }
      }
      if constexpr (kType == TensorType::kQ4_K) {
        const typename V::F scale = V::Mul(d, V::U8s(unit + kQ4KScales + kPackedGroup * j + eo));
        const typename V::F min_scale = V::Neg(V::Mul(dmin, V::U8s(unit + kQ4KMins + kPackedGroup * j + eo)));
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = (r0 + r) * blocks + b;
          const typename V::F dx = V::Floats(a.d[i]);
          acc[r] = V::Fma(V::ToFloat(dot_lo[r]), V::Mul(scale, dx), acc[r]);
          acc[r] = V::Fma(V::Floats(static_cast<float>(a.sums[i])), V::Mul(min_scale, dx), acc[r]);
        }
      } else {
        const typename V::I sc_lo = V::I8s(unit + kQ6KScales + 32 * j + eo);
        const typename V::I sc_hi = V::I8s(unit + kQ6KScales + 32 * j + kPackedGroup + eo);
        for (int r = 0; r < kRows; ++r) {
          const typename V::I total = V::Add(V::MulLo(dot_lo[r], sc_lo), V::MulLo(dot_hi[r], sc_hi));
          acc[r] = V::Fma(V::ToFloat(total), V::Mul(d, V::Floats(a.d[(r0 + r) * blocks + b])), acc[r]);
        }
      }
    }
  }
  const int64_t o0 = group * kPackedGroup + eo;
  const int n = static_cast<int>(std::min<int64_t>(V::kLanes, a.out - o0));
  if (n <= 0) return;
  for (int r = 0; r < kRows; ++r) V::Store(a.y + (r0 + r) * a.out + o0, acc[r], n);
}

template <TensorType kType>
HWY_INLINE void KQuantPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  constexpr int kRows = 4;
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  for (int64_t g = o_begin / kPackedGroup; g < group_end; ++g) {
    for (int part = 0; part < KVec::kParts; ++part) {
      int64_t r0 = 0;
      for (; r0 + kRows <= a.rows; r0 += kRows) KQuantMicroTile<kType, kRows>(a, g, part, r0);
      switch (a.rows - r0) {
        case 3:
          KQuantMicroTile<kType, 3>(a, g, part, r0);
          break;
        case 2:
          KQuantMicroTile<kType, 2>(a, g, part, r0);
          break;
        case 1:
          KQuantMicroTile<kType, 1>(a, g, part, r0);
          break;
        default:
          break;
      }
    }
  }
}
