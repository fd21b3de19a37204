// x86 MatMul kernels (AVX2 / AVX-512 / AVX-512 VNNI targets), 256-bit intrinsics. Included inside namespace
// lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc. Bit-identical to the scalar reference (canonical order of
// tensor/matmul_internal.h): the integer lanes are exact and the float operations are the same per lane.

#if HWY_TARGET == HWY_AVX2
inline constexpr int kTileOut = 4, kTileRows = 2;  // 16 ymm registers
#else
inline constexpr int kTileOut = 4, kTileRows = 4;  // 32 ymm registers with AVX-512VL
#endif

#if HWY_TARGET == HWY_AVX3_DL
// acc + VPDPBUSD(a_u8, b_s8), forced to the EVEX (AVX-512 VNNI) encoding: Highway 1.0.3's AVX3_DL target
// enables AVX-VNNI (not AVX512-VNNI), so the intrinsic would give the VEX form, which CPUs with AVX-512 VNNI
// but without AVX-VNNI (Ice Lake, Zen 4) lack. EVEX also reaches ymm16-31.
HWY_INLINE __m256i DpbusdEvex(__m256i acc, __m256i a_u8, __m256i b_s8) {
  asm("%{evex%} vpdpbusd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a_u8), [b] "v"(b_s8));
  return acc;
}
#endif

// Lane l = exact sum over k < 4 of a[4l + k] (u8) * b[4l + k] (s8); |a| <= 128, |b| <= 127, so the 16-bit
// pair sums of VPMADDUBSW cannot saturate.
HWY_INLINE __m256i DotLanes(__m256i a_u8, __m256i b_s8) {
#if HWY_TARGET == HWY_AVX3_DL
  return DpbusdEvex(_mm256_setzero_si256(), a_u8, b_s8);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(a_u8, b_s8), _mm256_set1_epi16(1));
#endif
}

// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), as LaneSum.
HWY_INLINE float LaneSum256(__m256 acc) {
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
}

HWY_INLINE float HalfAt(const std::byte* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Canonical weight block b of a row: int8 values, lane scales, min scale (HasMinTerm types).
template <TensorType kType>
HWY_INLINE void LoadWeightBlock(const std::byte* row, int64_t b, __m256i* w, __m256* scale,
                                __m256* min_scale) {
  if constexpr (kType == TensorType::kQ8_0) {
    const std::byte* p = row + 34 * b;
    *scale = _mm256_set1_ps(HalfAt(p));
    *w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  } else if constexpr (kType == TensorType::kQ4_0) {
    const std::byte* p = row + 18 * b;
    *scale = _mm256_set1_ps(HalfAt(p));
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(packed, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
    *w = _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
  } else if constexpr (kType == TensorType::kQ5_0 || kType == TensorType::kQ5_1) {
    constexpr bool kMin = kType == TensorType::kQ5_1;
    const std::byte* p = row + (kMin ? 24 : 22) * b;
    *scale = _mm256_set1_ps(HalfAt(p));
    if constexpr (kMin) *min_scale = _mm256_set1_ps(HalfAt(p + 2));
    const std::byte* qh = p + (kMin ? 4 : 2);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 4));
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m256i nibbles =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
    // Bit e of qh to bit 4 of byte e: byte e takes qh's byte e / 8, keeps bit e % 8, compares.
    uint32_t bits;
    __builtin_memcpy(&bits, qh, 4);
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                            _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
    *w = _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
    if constexpr (!kMin) *w = _mm256_sub_epi8(*w, _mm256_set1_epi8(16));
  } else if constexpr (IsTableType(kType)) {
    // Index nibbles as Q4_0's, looked up in the type's table (VPSHUFB, the table in both 128-bit lanes).
    const bool xs = kType == TensorType::kIQ4_XS, mxfp4 = kType == TensorType::kMXFP4;
    const std::byte* p = xs ? row + 136 * (b / 8) : row + (mxfp4 ? 17 : 18) * b;
    const int j = static_cast<int>(b % 8);
    if (xs) {
      BlockIQ4_XS block;
      __builtin_memcpy(&block, p, 8);  // d and the scales
      *scale = _mm256_set1_ps(HalfAt(p) * static_cast<float>(IQ4XSScale(block, j)));
    } else if (mxfp4) {
      *scale = _mm256_set1_ps(E8M0Half(static_cast<uint8_t>(p[0])));
    } else {
      *scale = _mm256_set1_ps(HalfAt(p));
    }
    const int quants_at = xs ? 8 + 16 * j : mxfp4 ? 1 : 2;  // after the scales
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + quants_at));
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m256i nibbles =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(TableValues(kType))));
    *w = _mm256_shuffle_epi8(table, nibbles);
  } else if constexpr (kType == TensorType::kQ4_K) {
    const std::byte* p = row + 144 * (b / 8);
    const int j = static_cast<int>(b % 8);
    uint8_t sc, m;
    DecodeQ4KScaleMin(reinterpret_cast<const uint8_t*>(p + 4), j, &sc, &m);
    *scale = _mm256_set1_ps(HalfAt(p) * static_cast<float>(sc));
    *min_scale = _mm256_set1_ps(-(HalfAt(p + 2) * static_cast<float>(m)));
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * (j / 2)));
    if (j % 2) q = _mm256_srli_epi16(q, 4);
    *w = _mm256_and_si256(q, _mm256_set1_epi8(0x0f));
  } else if constexpr (kType == TensorType::kQ5_K) {
    const std::byte* p = row + 176 * (b / 8);
    const int j = static_cast<int>(b % 8);
    uint8_t sc, m;
    DecodeQ4KScaleMin(reinterpret_cast<const uint8_t*>(p + 4), j, &sc, &m);
    *scale = _mm256_set1_ps(HalfAt(p) * static_cast<float>(sc));
    *min_scale = _mm256_set1_ps(-(HalfAt(p + 2) * static_cast<float>(m)));
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 48 + 32 * (j / 2)));
    if (j % 2) q = _mm256_srli_epi16(q, 4);
    q = _mm256_and_si256(q, _mm256_set1_epi8(0x0f));
    // Bit j of qh[l] to bit 4 of byte l: a 16-bit shift keeps each byte's bits in place for j <= 4 (left by
    // 4 - j) and j >= 4 (right by j - 4).
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    const __m256i fifth = j <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - j))
                                 : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(j - 4));
    *w = _mm256_or_si256(q, _mm256_and_si256(fifth, _mm256_set1_epi8(0x10)));
  } else if constexpr (kType == TensorType::kQ2_K) {
    // Sub-block j's 32 quants are bits 2k..2k+1 of qs[32n..32n+32) (n = j / 4, k = j % 4); lanes 0-3 take
    // scales[2j]'s scale and min, lanes 4-7 scales[2j + 1]'s.
    const std::byte* p = row + 84 * (b / 8);
    const int j = static_cast<int>(b % 8);
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * (j / 4)));
    *w = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * (j % 4))), _mm256_set1_epi8(3));
    const float d = HalfAt(p + 80), dmin = HalfAt(p + 82);
    const int s0 = static_cast<int>(p[2 * j]), s1 = static_cast<int>(p[2 * j + 1]);
    *scale = _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(s1 & 0xf)),
                             _mm_set1_ps(d * static_cast<float>(s0 & 0xf)));
    *min_scale = _mm256_set_m128(_mm_set1_ps(-(dmin * static_cast<float>(s1 >> 4))),
                                 _mm_set1_ps(-(dmin * static_cast<float>(s0 >> 4))));
  } else if constexpr (kType == TensorType::kQ3_K) {
    // The scalar decoding (unpacked Q3_K is the tests' and the fallback's path; models pack it).
    WeightBlockView view;
    GetWeightBlock(kType, row, b, &view);
    *w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(view.w));
    *scale = _mm256_loadu_ps(view.scale);
  } else {
    static_assert(kType == TensorType::kQ6_K);
    const std::byte* p = row + 210 * (b / 8);
    const int j = static_cast<int>(b % 8), half = j / 4, k = j % 4;
    __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * half + 32 * (k & 1)));
    if (k >= 2) low = _mm256_srli_epi16(low, 4);
    low = _mm256_and_si256(low, _mm256_set1_epi8(0x0f));
    __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * half));
    high = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
    const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
    *w = _mm256_sub_epi8(q, _mm256_set1_epi8(32));
    const float d = HalfAt(p + 208);
    const int8_t* scales = reinterpret_cast<const int8_t*>(p + 192);
    *scale = _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(scales[2 * j + 1])),
                             _mm_set1_ps(d * static_cast<float>(scales[2 * j])));
  }
}

// y for outputs [o0, o0 + kOut) and rows [r0, r0 + kRows).
// Walks a task's outputs [o_begin, o_end) in tiles of kTileOut outputs (then single outputs), each over the
// rows from r_begin on in tiles of kTileRows (then single rows), calling micro(kOut, kRows, o0, r0) with kOut
// and kRows as std::integral_constant.
template <typename Micro>
HWY_INLINE void ForEachMicroTile(const TileArgs& a, int64_t o_begin, int64_t o_end, const Micro& micro,
                                 int64_t r_begin = 0) {
  const auto rows_loop = [&](auto out, int64_t o0) {
    int64_t r0 = r_begin;
    for (; r0 + kTileRows <= a.rows; r0 += kTileRows)
      micro(out, std::integral_constant<int, kTileRows>{}, o0, r0);
    for (; r0 < a.rows; ++r0) micro(out, std::integral_constant<int, 1>{}, o0, r0);
  };
  int64_t o0 = o_begin;
  for (; o0 + kTileOut <= o_end; o0 += kTileOut) rows_loop(std::integral_constant<int, kTileOut>{}, o0);
  for (; o0 < o_end; ++o0) rows_loop(std::integral_constant<int, 1>{}, o0);
}

template <TensorType kType, int kOut, int kRows>
HWY_NOINLINE void QuantMicroTile(const TileArgs& a, int64_t o0, int64_t r0) {
  __m256 acc[kOut][kRows];
  for (int o = 0; o < kOut; ++o) {
    for (int r = 0; r < kRows; ++r) acc[o][r] = _mm256_setzero_ps();
  }
  const int64_t blocks = a.in / kActBlock;
  const int8_t* q[kRows];
  const float* d[kRows];
  for (int r = 0; r < kRows; ++r) {
    q[r] = a.q + (r0 + r) * a.q_stride;
    d[r] = a.d + (r0 + r) * blocks;
  }
  const std::byte* rows[kOut];
  for (int o = 0; o < kOut; ++o) rows[o] = a.weights + (o0 + o) * a.row_bytes;
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i xq[kRows];
    __m256 xsum[kRows];
    for (int r = 0; r < kRows; ++r) {
      xq[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[r] + kActBlock * b));
      if constexpr (HasLaneMinTerm(kType)) xsum[r] = _mm256_cvtepi32_ps(DotLanes(ones, xq[r]));
    }
    for (int o = 0; o < kOut; ++o) {
      __m256i w;
      __m256 scale;
      __m256 min_scale = _mm256_setzero_ps();
      LoadWeightBlock<kType>(rows[o], b, &w, &scale, &min_scale);
      const __m256i abs_w = _mm256_abs_epi8(w);
      for (int r = 0; r < kRows; ++r) {
        const __m256 dx = _mm256_set1_ps(d[r][b]);
        const __m256i dot = DotLanes(abs_w, _mm256_sign_epi8(xq[r], w));
        acc[o][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(scale, dx), acc[o][r]);
        if constexpr (HasLaneMinTerm(kType)) {
          acc[o][r] = _mm256_fmadd_ps(xsum[r], _mm256_mul_ps(min_scale, dx), acc[o][r]);
        }
      }
    }
  }
  for (int o = 0; o < kOut; ++o) {
    for (int r = 0; r < kRows; ++r) a.y[(r0 + r) * a.out + o0 + o] = LaneSum256(acc[o][r]);
  }
}

template <TensorType kType>
HWY_INLINE void QuantTileTyped(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  ForEachMicroTile(a, o_begin, o_end, [&](auto out, auto rows, int64_t o0, int64_t r0) {
    QuantMicroTile<kType, decltype(out)::value, decltype(rows)::value>(a, o0, r0);
  });
}

inline void QuantTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.type) {
    case TensorType::kQ8_0:
      return QuantTileTyped<TensorType::kQ8_0>(a, o_begin, o_end);
    case TensorType::kQ4_0:
      return QuantTileTyped<TensorType::kQ4_0>(a, o_begin, o_end);
    case TensorType::kQ4_K:
      return QuantTileTyped<TensorType::kQ4_K>(a, o_begin, o_end);
    case TensorType::kQ5_K:
      return QuantTileTyped<TensorType::kQ5_K>(a, o_begin, o_end);
    case TensorType::kQ5_0:
      return QuantTileTyped<TensorType::kQ5_0>(a, o_begin, o_end);
    case TensorType::kQ5_1:
      return QuantTileTyped<TensorType::kQ5_1>(a, o_begin, o_end);
    case TensorType::kQ6_K:
      return QuantTileTyped<TensorType::kQ6_K>(a, o_begin, o_end);
    case TensorType::kIQ4_NL:
      return QuantTileTyped<TensorType::kIQ4_NL>(a, o_begin, o_end);
    case TensorType::kIQ4_XS:
      return QuantTileTyped<TensorType::kIQ4_XS>(a, o_begin, o_end);
    case TensorType::kMXFP4:
      return QuantTileTyped<TensorType::kMXFP4>(a, o_begin, o_end);
    case TensorType::kQ3_K:
      return QuantTileTyped<TensorType::kQ3_K>(a, o_begin, o_end);
    case TensorType::kQ2_K:
      return QuantTileTyped<TensorType::kQ2_K>(a, o_begin, o_end);
    default:
      HWY_ASSERT(false);
  }
}

// 8 weights starting at element i of a float-typed row, as f32.
template <TensorType kType>
HWY_INLINE __m256 LoadFloatWeights(const std::byte* row, int64_t i) {
  if constexpr (kType == TensorType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (kType == TensorType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
}

// Streaming float tiles (kStream: the first row tile, which reads its kOut weight rows from memory; later row
// tiles find them in cache) prefetch the next tile's kOut rows, contiguous after theirs, as they go: the step
// at element i asks for bytes [i, i + kLanes) * kOut * kElementBytes of them. NextRowsBytes: how many of
// those bytes exist (past o_end they are the next task's rows; past the matrix there are none).
inline int64_t NextRowsBytes(const TileArgs& a, int64_t o0, int out_rows) {
  return std::min<int64_t>(out_rows, a.out - o0 - out_rows) * a.row_bytes;
}
template <int kOut, int kElementBytes>
HWY_INLINE void PrefetchNextRowsStep(const std::byte* next, int64_t next_bytes, int64_t i) {
  const int64_t begin = i * kOut * kElementBytes;
  PrefetchBytes(next, begin, std::min(next_bytes, begin + kOut * kLanes * kElementBytes));
}

template <TensorType kType, int kOut, int kRows, bool kStream>
HWY_NOINLINE void FloatMicroTile(const TileArgs& a, int64_t o0, int64_t r0) {
  constexpr int kElementBytes = kType == TensorType::kF32 ? 4 : 2;
  __m256 acc[kOut][kRows];
  for (int o = 0; o < kOut; ++o) {
    for (int r = 0; r < kRows; ++r) acc[o][r] = _mm256_setzero_ps();
  }
  const std::byte* rows[kOut];
  for (int o = 0; o < kOut; ++o) rows[o] = a.weights + (o0 + o) * a.row_bytes;
  const float* x[kRows];
  for (int r = 0; r < kRows; ++r) x[r] = a.x + (r0 + r) * a.in;
  const int64_t full = a.in / kLanes * kLanes;
  const std::byte* next = rows[0] + kOut * a.row_bytes;
  const int64_t next_bytes = NextRowsBytes(a, o0, kOut);
  for (int64_t i = 0; i < full; i += kLanes) {
    if constexpr (kStream) PrefetchNextRowsStep<kOut, kElementBytes>(next, next_bytes, i);
    __m256 xv[kRows];
    for (int r = 0; r < kRows; ++r) xv[r] = _mm256_loadu_ps(x[r] + i);
    for (int o = 0; o < kOut; ++o) {
      const __m256 wv = LoadFloatWeights<kType>(rows[o], i);
      for (int r = 0; r < kRows; ++r) acc[o][r] = _mm256_fmadd_ps(wv, xv[r], acc[o][r]);
    }
  }
  if (full < a.in) {  // zero-padded last group
    const int rest = static_cast<int>(a.in - full);
    alignas(32) std::byte wbuf[kLanes * 4] = {};
    alignas(32) float xbuf[kLanes] = {};
    __m256 xv[kRows];
    for (int r = 0; r < kRows; ++r) {
      __builtin_memcpy(xbuf, x[r] + full, sizeof(float) * rest);
      xv[r] = _mm256_load_ps(xbuf);
    }
    for (int o = 0; o < kOut; ++o) {
      __builtin_memcpy(wbuf, rows[o] + full * kElementBytes, static_cast<size_t>(kElementBytes) * rest);
      const __m256 wv = LoadFloatWeights<kType>(wbuf, 0);
      for (int r = 0; r < kRows; ++r) acc[o][r] = _mm256_fmadd_ps(wv, xv[r], acc[o][r]);
    }
  }
  for (int o = 0; o < kOut; ++o) {
    for (int r = 0; r < kRows; ++r) a.y[(r0 + r) * a.out + o0 + o] = LaneSum256(acc[o][r]);
  }
}

#if HWY_TARGET != HWY_AVX2
// AVX-512: one 512-bit register holds the 8 lane accumulators of two rows (lanes 0-7: row r, 8-15: row r + 1)
// for one output, so each FMA advances two (output, row) pairs with exactly the 256-bit kernel's per-lane
// operations (bit-identical; twice the work per instruction).
inline constexpr int kFloatPairs = 4;  // row pairs per tile: 6 outputs x 8 rows = 24 accumulators
inline constexpr int kFloatPairOut = 6;

// 8 weights from element i, as f32, in both halves of a 512-bit register.
template <TensorType kType>
HWY_INLINE __m512 LoadFloatWeightsTwice(const std::byte* row, int64_t i) {
  if constexpr (kType == TensorType::kF32) {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(reinterpret_cast<const float*>(row) + i));
  } else {
    const __m256i raw =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    if constexpr (kType == TensorType::kF16) return _mm512_cvtph_ps(raw);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  }
}

// kStream: see PrefetchNextRowsStep.
template <TensorType kType, int kOut, bool kStream>
HWY_NOINLINE void FloatPairTile(const TileArgs& a, int64_t o0, int64_t r0) {
  constexpr int kElementBytes = kType == TensorType::kF32 ? 4 : 2;
  __m512 acc[kOut][kFloatPairs];
  for (int o = 0; o < kOut; ++o) {
    for (int p = 0; p < kFloatPairs; ++p) acc[o][p] = _mm512_setzero_ps();
  }
  const std::byte* rows[kOut];
  for (int o = 0; o < kOut; ++o) rows[o] = a.weights + (o0 + o) * a.row_bytes;
  const float* x[2 * kFloatPairs];
  for (int r = 0; r < 2 * kFloatPairs; ++r) x[r] = a.x + (r0 + r) * a.in;
  const auto step = [&](const float* const* xs, int64_t xi, const std::byte* const* ws, int64_t wi) {
    __m512 xv[kFloatPairs];
    for (int p = 0; p < kFloatPairs; ++p) {
      xv[p] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(xs[2 * p] + xi)),
                                 _mm256_loadu_ps(xs[2 * p + 1] + xi), 1);
    }
    for (int o = 0; o < kOut; ++o) {
      const __m512 wv = LoadFloatWeightsTwice<kType>(ws[o], wi);
      for (int p = 0; p < kFloatPairs; ++p) acc[o][p] = _mm512_fmadd_ps(wv, xv[p], acc[o][p]);
    }
  };
  const int64_t full = a.in / kLanes * kLanes;
  const std::byte* next = rows[0] + kOut * a.row_bytes;
  const int64_t next_bytes = NextRowsBytes(a, o0, kOut);
  for (int64_t i = 0; i < full; i += kLanes) {
    if constexpr (kStream) PrefetchNextRowsStep<kOut, kElementBytes>(next, next_bytes, i);
    step(x, i, rows, i);
  }
  if (full < a.in) {  // zero-padded last group
    const size_t rest = static_cast<size_t>(a.in - full);
    alignas(64) float xbuf[2 * kFloatPairs][kLanes] = {};
    alignas(64) std::byte wbuf[kOut][kLanes * 4] = {};
    const float* xs[2 * kFloatPairs];
    const std::byte* ws[kOut];
    for (int r = 0; r < 2 * kFloatPairs; ++r) {
      __builtin_memcpy(xbuf[r], x[r] + full, sizeof(float) * rest);
      xs[r] = xbuf[r];
    }
    for (int o = 0; o < kOut; ++o) {
      __builtin_memcpy(wbuf[o], rows[o] + full * kElementBytes, kElementBytes * rest);
      ws[o] = wbuf[o];
    }
    step(xs, 0, ws, 0);
  }
  for (int o = 0; o < kOut; ++o) {
    for (int p = 0; p < kFloatPairs; ++p) {
      a.y[(r0 + 2 * p) * a.out + o0 + o] = LaneSum256(_mm512_castps512_ps256(acc[o][p]));
      a.y[(r0 + 2 * p + 1) * a.out + o0 + o] = LaneSum256(_mm512_extractf32x8_ps(acc[o][p], 1));
    }
  }
}
#endif

template <TensorType kType>
HWY_INLINE void FloatTileTyped(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  int64_t paired_rows = 0;
#if HWY_TARGET != HWY_AVX2
  paired_rows = a.rows / (2 * kFloatPairs) * (2 * kFloatPairs);
  for (int64_t r0 = 0; r0 < paired_rows; r0 += 2 * kFloatPairs) {
    int64_t o0 = o_begin;
    for (; o0 + kFloatPairOut <= o_end; o0 += kFloatPairOut) {
      if (r0 == 0) {
        FloatPairTile<kType, kFloatPairOut, true>(a, o0, r0);
      } else {
        FloatPairTile<kType, kFloatPairOut, false>(a, o0, r0);
      }
    }
    for (; o0 < o_end; ++o0) FloatPairTile<kType, 1, false>(a, o0, r0);
  }
#endif
  ForEachMicroTile(
      a, o_begin, o_end,
      [&](auto out, auto rows, int64_t o0, int64_t r0) {
        constexpr int kOut = decltype(out)::value, kRows = decltype(rows)::value;
        if (r0 == 0) {
          FloatMicroTile<kType, kOut, kRows, true>(a, o0, r0);
        } else {
          FloatMicroTile<kType, kOut, kRows, false>(a, o0, r0);
        }
      },
      paired_rows);
}

inline void FloatTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.type) {
    case TensorType::kF32:
      return FloatTileTyped<TensorType::kF32>(a, o_begin, o_end);
    case TensorType::kF16:
      return FloatTileTyped<TensorType::kF16>(a, o_begin, o_end);
    case TensorType::kBF16:
      return FloatTileTyped<TensorType::kBF16>(a, o_begin, o_end);
    default:
      HWY_ASSERT(false);
  }
}

// Canonical activation quantization (QuantizeActivationBlock).

// Quants of the 32 floats at src scaled by `inverse` (0: a tiny or non-finite block, all quants 0) to q;
// returns VPSADBW's sums of (q + 128) per 8 quants, one per 64-bit lane, in element order.
HWY_INLINE __m256i QuantizeBlock32(const float* src, float inverse, int8_t* q) {
  __m256 v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(src + 8 * k);
  if (inverse == 0.0f) {  // q = 0 as in the reference (inf * 0 would be NaN)
    for (__m256& vk : v) vk = _mm256_setzero_ps();
  }
  const __m256 id = _mm256_set1_ps(inverse);
  __m256i i32[4];
  for (int k = 0; k < 4; ++k) i32[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], id));  // nearest even
  // |q| <= 127: the packs never saturate. They work within 128-bit lanes: bytes come out in dword order
  // 0,2,4,6,1,3,5,7 -> permute back.
  const __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]);
  const __m256i i16b = _mm256_packs_epi32(i32[2], i32[3]);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i16a, i16b), order);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), q8);
  return _mm256_sad_epu8(_mm256_xor_si256(q8, _mm256_set1_epi8(static_cast<char>(0x80))),
                         _mm256_setzero_si256());
}

HWY_INLINE __m256 AbsMax32(const float* src) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k)
    amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(src + 8 * k), abs_mask));
  return amax;
}

// Lane-wise max of the pairs (a0, a1), (a2, a3) of a and of b, in SHUFPS's order: [a01 a23 b01 b23] per
// 128-bit half (HADDPS's pattern).
HWY_INLINE __m256 PairMax(__m256 a, __m256 b) {
  return _mm256_max_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Eight consecutive blocks of a row, block b's values at src + 32 * b, from block index i (into d, sums,
// ...): the maxima reduced side by side into one vector, the scales (ActivationScale) computed in its lanes,
// and every per-block number but the quants stored 8 at a time.
HWY_INLINE void QuantizeEightBlocks(const float* src, int8_t* q, int64_t i, const ActivationQuants& out) {
  __m256 m[8];
  for (int b = 0; b < 8; ++b) m[b] = AbsMax32(src + 32 * b);
  const __m256 m0123 = PairMax(PairMax(m[0], m[1]), PairMax(m[2], m[3]));  // [b0 b1 b2 b3] per half
  const __m256 m4567 = PairMax(PairMax(m[4], m[5]), PairMax(m[6], m[7]));
  const __m256 max_abs = _mm256_max_ps(_mm256_permute2f128_ps(m0123, m4567, 0x20),
                                       _mm256_permute2f128_ps(m0123, m4567, 0x31));  // lane b: block b
  // ActivationScale per lane: e = floor(log2 max) - 6, + 1 if max > 127 * 2^e; d = 2^e, inverse = 2^-e, both
  // 0 unless max is in [kTinyActivation, FLT_MAX] (false for NaN).
  const __m256 valid =
      _mm256_and_ps(_mm256_cmp_ps(max_abs, _mm256_set1_ps(kTinyActivation), _CMP_GE_OQ),
                    _mm256_cmp_ps(max_abs, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_LE_OQ));
  const __m256i biased = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(max_abs), 23),
                                          _mm256_set1_epi32(6));  // e + 127 (in [21, 248] for valid lanes)
  const __m256 low = _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
  const __m256i up = _mm256_castps_si256(  // -1 where max > 127 * 2^e
      _mm256_cmp_ps(max_abs, _mm256_mul_ps(_mm256_set1_ps(127.0f), low), _CMP_GT_OQ));
  const __m256i exponent = _mm256_sub_epi32(biased, up);
  const __m256 d = _mm256_and_ps(valid, _mm256_castsi256_ps(_mm256_slli_epi32(exponent, 23)));
  alignas(32) float inverse[8];
  _mm256_store_ps(inverse,
                  _mm256_and_ps(valid, _mm256_castsi256_ps(_mm256_slli_epi32(
                                           _mm256_sub_epi32(_mm256_set1_epi32(254), exponent), 23))));
  _mm256_storeu_ps(out.d + i, d);
  // Each block's four 8-quant sums, then per 16 quants: HADD of blocks' (sum, 0) pairs gives [lo hi] per
  // block and half; two more HADDs, [lo of 4 blocks | hi of 4 blocks].
  __m256i sad[8];
  for (int b = 0; b < 8; ++b) sad[b] = QuantizeBlock32(src + 32 * b, inverse[b], q + 32 * b);
  const __m256i bias = _mm256_set1_epi32(16 * 128);
  const __m256i interleave = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i sums4[2];
  for (int g = 0; g < 2; ++g) {
    const __m256i* s = sad + 4 * g;
    const __m256i halves = _mm256_sub_epi32(
        _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3])), bias);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.sums16 + 2 * i + 8 * g),
                        _mm256_permutevar8x32_epi32(halves, interleave));
    sums4[g] = halves;
  }
  const __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(sums4[0], sums4[1], 0x20),
                                        _mm256_permute2x128_si256(sums4[0], sums4[1], 0x31));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.sums + i), sums);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q8_starts + i),
                      _mm256_mullo_epi32(sums, _mm256_set1_epi32(-PackedValueOffset(TensorType::kQ8_0))));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q4_starts + i),
                      _mm256_mullo_epi32(sums, _mm256_set1_epi32(Q4StartOf(1))));
  _mm256_storeu_ps(out.sum_d + i, _mm256_mul_ps(_mm256_cvtepi32_ps(sums), d));
}

// One block, scalar scale and sums.
HWY_INLINE void QuantizeOneBlock(const float* src, int8_t* q, int64_t i, const ActivationQuants& out) {
  const __m256 amax = AbsMax32(src);
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  float inverse;
  out.d[i] = ActivationScale(_mm_cvtss_f32(m), &inverse);
  // Sums per 16 quants: lanes 0 + 1 are elements 0-15, lanes 2 + 3 elements 16-31 (+ 16 * 128 each).
  const __m256i sad = QuantizeBlock32(src, inverse, q);
  const __m128i lo = _mm256_castsi256_si128(sad), hi = _mm256_extracti128_si256(sad, 1);
  const __m128i halves = _mm_add_epi64(_mm_unpacklo_epi64(lo, hi), _mm_unpackhi_epi64(lo, hi));
  out.sums16[2 * i] = _mm_cvtsi128_si32(halves) - 16 * 128;
  out.sums16[2 * i + 1] = _mm_extract_epi32(halves, 2) - 16 * 128;
  out.sums[i] = out.sums16[2 * i] + out.sums16[2 * i + 1];
  out.q8_starts[i] = -PackedValueOffset(TensorType::kQ8_0) * out.sums[i];
  out.q4_starts[i] = Q4StartOf(out.sums[i]);
  out.sum_d[i] = static_cast<float>(out.sums[i]) * out.d[i];
}

// Rows of 8 blocks or more go 8 blocks at a time, the last 8 ending at the row's end (overlapping the
// previous 8 when the count is not a multiple of 8: the same numbers written again).
inline void QuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                                const ActivationQuants& out) {
  const int64_t blocks = in / kActBlock;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const float* row = x + r * in;
    int8_t* q = out.q + r * out.q_stride;
    if (blocks < 8) {
      for (int64_t b = 0; b < blocks; ++b)
        QuantizeOneBlock(row + kActBlock * b, q + kActBlock * b, r * blocks + b, out);
      continue;
    }
    for (int64_t b = 0;; b += 8) {
      const int64_t at = std::min(b, blocks - 8);
      QuantizeEightBlocks(row + kActBlock * at, q + kActBlock * at, r * blocks + at, out);
      if (at == blocks - 8) break;
    }
  }
}
