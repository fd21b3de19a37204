// The AMX-INT8 kernel for packed weights (tensor/packed_weights.h: Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K,
// IQ4_NL, IQ4_XS, MXFP4;
// tensor/matmul_amx.cc says which of them the amx level runs on it),
// written over a tile-unit interface so that the same code runs on the CPU's tiles (tensor/matmul_amx.cc)
// and, in tests, on a software model of them (tests/testing/amx_tile_model.h) on any AVX-512 machine.
//
// Shapes: a packed 32-element block's quant vectors are an AMX "B" tile: vector k holds, for each of 16
// outputs, elements 4k..4k+3 (8 rows of 64 bytes; nibble types split into 8 such rows, Q6_K with its high
// bits merged). The "A" tile is 16 activation rows x one block's 32 int8 quants, read in place (row stride
// q_stride). TDPBSSD (signed x signed; the offset types' B made signed) or TDPBSUD (signed x unsigned: Q5_1,
// Q4_K, Q5_K, whose values have no offset) gives C[row][output] = the exact integer block dot, as the VNNI
// kernels' dot plus start does. The float epilogue then follows the packed order of tensor/matmul_internal.h
// with the same AVX-512 operations as the VNNI kernels (tensor/matmul_packed_x86-inl.h,
// matmul_packed_kquant_x86-inl.h), so results are bit-identical to RunPackedTile's on every row count.
//
// Loop order: for each band of kBandRows activation rows, for each 16-output group, for each chunk of
// kChunkBlocks blocks: the chunk's B tiles are prepared once (tensor/packed_weights.h's vectors as 8 B-tile
// rows of bytes: nibble types unpacked; the types with a value offset — Q8_0, Q4_0, Q5_0, Q6_K — made signed
// by subtracting it and the table types' indices looked up, so TDPBSSD gives the exact block dot with no
// start term) and serve every 16-row chunk of the band (whose activations stay in cache across the task's
// output groups). Per 16-row chunk, every block's products are issued first, up to four in flight (tiles
// below), then the float epilogue runs block by block with the chunk's 16 accumulators in registers (memory
// between chunks). Interleaving the next chunk's products with the epilogue, or issuing a band's products
// before its epilogues, measured slower (docs/kernels.md).
//
// Tiles interface (all members may be static): Configure(const AmxTileConfig&); Load<t>(const void* base,
// int64_t stride); Zero<t>(); DotSignedUnsigned<c, a, b>(); DotSignedSigned<c, a, b>(); Store<t>(void* base,
// int64_t stride); Release().
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "tensor/quant_blocks.h"

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

inline constexpr int kAmxRows = 16;     // activation rows per A tile
inline constexpr int kChunkBlocks = 8;  // blocks whose B tiles are prepared together
inline constexpr int kBandRows = 64;    // activation rows that share one chunk's prepared B tiles
// Tiles: A in 0 / 1 and B in 2 / 3 by block parity, C in 4..7 (block j of a chunk in C tile 4 + j % 4), so
// that up to four products are in flight. Q6_K: A halves in 0 / 1, B halves in 2 / 3, C halves in 4 / 5 or
// 6 / 7 by block parity.
inline constexpr int kTileA = 0, kTileB = 2, kTileC = 4;
template <TensorType kType>
inline constexpr int kSlots = kType == TensorType::kQ6_K ? 2 : 4;  // products in flight

// Types whose B tiles are made signed (value - PackedValueOffset) and multiplied with TDPBSSD.
template <TensorType kType>
inline constexpr bool kSignedB = kType == TensorType::kQ8_0 || kType == TensorType::kQ4_0 ||
                                 kType == TensorType::kQ5_0 || kType == TensorType::kQ6_K ||
                                 IsTableType(kType);
template <TensorType kType>
inline constexpr int kValueOffset = kType == TensorType::kQ6_K ? 32 : PackedValueOffset(kType);

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
    for (int t : {0, 1}) set(kTileA + t, rows, 16);  // 16 quants
    for (int t : {0, 1}) set(kTileB + t, 4, 64);     // 16 elements x 16 outputs
  } else {
    for (int t : {0, 1}) set(kTileA + t, rows, 32);  // one block of int8 quants
    for (int t : {0, 1}) set(kTileB + t, 8, 64);     // 32 elements (4 per dword) x 16 outputs
  }
  for (int t = 0; t < 4; ++t) set(kTileC + t, rows, 64);  // 16 int32 outputs
  return c;
}

// Per-call state of the kernel: the C tiles of a chunk's blocks land here (Q6_K: two halves), the prepared
// B tiles of one chunk, and the float sums of one band between chunks.
struct AmxScratch {
  alignas(64) int32_t dots[kChunkBlocks][2][kAmxRows][kPackedGroup];
  alignas(64) uint8_t b[kChunkBlocks][8][64];
  alignas(64) float acc[kBandRows][kPackedGroup];
};

// 16 f16 or u8 values as floats.
LOCKSTEP_AMX_EPILOGUE_TARGET inline __m512 LoadHalves(const std::byte* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
LOCKSTEP_AMX_EPILOGUE_TARGET inline __m512 LoadBytesAsFloats(const std::byte* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// 4 nibble vectors (tensor/packed_weights.h) as 8 B-tile rows: low nibbles (elements 0-15), then high
// nibbles (16-31), minus `offset`. Q6_K (high != null) adds bits 4-5 from its two high-bit vectors, Q5_K /
// Q5_0 / Q5_1 (fifth != null) bit 4 from the fifth-bit vector (bit k of a byte for vector k's low nibble,
// bit 4 + k for its high one).
LOCKSTEP_AMX_EPILOGUE_TARGET inline void UnpackNibbles(const std::byte* nibbles, const std::byte* high,
                                                       uint8_t (*rows)[64], const std::byte* fifth,
                                                       int offset) {
  const __m512i mask = _mm512_set1_epi8(0x0f), three = _mm512_set1_epi8(3), bit4 = _mm512_set1_epi8(0x10);
  const __m512i minus = _mm512_set1_epi8(static_cast<char>(offset));
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
    _mm512_store_si512(rows[k], _mm512_sub_epi8(lo, minus));
    _mm512_store_si512(rows[k + 4], _mm512_sub_epi8(hi, minus));
  }
}

// Block b's quant vectors of output group `group` as 8 B-tile rows (signed for kSignedB types).
template <TensorType kType>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void PrepareB(const TileArgs& a, int64_t group, int64_t b,
                                                  uint8_t (*rows)[64]) {
  constexpr int kOffset = kSignedB<kType> ? kValueOffset<kType> : 0;
  if constexpr (kType == TensorType::kQ8_0) {
    const std::byte* unit = a.packed->Unit(group, b);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // w + 128 as unsigned -> w as signed
    for (int k = 0; k < 8; ++k) {
      _mm512_store_si512(rows[k], _mm512_xor_si512(_mm512_loadu_si512(unit + 64 * k), flip));
    }
  } else if constexpr (kType == TensorType::kQ4_0) {
    UnpackNibbles(a.packed->Unit(group, b), nullptr, rows, nullptr, kOffset);
  } else if constexpr (kType == TensorType::kQ5_0 || kType == TensorType::kQ5_1) {
    const std::byte* unit = a.packed->Unit(group, b);
    UnpackNibbles(unit, nullptr, rows, unit + kQ5High, kOffset);
  } else if constexpr (kType == TensorType::kQ4_K) {
    UnpackNibbles(a.packed->Unit(group, b / 8) + 256 * (b % 8), nullptr, rows, nullptr, 0);
  } else if constexpr (kType == TensorType::kQ5_K) {
    const std::byte* unit = a.packed->Unit(group, b / 8);
    UnpackNibbles(unit + 256 * (b % 8), nullptr, rows, unit + kQ5KHigh + 64 * (b % 8), 0);
  } else if constexpr (IsTableType(kType)) {  // index nibbles, then their table values (VPSHUFB per lane)
    UnpackNibbles(kType == TensorType::kIQ4_XS ? a.packed->Unit(group, b / 8) + 256 * (b % 8)
                                               : a.packed->Unit(group, b),
                  nullptr, rows, nullptr, 0);
    const __m512i table =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(TableValues(kType))));
    for (int k = 0; k < 8; ++k) {
      _mm512_store_si512(rows[k], _mm512_shuffle_epi8(table, _mm512_load_si512(rows[k])));
    }
  } else {
    static_assert(kType == TensorType::kQ6_K);
    const std::byte* unit = a.packed->Unit(group, b / 8);
    UnpackNibbles(unit + 256 * (b % 8), unit + kQ6KHigh + 128 * (b % 8), rows, nullptr, kOffset);
  }
}

// Issues the tile products of chunk block j (activation block b) of the 16-row chunk at r0 into slot kSlot's
// C tile(s) (kSlot = j % kSlots).
template <TensorType kType, class Tiles, int kSlot>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void Issue(Tiles& tiles, const TileArgs& a, int64_t r0, int64_t b, int j,
                                               AmxScratch& s) {
  const int8_t* q = a.q + r0 * a.q_stride + 32 * b;
  if constexpr (kType == TensorType::kQ6_K) {
    constexpr int kLo = kTileC + 2 * kSlot, kHi = kLo + 1;
    tiles.template Load<kTileA>(q, a.q_stride);
    tiles.template Load<kTileA + 1>(q + 16, a.q_stride);
    tiles.template Load<kTileB>(s.b[j][0], 64);
    tiles.template Load<kTileB + 1>(s.b[j][4], 64);
    tiles.template Zero<kLo>();
    tiles.template Zero<kHi>();
    tiles.template DotSignedSigned<kLo, kTileA, kTileB>();
    tiles.template DotSignedSigned<kHi, kTileA + 1, kTileB + 1>();
  } else {
    constexpr int kA = kTileA + kSlot % 2, kB = kTileB + kSlot % 2, kC = kTileC + kSlot;
    tiles.template Load<kA>(q, a.q_stride);
    tiles.template Load<kB>(s.b[j], 64);
    tiles.template Zero<kC>();
    if constexpr (kSignedB<kType>) {
      tiles.template DotSignedSigned<kC, kA, kB>();
    } else {
      tiles.template DotSignedUnsigned<kC, kA, kB>();
    }
  }
}

// Stores slot kSlot's C tile(s) into dots (Q6_K: dots[0] and dots[1]).
template <TensorType kType, class Tiles, int kSlot>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void Store(Tiles& tiles, int32_t (*dots)[kAmxRows][kPackedGroup]) {
  if constexpr (kType == TensorType::kQ6_K) {
    tiles.template Store<kTileC + 2 * kSlot>(dots[0], 64);
    tiles.template Store<kTileC + 2 * kSlot + 1>(dots[1], 64);
  } else {
    tiles.template Store<kTileC + kSlot>(dots[0], 64);
  }
}

// Issue and Store for a slot known at run time.
template <TensorType kType, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void IssueInSlot(Tiles& tiles, const TileArgs& a, int64_t r0, int64_t b,
                                                     int j, AmxScratch& s) {
  switch (j % kSlots<kType>) {
    case 0:
      return Issue<kType, Tiles, 0>(tiles, a, r0, b, j, s);
    case 1:
      return Issue<kType, Tiles, 1>(tiles, a, r0, b, j, s);
    case 2:
      if constexpr (kSlots < kType >> 2) return Issue<kType, Tiles, 2>(tiles, a, r0, b, j, s);
      break;
    default:
      if constexpr (kSlots < kType >> 3) return Issue<kType, Tiles, 3>(tiles, a, r0, b, j, s);
      break;
  }
}
template <TensorType kType, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void StoreFromSlot(Tiles& tiles, int j, AmxScratch& s) {
  switch (j % kSlots<kType>) {
    case 0:
      return Store<kType, Tiles, 0>(tiles, s.dots[j]);
    case 1:
      return Store<kType, Tiles, 1>(tiles, s.dots[j]);
    case 2:
      if constexpr (kSlots < kType >> 2) return Store<kType, Tiles, 2>(tiles, s.dots[j]);
      break;
    default:
      if constexpr (kSlots < kType >> 3) return Store<kType, Tiles, 3>(tiles, s.dots[j]);
      break;
  }
}

// acc[r] += block b of rows r0.. (rows of them) x group `group`, in the packed order of
// tensor/matmul_internal.h with the VNNI kernels' operations (dot is the exact block dot): Q8_0 / Q4_0 / Q5_0
// / Q5_1 / IQ4_NL / IQ4_XS / MXFP4 acc = fma(float(dot), weight scale * x_scale, acc) (IQ4_XS's weight scale
// d * (ls - 32); Q5_1 then adds fma(float(block sum), m * x_scale, acc)); Q4_K / Q5_K acc = fma(float(dot),
// d * sc * x_scale, acc) then fma(float(block sum), -(dmin * m) * x_scale, acc); Q6_K acc =
// fma(float(sc_lo * dot_lo + sc_hi * dot_hi), d * x_scale, acc). kSumD (only where TileArgs::sum_d_exact):
// the min terms from TileArgs::sum_d, as the VNNI kernels take them then (same bits).
template <TensorType kType, bool kSumD>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void Epilogue(const TileArgs& a, int64_t group, int64_t r0, int rows,
                                                  int64_t b, const int32_t (*dots)[kAmxRows][16],
                                                  __m512 (&acc)[kAmxRows]) {
  const int64_t blocks = a.in / 32;
  const float* d = a.d + r0 * blocks + b;
  const int32_t* sums = a.sums + r0 * blocks + b;
  const float* sum_d = a.sum_d + r0 * blocks + b;
  if constexpr (!IsKQuant(kType) || kType == TensorType::kIQ4_XS) {  // acc += float(dot) * (dw * x_scale)
    __m512 dw;
    [[maybe_unused]] __m512 m;
    if constexpr (kType == TensorType::kIQ4_XS) {  // d * (ls - 32)
      const std::byte* unit = a.packed->Unit(group, b / 8);
      dw = _mm512_mul_ps(
          LoadHalves(unit + kIQ4XSD),
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
              reinterpret_cast<const __m128i*>(unit + kIQ4XSScales + kPackedGroup * (b % 8))))));
    } else {
      const std::byte* unit = a.packed->Unit(group, b);
      dw = kType == TensorType::kMXFP4 ? _mm512_loadu_ps(unit + PackedScaleOffset(kType))
                                       : LoadHalves(unit + PackedScaleOffset(kType));
      if constexpr (HasMinTerm(kType)) m = LoadHalves(unit + kQ5M);
    }
#pragma GCC unroll 16
    for (int r = 0; r < kAmxRows; ++r) {
      if (r == rows) break;
      // The VNNI kernels' scalef(dw, getexp(x_scale)) as a product: x_scale is a power of two (or 0), so both
      // give the correctly rounded dw * x_scale; a multiply runs on either vector port.
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(d[r * blocks]));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(dots[0][r])), scale, acc[r]);
      if constexpr (HasMinTerm(kType)) {  // Q5_1: + float(block sum) * (m * x_scale)
        acc[r] = kSumD ? _mm512_fmadd_ps(_mm512_set1_ps(sum_d[r * blocks]), m, acc[r])
                       : _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(sums[r * blocks])),
                                         _mm512_mul_ps(m, _mm512_set1_ps(d[r * blocks])), acc[r]);
      }
    }
  } else if constexpr (HasMinTerm(kType)) {
    const int j = static_cast<int>(b % 8);
    const std::byte* unit = a.packed->Unit(group, b / 8);
    const __m512 scale =
        _mm512_mul_ps(LoadHalves(unit + kQ4KD), LoadBytesAsFloats(unit + kQ4KScales + kPackedGroup * j));
    const __m512 min_scale = _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(_mm512_mul_ps(LoadHalves(unit + kQ4KDmin),
                                          LoadBytesAsFloats(unit + kQ4KMins + kPackedGroup * j))),
        _mm512_set1_epi32(INT32_MIN)));
#pragma GCC unroll 16
    for (int r = 0; r < kAmxRows; ++r) {
      if (r == rows) break;
      const __m512 dx = _mm512_set1_ps(d[r * blocks]);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(dots[0][r])), _mm512_mul_ps(scale, dx),
                               acc[r]);
      acc[r] = kSumD ? _mm512_fmadd_ps(_mm512_set1_ps(sum_d[r * blocks]), min_scale, acc[r])
                     : _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(sums[r * blocks])),
                                       _mm512_mul_ps(min_scale, dx), acc[r]);
    }
  } else {
    static_assert(kType == TensorType::kQ6_K);
    const int j = static_cast<int>(b % 8);
    const std::byte* unit = a.packed->Unit(group, b / 8);
    const __m512 dw = LoadHalves(unit + kQ6KD);
    const __m512i sc_lo =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + kQ6KScales + 32 * j)));
    const __m512i sc_hi = _mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + kQ6KScales + 32 * j + kPackedGroup)));
#pragma GCC unroll 16
    for (int r = 0; r < kAmxRows; ++r) {
      if (r == rows) break;
      const __m512i total = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_load_si512(dots[0][r]), sc_lo),
                                             _mm512_mullo_epi32(_mm512_load_si512(dots[1][r]), sc_hi));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(dw, _mm512_set1_ps(d[r * blocks])),
                               acc[r]);
    }
  }
}

// The blocks [b0, b1) of chunk rows r0.. (the chunk's B tiles prepared in s.b): every block's products first,
// kSlots in flight (block j's C tile stored once block j + kSlots - 1 is issued), then the epilogues.
template <TensorType kType, bool kSumD, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET inline void ChunkProducts(Tiles& tiles, const TileArgs& a, int64_t group,
                                                       int64_t r0, int rows, int64_t b0, int64_t b1,
                                                       AmxScratch& s, __m512 (&acc)[kAmxRows]) {
  const int n = static_cast<int>(b1 - b0);
  constexpr int kLag = kSlots<kType> - 1;
  for (int j = 0; j < n; ++j) {
    IssueInSlot<kType>(tiles, a, r0, b0 + j, j, s);
    if (j >= kLag) StoreFromSlot<kType>(tiles, j - kLag, s);
  }
  for (int j = std::max(0, n - kLag); j < n; ++j) StoreFromSlot<kType>(tiles, j, s);
  for (int j = 0; j < n; ++j) Epilogue<kType, kSumD>(a, group, r0, rows, b0 + j, s.dots[j], acc);
}

// y[r][o] for every row and o in [o_begin, o_end) (o_begin a multiple of 16). Configures the tiles itself and
// releases them before returning.
template <TensorType kType, bool kSumD, class Tiles>
LOCKSTEP_AMX_EPILOGUE_TARGET void PackedTileWith(Tiles& tiles, const TileArgs& a, int64_t o_begin,
                                                 int64_t o_end, AmxScratch& s) {
  const int64_t blocks = a.in / 32;
  const int64_t group_end = (o_end + kPackedGroup - 1) / kPackedGroup;
  int configured_rows = 0;
  for (int64_t band = 0; band < a.rows; band += kBandRows) {  // the band's activations stay in cache
    const int64_t band_end = std::min<int64_t>(a.rows, band + kBandRows);
    for (int64_t group = o_begin / kPackedGroup; group < group_end; ++group) {
      const int64_t o0 = group * kPackedGroup;
      const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(kPackedGroup, a.out - o0)) - 1);
      for (int64_t b0 = 0; b0 < blocks; b0 += kChunkBlocks) {
        const int64_t b1 = std::min<int64_t>(blocks, b0 + kChunkBlocks);
        for (int64_t b = b0; b < b1; ++b) PrepareB<kType>(a, group, b, s.b[b - b0]);
        for (int64_t r0 = band; r0 < band_end; r0 += kAmxRows) {
          const int rows = static_cast<int>(std::min<int64_t>(kAmxRows, band_end - r0));
          if (rows != configured_rows) {
            const AmxTileConfig config = MakeTileConfig<kType>(rows);
            tiles.Configure(config);
            configured_rows = rows;
          }
          float(*const sums)[kPackedGroup] = s.acc + (r0 - band);
          __m512 acc[kAmxRows];
          for (int r = 0; r < kAmxRows; ++r) acc[r] = b0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(sums[r]);
          ChunkProducts<kType, kSumD>(tiles, a, group, r0, rows, b0, b1, s, acc);
          if (b1 < blocks) {
            for (int r = 0; r < kAmxRows; ++r) _mm512_store_ps(sums[r], acc[r]);
          } else {
            for (int r = 0; r < rows; ++r) _mm512_mask_storeu_ps(a.y + (r0 + r) * a.out + o0, mask, acc[r]);
          }
        }
      }
    }
  }
  tiles.Release();
}

template <TensorType kType, class Tiles>
void PackedTileTyped(Tiles& tiles, const TileArgs& a, int64_t o_begin, int64_t o_end, AmxScratch& s) {
  if (HasMinTerm(kType) && a.sum_d_exact) return PackedTileWith<kType, true>(tiles, a, o_begin, o_end, s);
  PackedTileWith<kType, false>(tiles, a, o_begin, o_end, s);
}

// PackedTileTyped for a.type (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q3_K, IQ4_NL, IQ4_XS or MXFP4).
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
    case TensorType::kQ3_K:  // packed as Q6_K (tensor/packed_weights.h)
      return PackedTileTyped<TensorType::kQ6_K>(tiles, a, o_begin, o_end, s);
    case TensorType::kIQ4_NL:
      return PackedTileTyped<TensorType::kIQ4_NL>(tiles, a, o_begin, o_end, s);
    case TensorType::kIQ4_XS:
      return PackedTileTyped<TensorType::kIQ4_XS>(tiles, a, o_begin, o_end, s);
    case TensorType::kMXFP4:
      return PackedTileTyped<TensorType::kMXFP4>(tiles, a, o_begin, o_end, s);
    default:
      __builtin_trap();
  }
}

}  // namespace lockstep::amx
