// Internals of MatMul shared by the SIMD kernels, the scalar reference and the tests (not for other layers).
//
// The canonical computation (every SIMD target reproduces it bit for bit, so results never depend on the
// machine's vector width, the row count, the tile position or the thread count):
// - Float weights (F32/F16/BF16): per (output, row), 8 f32 lane accumulators; element i goes to lane i % 8 by
//   fused multiply-add, in order of i; a partial last group is padded with zeros. Then LaneSum (below).
// - Quantized weights (Q8_0/Q4_0/Q5_0/Q5_1/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_NL/IQ4_XS/MXFP4): each activation
//   row is quantized in 32-element blocks (QuantizeActivationBlock); each weight block of 32 elements is
//   viewed as int8 w[32] with 8 lane scales (WeightBlockView). Lane l of block b gets the exact integer sum
//   of w*q over elements 4l..4l+3, converted to float and fused-multiply-added with (lane scale * activation
//   scale) into lane accumulator l. Q4_K, Q5_K, Q5_1 (HasMinTerm) and Q2_K add their min term per lane the
//   same way (exact lane sum of q times the lane's min scale * activation scale).
// - Packed weights (PackWeights: every quantized type above): one f32 accumulator per (output, row); for each
//   block b, acc = fma(float(exact integer dot of the block), weight scale * activation scale, acc); Q4_K,
//   Q5_K and Q5_1 then add fma(float(sum of the block's activation quants), min scale * activation scale,
//   acc); Q6_K's integer is sc0 * dot(elements 0-15) + sc1 * dot(16-31) and its weight scale d, and so is
//   Q3_K's (sc = scale - 32, w = its quant in [-4, 3]; packed in Q6_K's layout as w + 32). IQ4_NL /
//   IQ4_XS: w = kIQ4Values[index], weight scale d (IQ4_XS: d * (ls - 32), exact in float). MXFP4: w =
//   kMXFP4Values[index], weight scale E8M0Half(e) (a power of two, exact in f32; packed as f32).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "tensor/matmul.h"
#include "tensor/quant_blocks.h"

namespace lockstep {

inline constexpr int kActBlock = 32;  // activation quantization block
inline constexpr int kLanes = 8;      // lane accumulators per (output, row)

// Activation blocks have power-of-two scales (like OCP MXINT8's shared exponent): d = 2^e with the smallest
// e such that max|x| <= 127 * 2^e, and q[i] = round-to-nearest-even(x[i] * 2^-e), an exact scaling. A block
// uses between 64 and 127 of the 127 levels (about half a bit less than a scale of max|x| / 127), and in
// exchange every product "weight scale * activation scale" is an exact exponent shift, which AVX-512 does
// with VSCALEFPS off the multiply ports the int8 dots need (tensor/matmul_packed_x86-inl.h). Blocks whose
// max|x| is below kTinyActivation, or not finite, quantize to zero with d = 0.
inline constexpr float kTinyActivation = 0x1p-100f;

// 2^e as a float, for e in [-126, 127].
inline float Pow2(int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); }

// The exponent e above for max|x| in [kTinyActivation, FLT_MAX].
inline int ActivationExponent(float max_abs) {
  const int floor_log2 = static_cast<int>(std::bit_cast<uint32_t>(max_abs) >> 23) - 127;  // max_abs is normal
  // max_abs is in [2^E, 2^(E + 1)) for E = floor_log2; 127 * 2^(E - 7) < 2^E and 127 * 2^(E - 5) > 2^(E + 1),
  // so e is E - 6 or E - 5.
  const int e = floor_log2 - 6;
  return max_abs > 127.0f * Pow2(e) ? e + 1 : e;
}

// A block's scale d = 2^e for its max|x| (0 for a tiny or non-finite block), and *inverse = 2^-e (or 0).
inline float ActivationScale(float max_abs, float* inverse) {
  if (!(max_abs >= kTinyActivation && max_abs <= std::numeric_limits<float>::max())) {
    *inverse = 0.0f;
    return 0.0f;
  }
  const int e = ActivationExponent(max_abs);
  *inverse = Pow2(-e);
  return Pow2(e);
}

// Quantizes 32 floats as above; sum16[0], sum16[1] = sums of q[0..15], q[16..31].
void QuantizeActivationBlock(const float* x, int8_t* q, float* d, int32_t sum16[2]);

// A weight block in canonical form: 32 int8 values, 8 lane scales, and (HasMinTerm) the lane min scale.
struct WeightBlockView {
  int8_t w[32];
  float scale[8];
  float min_scale[8];  // multiply the lane sums of the activation quants; 0 except HasLaneMinTerm types
};
// Whether `type` has a min term (value = d * sc * q - dmin * m, Q5_1: d * q + m): Q4_K, Q5_K and Q5_1, whose
// canonical forms differ only in the quants' range (0-15, 0-31) and where scale and min scale come from.
constexpr bool HasMinTerm(TensorType type) {
  return type == TensorType::kQ4_K || type == TensorType::kQ5_K || type == TensorType::kQ5_1;
}
// HasMinTerm's types and Q2_K (value = d * sc * q - dmin * m per 16 elements: lanes 0-3 and 4-7 have their
// own min scales), which is not packed (the packed order's min term is one per 32-element block).
constexpr bool HasLaneMinTerm(TensorType type) { return HasMinTerm(type) || type == TensorType::kQ2_K; }
// Whether `type` stores a fifth quant bit apart from the nibbles (Q5_0, Q5_1, Q5_K).
constexpr bool HasFifthBit(TensorType type) {
  return type == TensorType::kQ5_0 || type == TensorType::kQ5_1 || type == TensorType::kQ5_K;
}
// The 256-element super-block types (8 weight blocks per packed unit); the others' units are one block.
constexpr bool IsKQuant(TensorType type) {
  return type == TensorType::kQ2_K || type == TensorType::kQ3_K || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K || type == TensorType::kIQ4_XS;
}
// The table types, whose 4-bit indices select an int8 value of a 16-entry table (TableValues): IQ4_NL and
// IQ4_XS kIQ4Values, MXFP4 kMXFP4Values (tensor/quant_blocks.h). Every level runs them with one lookup code
// path, the table its parameter.
constexpr bool IsTableType(TensorType type) {
  return type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS || type == TensorType::kMXFP4;
}
constexpr const int8_t* TableValues(TensorType type) {
  return type == TensorType::kMXFP4 ? kMXFP4Values : kIQ4Values;
}
// A table's values + 128 as bytes (the unsigned operands of VPDPBUSD and the portable kernel's lookups).
struct Table16 {
  int8_t v[16];
};
constexpr Table16 TablePlus128(TensorType type) {
  Table16 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<int8_t>(static_cast<uint8_t>(TableValues(type)[i] + 128));
  return t;
}
// Block b (32 elements) of a weight row in a quantized type.
void GetWeightBlock(TensorType type, const std::byte* row, int64_t b, WeightBlockView* view);

// Fixed reduction of the 8 lane accumulators: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
inline float LaneSum(const float acc[8]) {
  const float t0 = acc[0] + acc[4], t1 = acc[1] + acc[5], t2 = acc[2] + acc[6], t3 = acc[3] + acc[7];
  return (t0 + t2) + (t1 + t3);
}

bool IsQuantizedMatMulType(TensorType type);

// One output of the canonical computation, scalar: a float weight row against a float activation row, and a
// quantized weight row against a quantized activation row (q: in quants, d: in / 32 scales).
float FloatDotReference(TensorType type, const std::byte* row, const float* x, int64_t in);
float QuantDotReference(TensorType type, const std::byte* row, const int8_t* q, const float* d,
                        int64_t blocks);
// One output of the packed-weight order, computed from the original (unpacked) row.
float PackedDotReference(TensorType type, const std::byte* row, const int8_t* q, const float* d,
                         int64_t blocks);

// The scalar level's kernels (tensor/matmul_kernels.h): the reference above, one output at a time. The
// packed tile reads the original rows (TileArgs::weights), not the packed copy.
struct TileArgs;
struct ActivationQuants;
void ScalarQuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                               const ActivationQuants& out);
void ScalarFloatTile(const TileArgs& a, int64_t o_begin, int64_t o_end);
void ScalarQuantTile(const TileArgs& a, int64_t o_begin, int64_t o_end);
void ScalarPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end);

// The scalar reference of the canonical computation (single-threaded, allocates; for tests and fallback);
// follows the packed order when w.packed is set.
void MatMulReference(const WeightMatrix& w, const float* x, int64_t rows, float* y);

}  // namespace lockstep
