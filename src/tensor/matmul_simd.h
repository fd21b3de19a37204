// The arguments of MatMul's kernels (tensor/matmul_kernels.h holds one level's kernels; tensor/matmul_simd.cc
// compiles them once per Highway target). Each kernel call computes a contiguous range of outputs for all
// rows, in the canonical order of tensor/matmul_internal.h, so every level gives bit-identical results. Used
// by tensor/ only (and tests).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace lockstep {

struct PackedWeights;

// The AVX2 packed Q4_0 tile's start for a block whose activation quants sum to `sum`: -8 * sum in the high
// 16 bits of a 32-bit lane (tensor/matmul_packed_avx2-inl.h). |sum| <= 32 * 127, so |value| < 2^31.
constexpr int32_t Q4StartOf(int32_t sum) { return -8 * 65536 * sum; }

// Whether every activation scale in d[0, n) is at most 2^105, so that the packed Q4_K / Q5_K / Q5_1 tiles may
// take the min term as fma(sum_d, min scale, acc) with sum_d = float(sum) * d instead of the canonical
// fma(float(sum), min scale * d, acc): then both products are exact (|sum| <= 4064 < 2^12, |min scale| =
// dmin * m < 2^22 or Q5_1's f16 m, d =
// 2^e with e >= -107 or d = 0: no overflow, and multiples of 2^-131 need no subnormal rounding; the sign of a
// zero product is the same xor of signs), so both FMAs add the same exact product to acc and round once: the
// same bits, at every vector width. Larger scales (|x| > ~2^112) take the canonical epilogue.
inline bool SumDIsExact(const float* d, int64_t n) {
  int32_t over = 0;  // d >= 0, never NaN: compare the bits as integers (vectorizes)
  for (int64_t i = 0; i < n; ++i) over |= std::bit_cast<int32_t>(d[i]) > std::bit_cast<int32_t>(0x1p105f);
  return over == 0;
}

// Where RunQuantizeActivations writes; the layout of the TileArgs fields of the same names. sum_d_exact is
// not written by the quantizer: whoever quantizes sets it afterwards (SumDIsExact over all rows' scales).
struct ActivationQuants {
  int8_t* q = nullptr;
  int64_t q_stride = 0;
  float* d = nullptr;
  int32_t* sums = nullptr;
  int32_t* sums16 = nullptr;
  int32_t* q8_starts = nullptr;
  int32_t* q4_starts = nullptr;
  float* sum_d = nullptr;
  bool sum_d_exact = false;
};

struct TileArgs {
  TensorType type = TensorType::kF32;
  int64_t in = 0;
  int64_t out = 0;
  const std::byte* weights = nullptr;
  size_t row_bytes = 0;
  int64_t rows = 0;
  const float* x = nullptr;            // float weights: [rows][in]
  const int8_t* q = nullptr;           // quantized weights: activation quants, row r at q + r * q_stride
  const float* d = nullptr;            // activation block scales, row r at d + r * (in / 32)
  const int32_t* sums = nullptr;       // sums of the activation quants per block, like d
  const int32_t* sums16 = nullptr;     // sums per 16 quants: row r at sums16 + r * (in / 16)
  const int32_t* q8_starts = nullptr;  // -128 * sums: where a packed Q8_0 block dot starts, like d
  // (-8 * sums) << 16 (= q8_starts << 12): where the AVX2 packed Q4_0 tile's 16-bit block sums start, like d
  const int32_t* q4_starts = nullptr;
  // float(sums) * d (exact for d <= 2^105): the x86 packed Q4_K tiles' min-term factor, like d
  const float* sum_d = nullptr;
  bool sum_d_exact = false;  // SumDIsExact(d) over all rows: the Q4_K tiles may use sum_d
  const PackedWeights* packed = nullptr;
  int64_t q_stride = 0;
  float* y = nullptr;  // [rows][out]

  // Points the activation fields (q, q_stride, d, sums, sums16, q8_starts, q4_starts, sum_d) at `quants`
  // and copies sum_d_exact.
  void UseQuants(const ActivationQuants& quants) {
    q = quants.q;
    q_stride = quants.q_stride;
    d = quants.d;
    sums = quants.sums;
    sums16 = quants.sums16;
    q8_starts = quants.q8_starts;
    q4_starts = quants.q4_starts;
    sum_d = quants.sum_d;
    sum_d_exact = quants.sum_d_exact;
  }
};

// The portable packed kernel (what ARM CPUs without dot products run), on the best Highway target this
// CPU has (Highway's own dispatch; a test hook, hwy::SetSupportedTargetsForTest picks other targets).
void RunPortablePackedTile(const TileArgs& args, int64_t o_begin, int64_t o_end);

}  // namespace lockstep
