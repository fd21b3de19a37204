// The AMX-INT8 kernel for packed weights (tensor/packed_weights.h: Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K),
// written over a tile-unit interface so that the same code runs on the CPU's tiles (tensor/matmul_amx.cc)
// and, in tests, on a software model of them (tests/testing/amx_tile_model.h) on any AVX-512 machine.
//
// Shapes: a packed 32-element block's quant vectors are already an AMX "B" tile: vector k holds, for each of
// 16 outputs, elements 4k..4k+3 (8 rows of 64 bytes; Q8_0 as stored, nibble types split into 8 such rows
// first, Q6_K with its high bits merged). The "A" tile is 16 activation rows x one block's 32 int8 quants,
// read in place (row stride q_stride). TDPBSUD (signed A x unsigned B) gives C[row][output] = the exact
// integer sum x * (w + offset); adding the block's start (-offset * sum x, as the VNNI kernels do) leaves the
// exact block dot. Q6_K, whose scales change every 16 elements, takes two half-block products. The float
// epilogue then follows the packed order of tensor/matmul_internal.h with the same AVX-512 operations as the
// VNNI kernels (tensor/matmul_packed_x86-inl.h, matmul_packed_kquant_x86-inl.h), so results are
// bit-identical to RunPackedTile's on every row count.
//
// Tiles: 0 = A, 1..3 = B of up to 3 output groups, 4..6 = their C (Q6_K below). Blocks are
// software-pipelined: the tile products of block b + 1 are issued before the float epilogue of block b reads
// b's stored C tiles.
//
// Tiles interface (all members may be static): Configure(const AmxTileConfig&); Load<t>(const void* base,
// int64_t stride); Zero<t>(); DotSignedUnsigned<c, a, b>(); Store<t>(void* base, int64_t stride); Release().
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"

// AVX-512 for the epilogue; the tile instructions themselves are inline assembly (tensor/matmul_amx.cc).
#define LOCKSTEP_AMX_EPILOGUE_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

namespace lockstep::amx {

// LDTILECFG's 64-byte operand, palette 1 (8 tiles of up to 16 rows x 64 bytes).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t (entries 8..15 must stay 0 with palette 1)
  uint8_t rows[16] = {};    // rows of tile t (entries 8..15 must stay 0)
};
static_assert(sizeof(AmxTileConfig) == 64);

inline constexpr int kAmxRows = 16;   // activation rows per A tile
inline constexpr int kAmxGroups = 3;  // 16-output groups per pass (Q6_K: 1)
inline constexpr int kTileA = 0, kTileB = 1, kTileC = 4;
// Q6_K's two half-block products (its scales differ per 16 elements): A halves in tiles 0 and 7, B halves in
// 1 and 2, C halves in 4 and 5.
inline constexpr int kTileAHigh = 7;

template <TensorType kType>
inline constexpr int kGroupsPerPass = kType == TensorType::kQ6_K ? 1 : kAmxGroups;

// The configuration for row chunks of `rows` (1..16) activation rows.
template <TensorType kType>
inline AmxTileConfig MakeTileConfig(int rows) {
  AmxTileConfig c;
  c.palette = 1;
  const auto set = [&c](int tile, int tile_rows, int bytes) {
    c.rows[tile] = static_cast<uint8_t>(tile_rows);
    c.colsb[tile] = static_cast<uint16_t>(bytes);
  };
  if constexpr (kType == TensorType::kQ6_K) {
    set(kTileA, rows, 16);  // 16 quants
    set(kTileAHigh, rows, 16);
    set(kTileB, 4, 64);  // 16 elements x 16 outputs
    set(kTileB + 1, 4, 64);
    set(kTileC, rows, 64);
    set(kTileC + 1, rows, 64);
  } else {
    set(kTileA, rows, 32);  // one block of int8 quants
    for (int g = 0; g < kAmxGroups; ++g) {
      set(kTileB + g, 8, 64);     // 32 elements (4 per dword) x 16 outputs
      set(kTileC + g, rows, 64);  // 16 int32 outputs
    }
  }
  return c;
}

// Per-call state of the kernel: C tiles land here (double-buffered by block parity), unpacked B tiles, and
// the float accumulators of one row chunk.
struct AmxScratch {
  alignas(64) int32_t dots[2][kAmxGroups][kAmxRows][kPackedGroup];
  alignas(64) uint8_t unpacked[kAmxGroups][8][64];
  alignas(64) float acc[kAmxRows][kAmxGroups][kPackedGroup];
};

// 16 f16 or u8 values as floats.
LOCKSTEP_AMX_EPILOGUE_TARGET inline __m512 LoadHalves(const std::byte* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
LOCKSTEP_AMX_EPILOGUE_TARGET inline __m512 LoadBytesAsFloats(const std::byte* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// 4 nibble vectors (tensor/packed_weights.h) as 8 B-tile rows: low nibbles (elements 0-15), then high
// nibbles (16-31). Q6_K (high != null) adds bits 4-5 from its two high-bit vectors, Q5_K (fifth != null) bit
// 4 from its fifth-bit vector (bit k of a byte for vector k's low nibble, bit 4 + k for its high one).
LOCKSTEP_AMX_EPILOGUE_TARGET inline void UnpackNibbles(const std::byte* nibbles, const std::byte* high,
                                                       uint8_t (*rows)[64],
                                                       const std::byte* fifth = nullptr) {
  const __m512i mask = _mm512_set1_epi8(0x0f), three = _mm512_set1_epi8(3), bit4 = _mm512_set1_epi8(0x10);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(nibbles + 64 * k);
    __m512i lo = _mm512_and_si512(v, mask), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    if (fifth != nullptr) {
      const __m512i f = _mm512_loadu_si512(fifth);
      lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_sll_epi16(f, _mm_cvtsi32_si128(4 - k)), bit4));
      hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srl_epi16(f, _mm_cvtsi32_si128(k)), bit4));
    }
    if (high != nullptr) {
      const __m512i h0 = _mm512_loadu_si512(high), h1 = _mm512_loadu_si512(high + 64);
      const __m128i shift = _mm_cvtsi32_si128(2 * k);
      lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(h0, shift), three), 4));
      hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srl_epi16(h1, shift), three), 4));
    }
    _mm512_store_si512(rows[k], lo);
    _mm512_store_si512(rows[k + 4], hi);
  }
}

// Issues the tile products of block b (a 32-element block; K-quants: sub-block b % 8 of unit b / 8) for
// group `group` into C tile kTileC + kGroup.
template <TensorType kType, class Tiles, int kGroup>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void IssueGroup(Tiles& tiles, const TileArgs& a, int64_t group, int64_t b,
                                                    AmxScratch& s) {
  constexpr int kB = kTileB + kGroup, kC = kTileC + kGroup;
  if constexpr (kType == TensorType::kQ8_0) {
    tiles.template Load<kB>(a.packed->Unit(group, b), 64);
  } else if constexpr (kType == TensorType::kQ4_0) {
    UnpackNibbles(a.packed->Unit(group, b), nullptr, s.unpacked[kGroup]);
    tiles.template Load<kB>(s.unpacked[kGroup], 64);
  } else if constexpr (kType == TensorType::kQ5_0 || kType == TensorType::kQ5_1) {
    const std::byte* unit = a.packed->Unit(group, b);
    UnpackNibbles(unit, nullptr, s.unpacked[kGroup], unit + kQ5High);
    tiles.template Load<kB>(s.unpacked[kGroup], 64);
  } else if constexpr (kType == TensorType::kQ4_K) {
    UnpackNibbles(a.packed->Unit(group, b / 8) + 256 * (b % 8), nullptr, s.unpacked[kGroup]);
    tiles.template Load<kB>(s.unpacked[kGroup], 64);
  } else if constexpr (kType == TensorType::kQ5_K) {
    const std::byte* unit = a.packed->Unit(group, b / 8);
    UnpackNibbles(unit + 256 * (b % 8), nullptr, s.unpacked[kGroup], unit + kQ5KHigh + 64 * (b % 8));
    tiles.template Load<kB>(s.unpacked[kGroup], 64);
  } else {  // Q6_K: two half products
    const std::byte* unit = a.packed->Unit(group, b / 8);
    UnpackNibbles(unit + 256 * (b % 8), unit + kQ6KHigh + 128 * (b % 8), s.unpacked[0]);
    tiles.template Load<kTileB>(s.unpacked[0], 64);
    tiles.template Load<kTileB + 1>(s.unpacked[0][4], 64);
    tiles.template Zero<kTileC>();
    tiles.template Zero<kTileC + 1>();
    tiles.template DotSignedUnsigned<kTileC, kTileA, kTileB>();
    tiles.template DotSignedUnsigned<kTileC + 1, kTileAHigh, kTileB + 1>();
    return;
  }
  tiles.template Zero<kC>();
  tiles.template DotSignedUnsigned<kC, kTileA, kB>();
}

template <TensorType kType, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void IssueBlock(Tiles& tiles, const TileArgs& a, int64_t group0,
                                                    int groups, int64_t r0, int64_t b, AmxScratch& s) {
  const int8_t* q = a.q + r0 * a.q_stride + 32 * b;
  tiles.template Load<kTileA>(q, a.q_stride);
  if constexpr (kType == TensorType::kQ6_K) tiles.template Load<kTileAHigh>(q + 16, a.q_stride);
  IssueGroup<kType, Tiles, 0>(tiles, a, group0, b, s);
  if constexpr ((kGroupsPerPass<kType>) > 1) {
    if (groups > 1) IssueGroup<kType, Tiles, 1>(tiles, a, group0 + 1, b, s);
    if (groups > 2) IssueGroup<kType, Tiles, 2>(tiles, a, group0 + 2, b, s);
  }
}

// Stores the C tiles of the block just issued (Q6_K: its two halves as dots[0] and dots[1]).
template <TensorType kType, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void StoreBlock(Tiles& tiles, int groups, int32_t (*dots)[kAmxRows][16]) {
  tiles.template Store<kTileC>(dots[0], 64);
  if (kType == TensorType::kQ6_K || groups > 1) tiles.template Store<kTileC + 1>(dots[1], 64);
  if (kType != TensorType::kQ6_K && groups > 2) tiles.template Store<kTileC + 2>(dots[2], 64);
}

// The packed order of tensor/matmul_internal.h for block b, with the VNNI kernels' operations: Q8_0 / Q4_0 /
// Q5_0 / Q5_1 acc = fma(float(C + start), scalef(weight scale, log2 activation scale), acc) (Q5_1 then adds
// fma(float(block sum), m * x_scale, acc)); Q4_K / Q5_K acc =
// fma(float(C), d * sc * x_scale, acc) then fma(float(block sum), -(dmin * m) * x_scale, acc); Q6_K acc =
// fma(float(sc_lo * (C_lo + start_lo) + sc_hi * (C_hi + start_hi)), d * x_scale, acc).
template <TensorType kType>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void Epilogue(const TileArgs& a, int64_t group0, int groups, int64_t r0,
                                                  int rows, int64_t b, const int32_t (*dots)[kAmxRows][16],
                                                  AmxScratch& s) {
  const int64_t blocks = a.in / 32;
  if constexpr (!IsKQuant(kType)) {
    __m512 dw[kAmxGroups], m[kAmxGroups];
    for (int g = 0; g < groups; ++g) {
      dw[g] = LoadHalves(a.packed->Unit(group0 + g, b) + PackedScaleOffset(kType));
      if constexpr (HasMinTerm(kType)) m[g] = LoadHalves(a.packed->Unit(group0 + g, b) + kQ5M);
    }
    for (int r = 0; r < rows; ++r) {
      const int64_t i = (r0 + r) * blocks + b;
      const __m512i start = _mm512_set1_epi32(
          kType == TensorType::kQ8_0 ? a.q8_starts[i] : -PackedValueOffset(kType) * a.sums[i]);
      const __m512 exponent = _mm512_getexp_ps(_mm512_set1_ps(a.d[i]));  // -inf for a zero block: scale 0
      for (int g = 0; g < groups; ++g) {
        const __m512i dot = _mm512_add_epi32(_mm512_load_si512(dots[g][r]), start);
        const __m512 scale = _mm512_scalef_ps(dw[g], exponent);
        __m512 acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, _mm512_load_ps(s.acc[r][g]));
        if constexpr (HasMinTerm(kType)) {  // Q5_1: + float(block sum) * (m * x_scale)
          acc = _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(a.sums[i])),
                                _mm512_mul_ps(m[g], _mm512_set1_ps(a.d[i])), acc);
        }
        _mm512_store_ps(s.acc[r][g], acc);
      }
    }
  } else if constexpr (HasMinTerm(kType)) {
    const int j = static_cast<int>(b % 8);
    __m512 scale[kAmxGroups], min_scale[kAmxGroups];
    for (int g = 0; g < groups; ++g) {
      const std::byte* unit = a.packed->Unit(group0 + g, b / 8);
      scale[g] =
          _mm512_mul_ps(LoadHalves(unit + kQ4KD), LoadBytesAsFloats(unit + kQ4KScales + kPackedGroup * j));
      min_scale[g] = _mm512_castsi512_ps(_mm512_xor_si512(
          _mm512_castps_si512(_mm512_mul_ps(LoadHalves(unit + kQ4KDmin),
                                            LoadBytesAsFloats(unit + kQ4KMins + kPackedGroup * j))),
          _mm512_set1_epi32(INT32_MIN)));
    }
    for (int r = 0; r < rows; ++r) {
      const int64_t i = (r0 + r) * blocks + b;
      const __m512 dx = _mm512_set1_ps(a.d[i]), sum = _mm512_set1_ps(static_cast<float>(a.sums[i]));
      for (int g = 0; g < groups; ++g) {
        __m512 acc = _mm512_load_ps(s.acc[r][g]);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(dots[g][r])), _mm512_mul_ps(scale[g], dx),
                              acc);
        acc = _mm512_fmadd_ps(sum, _mm512_mul_ps(min_scale[g], dx), acc);
        _mm512_store_ps(s.acc[r][g], acc);
      }
    }
  } else {
    static_assert(kType == TensorType::kQ6_K);
    const int j = static_cast<int>(b % 8);
    const std::byte* unit = a.packed->Unit(group0, b / 8);
    const __m512 d = LoadHalves(unit + kQ6KD);
    const __m512i sc_lo =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + kQ6KScales + 32 * j)));
    const __m512i sc_hi = _mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + kQ6KScales + 32 * j + kPackedGroup)));
    for (int r = 0; r < rows; ++r) {
      const int64_t i = (r0 + r) * blocks + b;
      const __m512i lo =
          _mm512_add_epi32(_mm512_load_si512(dots[0][r]), _mm512_set1_epi32(-32 * a.sums16[2 * i]));
      const __m512i hi =
          _mm512_add_epi32(_mm512_load_si512(dots[1][r]), _mm512_set1_epi32(-32 * a.sums16[2 * i + 1]));
      const __m512i total = _mm512_add_epi32(_mm512_mullo_epi32(lo, sc_lo), _mm512_mullo_epi32(hi, sc_hi));
      _mm512_store_ps(s.acc[r][0],
                      _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, _mm512_set1_ps(a.d[i])),
                                      _mm512_load_ps(s.acc[r][0])));
    }
  }
}

// y[r][o] for every row and o in [o_begin, o_end) (o_begin a multiple of 16). Configures the tiles itself and
// releases them before returning.
template <TensorType kType, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET void PackedTileTyped(Tiles& tiles, const TileArgs& a, int64_t o_begin,
                                                  int64_t o_end, AmxScratch& s) {
  const int64_t blocks = a.in / 32;
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  int configured_rows = 0;
  for (int64_t group0 = o_begin / kPackedGroup; group0 < group_end; group0 += kGroupsPerPass<kType>) {
    const int groups = static_cast<int>(std::min<int64_t>(kGroupsPerPass<kType>, group_end - group0));
    for (int64_t r0 = 0; r0 < a.rows; r0 += kAmxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kAmxRows, a.rows - r0));
      if (rows != configured_rows) {
        const AmxTileConfig config = MakeTileConfig<kType>(rows);
        tiles.Configure(config);
        configured_rows = rows;
      }
      std::memset(s.acc, 0, sizeof(s.acc));
      IssueBlock<kType>(tiles, a, group0, groups, r0, 0, s);
      StoreBlock<kType>(tiles, groups, s.dots[0]);
      for (int64_t b = 0; b < blocks; ++b) {
        const bool next = b + 1 < blocks;
        if (next) IssueBlock<kType>(tiles, a, group0, groups, r0, b + 1, s);
        Epilogue<kType>(a, group0, groups, r0, rows, b, s.dots[b & 1], s);
        if (next) StoreBlock<kType>(tiles, groups, s.dots[(b + 1) & 1]);
      }
      for (int g = 0; g < groups; ++g) {
        const int64_t o0 = (group0 + g) * kPackedGroup;
        const int64_t n = std::min<int64_t>(kPackedGroup, a.out - o0);
        const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
        for (int r = 0; r < rows; ++r) {
          _mm512_mask_storeu_ps(a.y + (r0 + r) * a.out + o0, mask, _mm512_load_ps(s.acc[r][g]));
        }
      }
    }
  }
  tiles.Release();
}

// PackedTileTyped for a.type (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K).
template <class Tiles>
void PackedTile(Tiles& tiles, const TileArgs& a, int64_t o_begin, int64_t o_end, AmxScratch& s) {
  switch (a.type) {
    case TensorType::kQ8_0:
      return PackedTileTyped<TensorType::kQ8_0>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ4_0:
      return PackedTileTyped<TensorType::kQ4_0>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ4_K:
      return PackedTileTyped<TensorType::kQ4_K>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ5_K:
      return PackedTileTyped<TensorType::kQ5_K>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ5_0:
      return PackedTileTyped<TensorType::kQ5_0>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ5_1:
      return PackedTileTyped<TensorType::kQ5_1>(tiles, a, o_begin, o_end, s);
    case TensorType::kQ6_K:
      return PackedTileTyped<TensorType::kQ6_K>(tiles, a, o_begin, o_end, s);
    default:
      __builtin_trap();
  }
}

}  // namespace lockstep::amx
