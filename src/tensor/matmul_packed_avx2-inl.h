// AVX2 int8 GEMM kernels for packed Q8_0 / Q4_0 weights (tensor/packed_weights.h), included inside namespace
// lockstep::HWY_NAMESPACE by tensor/matmul_packed_x86-inl.h for the AVX2 target. Lanes are output rows: a
// 16-output group is two 8-output halves (bytes [32h, 32h + 32) of each 64-byte vector); each 4-byte
// activation group is broadcast and meets one half's 8 outputs. A tile is one half x kRows rows, so that a
// weight vector loaded (and unpacked) once serves kRows rows within 16 ymm registers.
//
// Two instruction sets, one kernel (kVnni):
// - avx2: VPMADDUBSW + VPMADDWD. Q4_0's nibbles (<= 15) times activations (|x| <= 127) make 16-bit pair
//   sums of at most 3810, so a block's 8 VPMADDUBSW results add up in 16 bits (<= 30480) before one
//   VPMADDWD widens them: 8 + 1 multiplies per 256 multiply-adds instead of 16; the nibbles' offset of 8 is
//   cancelled inside those 16-bit sums (their start, see Avx2BlockDots). Q8_0 weights are made signed
//   (the stored byte is w + 128) and their sign moved onto the activations (VPSIGNB), so |w| * x pairs stay
//   within 2 * 128 * 127 < 2^15: each product group is VPSIGNB + VPMADDUBSW + VPMADDWD + VPADDD with no
//   offset term (the old kernel also multiplied the activations by 128 per group).
// - avx2-vnni: VEX-encoded VPDPBUSD on ymm (Alder Lake and later): one instruction per 32 multiply-adds on
//   the stored unsigned bytes, the dot starting from -offset * (sum of x) as the AVX-512 VNNI kernels do.
// The integer block dots are exact either way; the float order is the packed order of
// tensor/matmul_internal.h (acc = fma(float(dot), weight scale * activation scale, acc)), so every level's
// results are bit-identical.

// acc + VPDPBUSD(w_u8, x_s8), VEX-encoded (AVX-VNNI). Inline assembly: GCC's intrinsic needs the avxvnni
// target, which this AVX2 code is not compiled for; only the avx2-vnni level (CPUs with AVX-VNNI) runs it.
HWY_INLINE __m256i DpbusdVex(__m256i acc, __m256i w_u8, __m256i x_s8) {
  asm("%{vex%} vpdpbusd %[x], %[w], %[acc]" : [acc] "+x"(acc) : [w] "x"(w_u8), [x] "x"(x_s8));
  return acc;
}

// v, opaque to the optimiser. Without it GCC reassociates a block's chain of integer adds into a tree and
// computes every product of the block before adding any: the 4-row tiles then kept 30-40 products live and
// spilled them (50-70 stack moves per block, float accumulators in memory, batch-1 decode slower than the
// previous kernel). Pinned, the adds stay one chain per (half, row) in program order, each product consumed
// as it is made; the rows' chains are independent, so the core still overlaps them.
HWY_INLINE __m256i Pin(__m256i v) {
  asm("" : "+x"(v));
  return v;
}

inline constexpr int kAvx2PackedRows = 4;
// Up to this many rows (decode batches) a group's cached tiles prefetch the next group (Avx2PackedGroup).
inline constexpr int64_t kAvx2LookaheadRows = 64;

// One block's exact integer dots of halves [kH0, kH0 + kHalves) of the 16-output group at `wb` against kRows
// activation rows (the block's quants at q[r]): dot[i][r] = sum over the block of w * x for half kH0 + i.
// starts[r] + b: the row's start for the block: q8_starts (-128 * the sum of its activation quants), or for
// Q4_0 without VNNI q4_starts (that value << 12).
template <TensorType kType, bool kVnni, int kHalves, int kRows, int kH0>
HWY_INLINE void Avx2BlockDots(const std::byte* wb, const int8_t* const* q, const int32_t* const* starts,
                              int64_t b, __m256i (&dot)[kHalves][kRows]) {
  const __m256i* w = reinterpret_cast<const __m256i*>(wb + 32 * kH0);  // vector k, half kH0 + i at w[2k + i]
  // A broadcast load of the row's start (one load, no vector op).
  [[maybe_unused]] const auto start_of = [&](int r) { return _mm256_set1_epi32(starts[r][b]); };
  if constexpr (kVnni || kType == TensorType::kQ8_0) {
    for (int r = 0; r < kRows; ++r) {
      // VNNI dots start at -offset * sum(x), cancelling the stored offset (Q4_0: -128 * sum / 16, exact);
      // Q8_0 without VNNI uses signed weights (no offset).
      __m256i start = _mm256_setzero_si256();
      if constexpr (kVnni)
        start = kType == TensorType::kQ8_0 ? start_of(r) : _mm256_srai_epi32(start_of(r), 4);
      for (int i = 0; i < kHalves; ++i) dot[i][r] = start;
    }
  }
  if constexpr (kType == TensorType::kQ8_0) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones16 = _mm256_set1_epi16(1);
    for (int k = 0; k < 8; ++k) {
      __m256i w_u8[kHalves], w_s8[kHalves], w_abs[kHalves];
      for (int i = 0; i < kHalves; ++i) {
        w_u8[i] = _mm256_loadu_si256(w + 2 * k + i);
        if constexpr (!kVnni) {
          w_s8[i] = _mm256_xor_si256(w_u8[i], flip);  // the value itself
          w_abs[i] = _mm256_abs_epi8(w_s8[i]);        // up to 128: fine as an unsigned operand
        }
      }
      for (int r = 0; r < kRows; ++r) {
        int32_t xk;
        __builtin_memcpy(&xk, q[r] + 4 * k, 4);
        const __m256i x = _mm256_set1_epi32(xk);
        for (int i = 0; i < kHalves; ++i) {
          if constexpr (kVnni) {
            dot[i][r] = DpbusdVex(dot[i][r], w_u8[i], x);
          } else {
            const __m256i pairs = _mm256_maddubs_epi16(w_abs[i], _mm256_sign_epi8(x, w_s8[i]));
            dot[i][r] = Pin(_mm256_add_epi32(dot[i][r], _mm256_madd_epi16(pairs, ones16)));
          }
        }
      }
    }
  } else {
    static_assert(kType == TensorType::kQ4_0);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    // !kVnni: per 32-bit lane, two 16-bit sums (lanes "even" and "odd", the pairs of elements 4k, 4k + 1 and
    // 4k + 2, 4k + 3 of both nibble halves: 16 elements each) that start at (0, -8 * sum(x)), so that after
    // the block's 8 VPMADDUBSW results are added (VPADDW wraps) they hold even = sum_E w * x and
    // odd = sum_O w * x - 8 * sum(x) = sum_O (w - 8) * x - 8 * sum_E x, both within 16 * 15 * 127 and
    // 16 * 8 * 127 + 16 * 8 * 127 = 32512 < 2^15: exact, and one VPMADDWD gives the block's dot with the
    // nibbles' offset of 8 already cancelled. The start is q4_starts = (-8 * sum) << 16, written by the
    // quantizer once per matmul: one broadcast load per row and block (it was a shift of q8_starts per
    // row, block and tile: 4 of the 4-row tile's 97 vector ALU ops per block).
    __m256i sum16[kHalves][kRows];
    if constexpr (!kVnni) {
      for (int r = 0; r < kRows; ++r) {
        const __m256i start = start_of(r);
        for (int i = 0; i < kHalves; ++i) sum16[i][r] = start;
      }
    }
    for (int k = 0; k < 4; ++k) {
      __m256i lo[kHalves], hi[kHalves];
      for (int i = 0; i < kHalves; ++i) {
        const __m256i v = _mm256_loadu_si256(w + 2 * k + i);
        lo[i] = _mm256_and_si256(v, low4);
        hi[i] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
      for (int r = 0; r < kRows; ++r) {
        int32_t x_lo, x_hi;
        __builtin_memcpy(&x_lo, q[r] + 4 * k, 4);
        __builtin_memcpy(&x_hi, q[r] + 16 + 4 * k, 4);
        const __m256i xl = _mm256_set1_epi32(x_lo), xh = _mm256_set1_epi32(x_hi);
        for (int i = 0; i < kHalves; ++i) {
          if constexpr (kVnni) {
            dot[i][r] = DpbusdVex(DpbusdVex(dot[i][r], lo[i], xl), hi[i], xh);
          } else {
            sum16[i][r] = Pin(_mm256_add_epi16(sum16[i][r], _mm256_maddubs_epi16(lo[i], xl)));
            sum16[i][r] = Pin(_mm256_add_epi16(sum16[i][r], _mm256_maddubs_epi16(hi[i], xh)));
          }
        }
      }
    }
    if constexpr (!kVnni) {  // widen once (the offset is cancelled already)
      const __m256i ones16 = _mm256_set1_epi16(1);
      for (int r = 0; r < kRows; ++r) {
        for (int i = 0; i < kHalves; ++i) dot[i][r] = _mm256_madd_epi16(sum16[i][r], ones16);
      }
    }
  }
}

// y for the outputs of halves [kH0, kH0 + kHalves) of `group` and rows [r0, r0 + kRows). kStream: the tile
// streams the group's weights from memory (the group's first tile) and prefetches about kPrefetchBytes ahead.
// (kH0 is a template argument: as a run-time value GCC kept every weight vector's address in its own register
// and spilled them.)
// kLookahead (tiles that do not stream): also ask for the lines `next` (of the next group), spread over
// the blocks.
template <TensorType kType, bool kVnni, int kHalves, int kRows, bool kStream, int kH0,
          bool kLookahead = false>
HWY_NOINLINE void Avx2PackedTile(const TileArgs& a, int64_t group, int64_t r0, PrefetchLines next = {}) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = p.units, unit_bytes = p.unit_bytes;
  const std::byte* const w0 = p.Unit(group, 0);  // unit b at w0 + b * unit_bytes
  __m256 acc[kHalves][kRows];
  for (int i = 0; i < kHalves; ++i) {
    for (int r = 0; r < kRows; ++r) acc[i][r] = _mm256_setzero_ps();
  }
  const int8_t* q[kRows];
  const float* d[kRows];
  const int32_t* starts[kRows];  // q8_starts, or q4_starts for Q4_0 without VNNI (Avx2BlockDots)
  for (int r = 0; r < kRows; ++r) {
    q[r] = a.q + (r0 + r) * a.q_stride;
    d[r] = a.d + (r0 + r) * blocks;
    starts[r] = (kType == TensorType::kQ4_0 && !kVnni ? a.q4_starts : a.q8_starts) + (r0 + r) * blocks;
  }
  const int64_t ahead = (kPrefetchBytes + unit_bytes - 1) / unit_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* wb = w0 + b * unit_bytes;
    if (kStream && b + ahead < blocks) PrefetchBytes(wb + ahead * unit_bytes, 0, unit_bytes);
    if (kLookahead) next.Spread(b, blocks);
    const int8_t* qb[kRows];
    for (int r = 0; r < kRows; ++r) qb[r] = q[r] + 32 * b;
    __m256i dot[kHalves][kRows];
    Avx2BlockDots<kType, kVnni, kHalves, kRows, kH0>(wb, qb, starts, b, dot);
    for (int i = 0; i < kHalves; ++i) {
      const __m256 dw = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + PackedScaleOffset(kType) + 16 * (kH0 + i))));
      for (int r = 0; r < kRows; ++r) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_broadcast_ss(d[r] + b));
        acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][r]), scale, acc[i][r]);
      }
    }
  }
  for (int i = 0; i < kHalves; ++i) {
    const int64_t o0 = group * kPackedGroup + 8 * (kH0 + i);
    const int n = static_cast<int>(std::min<int64_t>(8, a.out - o0));
    if (n <= 0) break;
    for (int r = 0; r < kRows; ++r) {
      if (n == 8) {
        _mm256_storeu_ps(a.y + (r0 + r) * a.out + o0, acc[i][r]);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[i][r]);
        __builtin_memcpy(a.y + (r0 + r) * a.out + o0, tmp, sizeof(float) * n);
      }
    }
  }
}

// A tile that finds its weights in cache; with lookahead (`next` active) it asks for the next slice of the
// next group's weights meanwhile. Without, it is the plain loop (prefill: tiles are many, their slices
// tiny, and the extra loads and registers cost more than they bring).
template <TensorType kType, bool kVnni, int kHalves, int kRows, int kH0>
HWY_INLINE void Avx2CachedTile(const TileArgs& a, int64_t group, int64_t r0, SlicedPrefetch& next) {
  if (next.active()) {
    Avx2PackedTile<kType, kVnni, kHalves, kRows, false, kH0, true>(a, group, r0, next.Take());
  } else {
    Avx2PackedTile<kType, kVnni, kHalves, kRows, false, kH0>(a, group, r0);
  }
}

// Rows [0, full) of half kH0 of `group` in tiles of kAvx2PackedRows (the group's first tile streams the
// weights), then `rest` == 3 leftover rows as one tile. Before each tile that does not stream, `next` asks
// for a slice of the next group's weights.
template <TensorType kType, bool kVnni, int kH0>
HWY_INLINE void Avx2PackedHalf(const TileArgs& a, int64_t group, int64_t full, int rest,
                               SlicedPrefetch& next) {
  constexpr int kRows = kAvx2PackedRows;
  for (int64_t r0 = 0; r0 < full; r0 += kRows) {
    if (kH0 == 0 && r0 == 0) {
      Avx2PackedTile<kType, kVnni, 1, kRows, true, kH0>(a, group, r0);
    } else {
      Avx2CachedTile<kType, kVnni, 1, kRows, kH0>(a, group, r0, next);
    }
  }
  if (rest == 3) {
    Avx2CachedTile<kType, kVnni, 1, 3, kH0>(a, group, full, next);
  }
}

// Every row of `group`. Up to two rows: both halves per tile (each broadcast activation group feeds both,
// 10-14 registers); more: one half x kAvx2PackedRows rows per tile (each weight vector unpacked once for 4
// rows), the last 1-3 rows as 3 x one half or 1-2 x both. The group's first tile streams the weights (the
// others find them in cache: both halves share every 64-byte line). Each other tile first asks for one
// slice of the next group's weights (SlicedPrefetch, into L2), so that with 5 or more rows the next
// group's streaming tile finds most of them in cache: at B=32 that first tile took 2.5x the time of the
// others (tensor weights pulled from memory with no arithmetic beside them).
template <TensorType kType, bool kVnni>
HWY_INLINE void Avx2PackedGroup(const TileArgs& a, int64_t group) {
  constexpr int kRows = kAvx2PackedRows;
  const PackedWeights& p = *a.packed;
  const int64_t full = a.rows < kRows ? 0 : a.rows - a.rows % kRows;
  const int rest = static_cast<int>(a.rows - full);
  const bool second_half = group * kPackedGroup + 8 < a.out;  // false: a last group of 8 or fewer outputs
  // Tiles of this group that do not stream: per half full / kRows (+ 1 for 3 leftover rows), 1 for 1-2
  // leftover rows; minus the streaming one.
  const int64_t per_half = full / kRows + (rest == 3 ? 1 : 0);
  const int64_t tiles = per_half * (second_half ? 2 : 1) + (rest == 1 || rest == 2 ? 1 : 0);
  SlicedPrefetch next;
  if (a.rows <= kAvx2LookaheadRows && group + 1 < p.groups && tiles > 1)
    next = SlicedPrefetch(p.Unit(group + 1, 0), p.units * p.unit_bytes, tiles - 1);
  if (full > 0) {
    Avx2PackedHalf<kType, kVnni, 0>(a, group, full, rest, next);
    if (second_half) Avx2PackedHalf<kType, kVnni, 1>(a, group, full, rest, next);
  }
  const bool stream = full == 0;
  switch (rest) {
    case 3:
      if (stream) {
        Avx2PackedTile<kType, kVnni, 1, 3, true, 0>(a, group, 0);
        if (second_half) {
          Avx2CachedTile<kType, kVnni, 1, 3, 1>(a, group, 0, next);
        }
      }
      return;
    case 2:
      if (stream) return Avx2PackedTile<kType, kVnni, 2, 2, true, 0>(a, group, full);
      return Avx2CachedTile<kType, kVnni, 2, 2, 0>(a, group, full, next);
    case 1:
      if (stream) return Avx2PackedTile<kType, kVnni, 2, 1, true, 0>(a, group, full);
      return Avx2CachedTile<kType, kVnni, 2, 1, 0>(a, group, full, next);
    default:
      return;
  }
}

// Outputs [o_begin, o_end) (o_begin a multiple of 16), every row.
template <TensorType kType, bool kVnni>
HWY_INLINE void Avx2PackedTileTyped(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  for (int64_t g = o_begin / kPackedGroup; g < group_end; ++g) Avx2PackedGroup<kType, kVnni>(a, g);
}
