// The AMX-INT8 kernel for packed Q8_0 / Q4_0 weights (tensor/packed_weights.h), written over a tile-unit
// interface so that the same code runs on the CPU's tiles (tensor/matmul_amx.cc) and, in tests, on a software
// model of them (tests/testing/amx_tile_model.h) on any AVX-512 machine.
//
// Shapes: a packed unit's quant vectors are already an AMX "B" tile: vector k holds, for each of 16 outputs,
// elements 4k..4k+3 (8 rows of 64 bytes for a 32-element block; Q4_0's nibbles are split into 8 such rows
// first). The "A" tile is 16 activation rows x one block's 32 int8 quants, read in place (row stride
// q_stride). TDPBSUD (signed A x unsigned B) gives C[row][output] = the exact integer sum x * (w + offset);
// adding the block's start (-offset * sum x, as the VNNI kernels do) leaves the exact block dot. The float
// epilogue then follows the packed order of tensor/matmul_internal.h with the same AVX-512 operations as the
// VNNI kernel (VSCALEFPS for weight scale * activation scale, one FMA per block), so results are
// bit-identical to RunPackedTile's on every row count.
//
// Tiles: 0 = A, 1..3 = B of up to 3 output groups, 4..6 = their C. Blocks are software-pipelined: the tile
// products of block b + 1 are issued before the float epilogue of block b reads b's stored C tiles.
//
// Tiles interface (all members may be static): Configure(const AmxTileConfig&); Load<t>(const void* base,
// int64_t stride); Zero<t>(); DotSignedUnsigned<c, a, b>(); Store<t>(void* base, int64_t stride); Release().
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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
inline constexpr int kAmxGroups = 3;  // 16-output groups per pass
inline constexpr int kTileA = 0, kTileB = 1, kTileC = 4;

// The configuration for row chunks of `rows` (1..16) activation rows.
inline AmxTileConfig MakeTileConfig(int rows) {
  AmxTileConfig c;
  c.palette = 1;
  c.rows[kTileA] = static_cast<uint8_t>(rows);
  c.colsb[kTileA] = 32;  // one block of int8 quants
  for (int g = 0; g < kAmxGroups; ++g) {
    c.rows[kTileB + g] = 8;  // 32 elements / 4 per dword
    c.colsb[kTileB + g] = 64;
    c.rows[kTileC + g] = static_cast<uint8_t>(rows);
    c.colsb[kTileC + g] = 64;  // 16 int32 outputs
  }
  return c;
}

// Per-call state of the kernel: C tiles land here (double-buffered by block parity), Q4_0's unpacked B tiles,
// and the float accumulators of one row chunk.
struct AmxScratch {
  alignas(64) int32_t dots[2][kAmxGroups][kAmxRows][kPackedGroup];
  alignas(64) uint8_t nibbles[kAmxGroups][8][64];
  alignas(64) float acc[kAmxRows][kAmxGroups][kPackedGroup];
};

// Q4_0: the 4 nibble vectors of a packed unit as 8 rows of values + 8 (low nibbles: elements 0-15, then
// high).
LOCKSTEP_AMX_EPILOGUE_TARGET inline void UnpackNibbles(const std::byte* unit, uint8_t (*rows)[64]) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(unit + 64 * k);
    _mm512_store_si512(rows[k], _mm512_and_si512(v, mask));
    _mm512_store_si512(rows[k + 4], _mm512_and_si512(_mm512_srli_epi16(v, 4), mask));
  }
}

// Issues the tile products of block b for groups [0, groups): C_g = A x B_g.
template <class Tiles, int kGroup>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void IssueGroup(Tiles& tiles, const TileArgs& a, int64_t group, int64_t b,
                                                    AmxScratch& s) {
  const std::byte* unit = a.packed->Unit(group, b);
  if (a.type == TensorType::kQ8_0) {
    tiles.template Load<kTileB + kGroup>(unit, 64);
  } else {
    UnpackNibbles(unit, s.nibbles[kGroup]);
    tiles.template Load<kTileB + kGroup>(s.nibbles[kGroup], 64);
  }
  tiles.template Zero<kTileC + kGroup>();
  tiles.template DotSignedUnsigned<kTileC + kGroup, kTileA, kTileB + kGroup>();
}

template <class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void IssueBlock(Tiles& tiles, const TileArgs& a, int64_t group0,
                                                    int groups, int64_t r0, int64_t b, AmxScratch& s) {
  tiles.template Load<kTileA>(a.q + r0 * a.q_stride + 32 * b, a.q_stride);
  IssueGroup<Tiles, 0>(tiles, a, group0, b, s);
  if (groups > 1) IssueGroup<Tiles, 1>(tiles, a, group0 + 1, b, s);
  if (groups > 2) IssueGroup<Tiles, 2>(tiles, a, group0 + 2, b, s);
}

template <class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void StoreBlock(Tiles& tiles, int groups, int32_t (*dots)[kAmxRows][16]) {
  tiles.template Store<kTileC>(dots[0], 64);
  if (groups > 1) tiles.template Store<kTileC + 1>(dots[1], 64);
  if (groups > 2) tiles.template Store<kTileC + 2>(dots[2], 64);
}

// acc[r][g] = fma(float(C + start), weight scale * activation scale, acc[r][g]) for block b.
LOCKSTEP_AMX_EPILOGUE_TARGET inline void Epilogue(const TileArgs& a, int64_t group0, int groups, int64_t r0,
                                                  int rows, int64_t b, const int32_t (*dots)[kAmxRows][16],
                                                  AmxScratch& s) {
  const int64_t blocks = a.packed->units;
  const bool q8 = a.type == TensorType::kQ8_0;
  const int scale_offset = PackedScaleOffset(a.type);
  __m512 dw[kAmxGroups];
  for (int g = 0; g < groups; ++g) {
    dw[g] = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.packed->Unit(group0 + g, b) + scale_offset)));
  }
  for (int r = 0; r < rows; ++r) {
    const int64_t i = (r0 + r) * blocks + b;
    const __m512i start = _mm512_set1_epi32(q8 ? a.q8_starts[i] : -PackedValueOffset(a.type) * a.sums[i]);
    const __m512 exponent = _mm512_getexp_ps(_mm512_set1_ps(a.d[i]));  // -inf for a zero block: scale 0
    for (int g = 0; g < groups; ++g) {
      const __m512i dot = _mm512_add_epi32(_mm512_load_si512(dots[g][r]), start);
      const __m512 scale = _mm512_scalef_ps(dw[g], exponent);
      _mm512_store_ps(s.acc[r][g],
                      _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, _mm512_load_ps(s.acc[r][g])));
    }
  }
}

// y[r][o] for every row and o in [o_begin, o_end) (o_begin a multiple of 16), packed Q8_0 or Q4_0 weights.
// Configures the tiles itself and releases them before returning.
template <class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET void PackedTile(Tiles& tiles, const TileArgs& a, int64_t o_begin, int64_t o_end,
                                             AmxScratch& s) {
  const int64_t blocks = a.packed->units;
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  int configured_rows = 0;
  for (int64_t group0 = o_begin / kPackedGroup; group0 < group_end; group0 += kAmxGroups) {
    const int groups = static_cast<int>(std::min<int64_t>(kAmxGroups, group_end - group0));
    for (int64_t r0 = 0; r0 < a.rows; r0 += kAmxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kAmxRows, a.rows - r0));
      if (rows != configured_rows) {
        const AmxTileConfig config = MakeTileConfig(rows);
        tiles.Configure(config);
        configured_rows = rows;
      }
      std::memset(s.acc, 0, sizeof(s.acc));
      IssueBlock(tiles, a, group0, groups, r0, 0, s);
      StoreBlock(tiles, groups, s.dots[0]);
      for (int64_t b = 0; b < blocks; ++b) {
        const bool next = b + 1 < blocks;
        if (next) IssueBlock(tiles, a, group0, groups, r0, b + 1, s);
        Epilogue(a, group0, groups, r0, rows, b, s.dots[b & 1], s);
        if (next) StoreBlock(tiles, groups, s.dots[(b + 1) & 1]);
      }
      for (int g = 0; g < groups; ++g) {
        const int64_t o0 = (group0 + g) * kPackedGroup;
        const int64_t n = std::min<int64_t>(kPackedGroup, a.out - o0);
        const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
        for (int r = 0; r < rows; ++r)
          _mm512_mask_storeu_ps(a.y + (r0 + r) * a.out + o0, mask, _mm512_load_ps(s.acc[r][g]));
      }
    }
  }
  tiles.Release();
}

}  // namespace lockstep::amx
