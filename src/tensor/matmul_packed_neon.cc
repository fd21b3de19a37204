// Packed-weight int8 GEMM kernels for aarch64 dot-product (SDOT) and int8 matrix-multiply (SMMLA) CPUs; see
// tensor/matmul_packed_neon.h for the contract and tensor/packed_weights.h for the layout.
//
// Why hand-written intrinsics: Highway (Debian 12 ships 1.0.3) has no NEON dot-product or i8mm target and no
// op for SDOT by lane or SMMLA, and no library in Debian computes an int8 GEMM over lockstep's packed layout
// in its canonical float order. So these are GCC's arm_neon.h intrinsics inside functions compiled for
// Armv8.2 "+dotprod" and "+dotprod+i8mm" by target attributes. Not per-file -march flags: the same binary
// runs on CPUs without the instructions, so nothing outside these functions (inline library code included)
// may be compiled for them.
//
// The packed layout suits these instructions as it is: a 16-byte slice of a packed weight vector holds 4
// outputs x 4 consecutive elements, which is what SDOT by lane multiplies with one 4-byte activation group
// (4 multiply-adds per 32-bit lane, 16 per instruction). SMMLA multiplies a 2 x 8 activation matrix (two
// rows' 8 consecutive elements) with a 2 x 8 weight matrix (two outputs' 8 elements) into a 2 x 2 block of
// int32 sums, 32 multiply-adds per instruction: one 32-bit zip of two slices (elements 4k.. and 4k + 4..)
// makes two outputs' 8 elements, and one 64-bit zip of two rows' quants makes the activation operand.
// Weights are made exact signed values first (Q8_0: stored byte ^ 0x80; Q4_0: nibble - 8; Q5_0: 5-bit quant
// - 16; Q6_K: 6-bit value - 32; IQ4_NL / IQ4_XS / MXFP4: TBL of the index nibbles in the type's table
// (TableValues); Q4_K's nibbles and
// Q5_K's and Q5_1's 5-bit quants are their values), so the
// integer block dots need no offset terms; they are exact, and the float epilogue per block is the packed
// order of tensor/matmul_internal.h (Q8_0/Q4_0/Q5_0/Q5_1: acc = fma(float(dot), weight scale * activation
// scale, acc); Q4_K/Q5_K/Q5_1 add fma(float(block sum), min scale * activation scale, acc); Q6_K's integer is
// sc_lo * dot(0-15) + sc_hi * dot(16-31)), lane by lane with FMLA and FMUL: bit-identical to the scalar
// reference.
//
// Tiles: SDOT, 8 outputs (two slices) x 3-4 rows or 16 x 1-2, one float accumulator per (row, slice); SMMLA,
// 8 outputs x 2 row pairs, float accumulators kept in SMMLA's 2 x 2 (row, output) layout for the whole dot
// (the per-output factors are laid out to match) and rearranged to rows once at the end. A row left over
// from the pairs takes the SDOT tile.
#include "tensor/matmul_packed_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstring>

#include "base/status.h"
#include "tensor/matmul_internal.h"
#include "tensor/packed_weights.h"
#include "tensor/quant_blocks.h"

// Armv8.2 as the base: GCC's intrinsics are compiled for it (a function inlining them must have all of its
// features), and every CPU with these extensions implements it.
#define LOCKSTEP_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define LOCKSTEP_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#define LOCKSTEP_ALWAYS_INLINE inline __attribute__((always_inline))

namespace lockstep {
namespace {

// 32-element blocks per packed unit.
template <TensorType kType>
constexpr int kBlocksPerUnit = IsKQuant(kType) ? 8 : 1;
constexpr int64_t MinI64(int64_t a, int64_t b) { return a < b ? a : b; }

// The weights of slice c (outputs 4c..4c+3 of the group) in block j of a unit as exact signed values: w[k]
// holds, for output o of the slice, elements 4k..4k+3 of the block at bytes 4o..4o+3.
template <TensorType kType>
LOCKSTEP_ALWAYS_INLINE void LoadSliceWeights(const std::byte* unit, int j, int c, int8x16_t w[8]) {
  const auto* p = reinterpret_cast<const uint8_t*>(unit) + 16 * c;
  if constexpr (kType == TensorType::kQ8_0) {
    const uint8x16_t flip = vdupq_n_u8(0x80);  // stored byte = value + 128
    for (int k = 0; k < 8; ++k) w[k] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 64 * k), flip));
  } else if constexpr (kType == TensorType::kQ4_0 || kType == TensorType::kQ4_K) {
    // Low nibbles of vector k are elements 4k.., high nibbles 16 + 4k.. (Q4_0: j is 0).
    const uint8x16_t low4 = vdupq_n_u8(0x0f);
    p += 256 * j;
    for (int k = 0; k < 4; ++k) {
      const uint8x16_t v = vld1q_u8(p + 64 * k);
      w[k] = vreinterpretq_s8_u8(vandq_u8(v, low4));
      w[k + 4] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
      if constexpr (kType == TensorType::kQ4_0) {  // stored nibble = value + 8
        w[k] = vsubq_s8(w[k], vdupq_n_s8(8));
        w[k + 4] = vsubq_s8(w[k + 4], vdupq_n_s8(8));
      }
    }
  } else if constexpr (IsTableType(kType)) {  // index nibbles as Q4_0's, looked up (TBL) in the table
    const uint8x16_t low4 = vdupq_n_u8(0x0f);
    const int8x16_t table = vld1q_s8(TableValues(kType));
    p += 256 * j;
    for (int k = 0; k < 4; ++k) {
      const uint8x16_t v = vld1q_u8(p + 64 * k);
      w[k] = vqtbl1q_s8(table, vandq_u8(v, low4));
      w[k + 4] = vqtbl1q_s8(table, vshrq_n_u8(v, 4));
    }
  } else if constexpr (HasFifthBit(kType)) {
    // Q4_K's / Q4_0's nibbles with the fifth bits ORed in: bit k of the fifth-bit vector's byte is element 4k
    // + e's, bit 4 + k element 16 + 4k + e's (packed_weights.h); Q5_0's stored quant is value + 16.
    const uint8x16_t low4 = vdupq_n_u8(0x0f), bit4 = vdupq_n_u8(0x10);
    const int high_at = kType == TensorType::kQ5_K ? kQ5KHigh + 64 * j : kQ5High;
    const uint8x16_t fifth = vld1q_u8(reinterpret_cast<const uint8_t*>(unit) + high_at + 16 * c);
    p += 256 * j;
    for (int k = 0; k < 4; ++k) {
      const uint8x16_t v = vld1q_u8(p + 64 * k);
      const uint8x16_t lo_bit = vandq_u8(vshlq_u8(fifth, vdupq_n_s8(static_cast<int8_t>(4 - k))), bit4);
      const uint8x16_t hi_bit = vandq_u8(vshlq_u8(fifth, vdupq_n_s8(static_cast<int8_t>(-k))), bit4);
      w[k] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, low4), lo_bit));
      w[k + 4] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), hi_bit));
      if constexpr (kType == TensorType::kQ5_0) {
        w[k] = vsubq_s8(w[k], vdupq_n_s8(16));
        w[k + 4] = vsubq_s8(w[k + 4], vdupq_n_s8(16));
      }
    }
  } else {  // Q6_K: value = (low nibble | bits 4-5 << 4) - 32, bits 4-5 of element 16h + 4k at 2k of high[h]
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8_t* high = reinterpret_cast<const uint8_t*>(unit) + kQ6KHigh + 128 * j + 16 * c;
    uint8x16_t high0 = vld1q_u8(high), high1 = vld1q_u8(high + 64);
    p += 256 * j;
    for (int k = 0; k < 4; ++k) {
      const uint8x16_t v = vld1q_u8(p + 64 * k);
      // SLI: (bits << 4) | (first operand & 0x0f).
      const uint8x16_t lo = vsliq_n_u8(v, vandq_u8(high0, three), 4);
      const uint8x16_t hi = vsliq_n_u8(vshrq_n_u8(v, 4), vandq_u8(high1, three), 4);
      w[k] = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(32));
      w[k + 4] = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(32));
      high0 = vshrq_n_u8(high0, 2);
      high1 = vshrq_n_u8(high1, 2);
    }
  }
}

// Per-output factors of a slice in one block, per lane: the weight scale (Q8_0/Q4_0/Q5_0/Q5_1: d; Q4_K/Q5_K:
// d * sc; Q6_K: d), the min scale (Q4_K / Q5_K: -(dmin * m); Q5_1: m), Q6_K's two integer sub-block scales.
struct SliceFactors {
  float32x4_t scale;
  float32x4_t min_scale;
  int32x4_t sc_lo, sc_hi;
};

LOCKSTEP_ALWAYS_INLINE float32x4_t LoadHalves4(const std::byte* p) {
  return vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(p)));
}
LOCKSTEP_ALWAYS_INLINE float32x4_t LoadU8x4(const std::byte* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const uint16x8_t wide = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(bits)));
  return vcvtq_f32_u32(vmovl_u16(vget_low_u16(wide)));
}
LOCKSTEP_ALWAYS_INLINE int32x4_t LoadS8x4(const std::byte* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const int16x8_t wide = vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(bits)));
  return vmovl_s16(vget_low_s16(wide));
}

template <TensorType kType>
LOCKSTEP_ALWAYS_INLINE SliceFactors LoadFactors(const std::byte* unit, int j, int c) {
  SliceFactors f;
  if constexpr (kType == TensorType::kMXFP4) {  // f32 scales
    f.scale = vld1q_f32(reinterpret_cast<const float*>(unit + PackedScaleOffset(kType)) + 4 * c);
  } else if constexpr (!IsKQuant(kType)) {  // Q8_0, Q4_0, Q5_0, Q5_1 (and its min scale m), IQ4_NL
    f.scale = LoadHalves4(unit + PackedScaleOffset(kType) + 8 * c);
    if constexpr (HasMinTerm(kType)) f.min_scale = LoadHalves4(unit + kQ5M + 8 * c);
  } else if constexpr (kType == TensorType::kIQ4_XS) {  // d * (ls - 32)
    f.scale = vmulq_f32(LoadHalves4(unit + kIQ4XSD + 8 * c),
                        vcvtq_f32_s32(LoadS8x4(unit + kIQ4XSScales + kPackedGroup * j + 4 * c)));
  } else if constexpr (HasMinTerm(kType)) {
    f.scale =
        vmulq_f32(LoadHalves4(unit + kQ4KD + 8 * c), LoadU8x4(unit + kQ4KScales + kPackedGroup * j + 4 * c));
    f.min_scale = vnegq_f32(vmulq_f32(LoadHalves4(unit + kQ4KDmin + 8 * c),
                                      LoadU8x4(unit + kQ4KMins + kPackedGroup * j + 4 * c)));
  } else {
    f.scale = LoadHalves4(unit + kQ6KD + 8 * c);
    f.sc_lo = LoadS8x4(unit + kQ6KScales + 32 * j + 4 * c);
    f.sc_hi = LoadS8x4(unit + kQ6KScales + 32 * j + kPackedGroup + 4 * c);
  }
  return f;
}

// f with each field's lanes [v0 v1 v0 v1] (half 0) or [v2 v3 v2 v3] (half 1): the factors of SMMLA's 2 x 2
// (row, output) layout for outputs 2 * half, 2 * half + 1.
LOCKSTEP_ALWAYS_INLINE float32x4_t DupPair(float32x4_t v, int half) {
  const float64x2_t d = vreinterpretq_f64_f32(v);
  return vreinterpretq_f32_f64(half == 0 ? vdupq_laneq_f64(d, 0) : vdupq_laneq_f64(d, 1));
}
LOCKSTEP_ALWAYS_INLINE int32x4_t DupPair(int32x4_t v, int half) {
  const int64x2_t d = vreinterpretq_s64_s32(v);
  return vreinterpretq_s32_s64(half == 0 ? vdupq_laneq_s64(d, 0) : vdupq_laneq_s64(d, 1));
}
template <TensorType kType>
LOCKSTEP_ALWAYS_INLINE SliceFactors PairFactors(const SliceFactors& f, int half) {
  SliceFactors p;
  p.scale = DupPair(f.scale, half);
  if constexpr (HasMinTerm(kType)) p.min_scale = DupPair(f.min_scale, half);
  if constexpr (kType == TensorType::kQ6_K) {
    p.sc_lo = DupPair(f.sc_lo, half);
    p.sc_hi = DupPair(f.sc_hi, half);
  }
  return p;
}

// One block's float step, lane by lane: lo, hi = the exact dots of elements 0-15 and 16-31; dx = the
// activation scale and sums = the block's activation quant sum (as float) of each lane's row.
template <TensorType kType>
LOCKSTEP_ALWAYS_INLINE float32x4_t BlockStep(float32x4_t acc, int32x4_t lo, int32x4_t hi,
                                             const SliceFactors& f, float32x4_t dx, float32x4_t sums) {
  if constexpr (kType == TensorType::kQ6_K) {
    const int32x4_t total = vmlaq_s32(vmulq_s32(lo, f.sc_lo), hi, f.sc_hi);
    return vfmaq_f32(acc, vcvtq_f32_s32(total), vmulq_f32(f.scale, dx));
  } else {
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vaddq_s32(lo, hi)), vmulq_f32(f.scale, dx));
    if constexpr (HasMinTerm(kType)) acc = vfmaq_f32(acc, sums, vmulq_f32(f.min_scale, dx));
    return acc;
  }
}

// Outputs of slices [c0, c0 + kSlices) of `group` for rows [r0, r0 + kRows), SDOT: acc[r][c] = row r0 + r's
// 4 outputs of slice c0 + c.
template <TensorType kType, int kRows, int kSlices>
LOCKSTEP_DOTPROD void DotprodTile(const TileArgs& a, int64_t group, int c0, int64_t r0,
                                  float32x4_t (*acc)[4]) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = a.in / kActBlock;
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kSlices; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  }
  for (int64_t s = 0; s < p.units; ++s) {
    const std::byte* unit = p.Unit(group, s);
    for (int j = 0; j < kBlocksPerUnit<kType>; ++j) {
      const int64_t b = s * kBlocksPerUnit<kType> + j;
      int8x16_t x[kRows][2];
      for (int r = 0; r < kRows; ++r) {
        const int8_t* q = a.q + (r0 + r) * a.q_stride + kActBlock * b;
        x[r][0] = vld1q_s8(q);
        x[r][1] = vld1q_s8(q + 16);
      }
      for (int c = 0; c < kSlices; ++c) {
        int8x16_t w[8];
        LoadSliceWeights<kType>(unit, j, c0 + c, w);
        const SliceFactors f = LoadFactors<kType>(unit, j, c0 + c);
        for (int r = 0; r < kRows; ++r) {
          int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);  // elements 0-15, 16-31
          lo = vdotq_laneq_s32(lo, w[0], x[r][0], 0);
          hi = vdotq_laneq_s32(hi, w[4], x[r][1], 0);
          lo = vdotq_laneq_s32(lo, w[1], x[r][0], 1);
          hi = vdotq_laneq_s32(hi, w[5], x[r][1], 1);
          lo = vdotq_laneq_s32(lo, w[2], x[r][0], 2);
          hi = vdotq_laneq_s32(hi, w[6], x[r][1], 2);
          lo = vdotq_laneq_s32(lo, w[3], x[r][0], 3);
          hi = vdotq_laneq_s32(hi, w[7], x[r][1], 3);
          const int64_t i = (r0 + r) * blocks + b;
          float32x4_t sums = vdupq_n_f32(0.0f);
          if constexpr (HasMinTerm(kType)) sums = vdupq_n_f32(static_cast<float>(a.sums[i]));
          acc[r][c] = BlockStep<kType>(acc[r][c], lo, hi, f, vdupq_n_f32(a.d[i]), sums);
        }
      }
    }
  }
}

// Rows [r0, r0 + rows) of outputs [o, o + n) (n <= 16) from per-row accumulators of the slices they cover.
inline void StoreRows(const TileArgs& a, int64_t r0, int rows, int64_t o, int n,
                      const float32x4_t (*acc)[4]) {
  for (int r = 0; r < rows; ++r) {
    float lanes[16];
    for (int c = 0; 4 * c < n; ++c) vst1q_f32(lanes + 4 * c, acc[r][c]);
    std::memcpy(a.y + (r0 + r) * a.out + o, lanes, sizeof(float) * static_cast<size_t>(n));
  }
}

// Rows [r0, r0 + rows) (rows <= 4) of `group`'s outputs from slice c0 on (n of them: at most 8 for c0 = 2;
// one or two rows take all 16 at once, more rows 8 at a time, within 32 registers), SDOT.
template <TensorType kType, int kSlices>
LOCKSTEP_DOTPROD void DotprodRows(const TileArgs& a, int64_t group, int c0, int64_t r0, int rows, int n) {
  float32x4_t acc[4][4];
  switch (rows) {
    case 4:
      DotprodTile<kType, 4, kSlices>(a, group, c0, r0, acc);
      break;
    case 3:
      DotprodTile<kType, 3, kSlices>(a, group, c0, r0, acc);
      break;
    case 2:
      DotprodTile<kType, 2, kSlices>(a, group, c0, r0, acc);
      break;
    default:
      DotprodTile<kType, 1, kSlices>(a, group, c0, r0, acc);
      break;
  }
  StoreRows(a, r0, rows, group * kPackedGroup + 4 * c0, n, acc);
}

template <TensorType kType>
LOCKSTEP_DOTPROD void DotprodGroups(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  const int64_t end = MinI64(o_end, a.out);
  for (int64_t g = o_begin / kPackedGroup; g * kPackedGroup < end; ++g) {
    const int valid = static_cast<int>(MinI64(kPackedGroup, end - g * kPackedGroup));
    for (int64_t r0 = 0; r0 < a.rows; r0 += 4) {
      const int rows = static_cast<int>(MinI64(4, a.rows - r0));
      if (rows <= 2) {  // decode: the whole group in one pass over its weights
        DotprodRows<kType, 4>(a, g, 0, r0, rows, valid);
        continue;
      }
      for (int h = 0; h < 2 && 8 * h < valid; ++h) {
        DotprodRows<kType, 2>(a, g, 2 * h, r0, rows, static_cast<int>(MinI64(8, valid - 8 * h)));
      }
    }
  }
}

// Outputs of slices c0, c0 + 1 of `group` for the kPairs row pairs from r0, SMMLA: acc[p][c][h] holds, for
// rows r0 + 2p, r0 + 2p + 1 and outputs 4(c0 + c) + 2h, +1, [row 0 out 0, row 0 out 1, row 1 out 0, row 1
// out 1].
template <TensorType kType, int kPairs>
LOCKSTEP_I8MM void I8mmTile(const TileArgs& a, int64_t group, int c0, int64_t r0, float32x4_t (*acc)[2][2]) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = a.in / kActBlock;
  for (int i = 0; i < kPairs; ++i) {
    for (int c = 0; c < 2; ++c) acc[i][c][0] = acc[i][c][1] = vdupq_n_f32(0.0f);
  }
  for (int64_t s = 0; s < p.units; ++s) {
    const std::byte* unit = p.Unit(group, s);
    for (int j = 0; j < kBlocksPerUnit<kType>; ++j) {
      const int64_t b = s * kBlocksPerUnit<kType> + j;
      int8x16_t x[kPairs][4];  // x[i][m]: elements 8m..8m+7 of row r0 + 2i, then of row r0 + 2i + 1
      float32x4_t dx[kPairs], sums[kPairs];  // per lane: [row 0, row 0, row 1, row 1]
      for (int i = 0; i < kPairs; ++i) {
        const int64_t row = r0 + 2 * i;
        const int8_t* q0 = a.q + row * a.q_stride + kActBlock * b;
        const int8_t* q1 = q0 + a.q_stride;
        const int64x2_t a0 = vreinterpretq_s64_s8(vld1q_s8(q0)), a1 = vreinterpretq_s64_s8(vld1q_s8(q0 + 16));
        const int64x2_t b0 = vreinterpretq_s64_s8(vld1q_s8(q1)), b1 = vreinterpretq_s64_s8(vld1q_s8(q1 + 16));
        x[i][0] = vreinterpretq_s8_s64(vzip1q_s64(a0, b0));
        x[i][1] = vreinterpretq_s8_s64(vzip2q_s64(a0, b0));
        x[i][2] = vreinterpretq_s8_s64(vzip1q_s64(a1, b1));
        x[i][3] = vreinterpretq_s8_s64(vzip2q_s64(a1, b1));
        const int64_t i0 = row * blocks + b, i1 = i0 + blocks;
        dx[i] = vcombine_f32(vdup_n_f32(a.d[i0]), vdup_n_f32(a.d[i1]));
        if constexpr (HasMinTerm(kType)) {
          sums[i] = vcombine_f32(vdup_n_f32(static_cast<float>(a.sums[i0])),
                                 vdup_n_f32(static_cast<float>(a.sums[i1])));
        } else {
          sums[i] = vdupq_n_f32(0.0f);
        }
      }
      for (int c = 0; c < 2; ++c) {
        int8x16_t w[8];
        LoadSliceWeights<kType>(unit, j, c0 + c, w);
        const SliceFactors f = LoadFactors<kType>(unit, j, c0 + c);
        int8x16_t pair[2][4];  // pair[h][m]: outputs 2h, 2h + 1 of the slice, elements 8m..8m+7 of each
        for (int m = 0; m < 4; ++m) {
          const int32x4_t e = vreinterpretq_s32_s8(w[2 * m]), o = vreinterpretq_s32_s8(w[2 * m + 1]);
          pair[0][m] = vreinterpretq_s8_s32(vzip1q_s32(e, o));
          pair[1][m] = vreinterpretq_s8_s32(vzip2q_s32(e, o));
        }
        for (int h = 0; h < 2; ++h) {
          const SliceFactors fh = PairFactors<kType>(f, h);
          for (int i = 0; i < kPairs; ++i) {
            int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);  // elements 0-15, 16-31
            lo = vmmlaq_s32(lo, x[i][0], pair[h][0]);
            hi = vmmlaq_s32(hi, x[i][2], pair[h][2]);
            lo = vmmlaq_s32(lo, x[i][1], pair[h][1]);
            hi = vmmlaq_s32(hi, x[i][3], pair[h][3]);
            acc[i][c][h] = BlockStep<kType>(acc[i][c][h], lo, hi, fh, dx[i], sums[i]);
          }
        }
      }
    }
  }
}

template <TensorType kType>
LOCKSTEP_I8MM void I8mmGroups(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  if (a.rows < 2) return DotprodGroups<kType>(a, o_begin, o_end);  // decode: no pairs
  constexpr int kPairs = 2;
  const int64_t end = MinI64(o_end, a.out);
  for (int64_t g = o_begin / kPackedGroup; g * kPackedGroup < end; ++g) {
    const int valid = static_cast<int>(MinI64(kPackedGroup, end - g * kPackedGroup));
    for (int h = 0; h < 2 && 8 * h < valid; ++h) {
      const int n = static_cast<int>(MinI64(8, valid - 8 * h));
      int64_t r0 = 0;
      while (a.rows - r0 >= 2) {
        const int pairs = a.rows - r0 >= 2 * kPairs ? kPairs : 1;
        float32x4_t pair_acc[kPairs][2][2];
        if (pairs == kPairs) {
          I8mmTile<kType, kPairs>(a, g, 2 * h, r0, pair_acc);
        } else {
          I8mmTile<kType, 1>(a, g, 2 * h, r0, pair_acc);
        }
        float32x4_t acc[2 * kPairs][4];  // back to rows: row 2i = low halves of the pair layouts, 2i + 1 high
        for (int i = 0; i < pairs; ++i) {
          for (int c = 0; c < 2; ++c) {
            const float64x2_t o01 = vreinterpretq_f64_f32(pair_acc[i][c][0]);
            const float64x2_t o23 = vreinterpretq_f64_f32(pair_acc[i][c][1]);
            acc[2 * i][c] = vreinterpretq_f32_f64(vzip1q_f64(o01, o23));
            acc[2 * i + 1][c] = vreinterpretq_f32_f64(vzip2q_f64(o01, o23));
          }
        }
        StoreRows(a, r0, 2 * pairs, g * kPackedGroup + 8 * h, n, acc);
        r0 += 2 * pairs;
      }
      if (r0 < a.rows) DotprodRows<kType, 2>(a, g, 2 * h, r0, 1, n);
    }
  }
}

}  // namespace

void NeonDotprodPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.type) {
    case TensorType::kQ8_0:
      return DotprodGroups<TensorType::kQ8_0>(a, o_begin, o_end);
    case TensorType::kQ4_0:
      return DotprodGroups<TensorType::kQ4_0>(a, o_begin, o_end);
    case TensorType::kQ4_K:
      return DotprodGroups<TensorType::kQ4_K>(a, o_begin, o_end);
    case TensorType::kQ5_K:
      return DotprodGroups<TensorType::kQ5_K>(a, o_begin, o_end);
    case TensorType::kQ5_0:
      return DotprodGroups<TensorType::kQ5_0>(a, o_begin, o_end);
    case TensorType::kQ5_1:
      return DotprodGroups<TensorType::kQ5_1>(a, o_begin, o_end);
    case TensorType::kQ6_K:
    case TensorType::kQ3_K:  // packed as Q6_K
      return DotprodGroups<TensorType::kQ6_K>(a, o_begin, o_end);
    case TensorType::kIQ4_NL:
      return DotprodGroups<TensorType::kIQ4_NL>(a, o_begin, o_end);
    case TensorType::kIQ4_XS:
      return DotprodGroups<TensorType::kIQ4_XS>(a, o_begin, o_end);
    case TensorType::kMXFP4:
      return DotprodGroups<TensorType::kMXFP4>(a, o_begin, o_end);
    default:
      LOCKSTEP_CHECK(false);  // only packable types have packed weights
  }
}

void NeonI8mmPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  switch (a.type) {
    case TensorType::kQ8_0:
      return I8mmGroups<TensorType::kQ8_0>(a, o_begin, o_end);
    case TensorType::kQ4_0:
      return I8mmGroups<TensorType::kQ4_0>(a, o_begin, o_end);
    case TensorType::kQ4_K:
      return I8mmGroups<TensorType::kQ4_K>(a, o_begin, o_end);
    case TensorType::kQ5_K:
      return I8mmGroups<TensorType::kQ5_K>(a, o_begin, o_end);
    case TensorType::kQ5_0:
      return I8mmGroups<TensorType::kQ5_0>(a, o_begin, o_end);
    case TensorType::kQ5_1:
      return I8mmGroups<TensorType::kQ5_1>(a, o_begin, o_end);
    case TensorType::kQ6_K:
    case TensorType::kQ3_K:  // packed as Q6_K
      return I8mmGroups<TensorType::kQ6_K>(a, o_begin, o_end);
    case TensorType::kIQ4_NL:
      return I8mmGroups<TensorType::kIQ4_NL>(a, o_begin, o_end);
    case TensorType::kIQ4_XS:
      return I8mmGroups<TensorType::kIQ4_XS>(a, o_begin, o_end);
    case TensorType::kMXFP4:
      return I8mmGroups<TensorType::kMXFP4>(a, o_begin, o_end);
    default:
      LOCKSTEP_CHECK(false);
  }
}

}  // namespace lockstep
#endif  // __aarch64__
