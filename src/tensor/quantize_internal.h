// Internals of the quantizers (tensor/quantize.cc, tensor/quantize_iq4.cc, tensor/quantize_k_low.cc) and
// tensor/dequantize.cc; not for other files.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace lockstep {

// v, rounded to float before any later addition: GCC contracts a * b + c into one FMA (its C++ default
// -ffp-contract=fast, and this library is built with -mfma), rounding once where ggml's reference rounds
// twice; a quant then differs at an exact tie (22 of 2.4M Q5_0 blocks of a SmolLM2-135M-shape file).
inline float Unfused(float v) {
#if defined(__x86_64__)
  asm("" : "+x"(v));
#elif defined(__aarch64__)
  asm("" : "+w"(v));
#endif
  return v;
}

inline constexpr float kTinyBlock = 1e-15f;  // ggml's GROUP_MAX_EPS: a smaller max |x| quantizes to zero

// ggml's nearest_int: v rounded to an integer (ties to even) by adding 1.5 * 2^23 and reading the low
// mantissa bits; for |v| <= 2^22, and defined for any input (NaN gives 0, as ggml's).
inline int NearestInt(float v) {
  const float shifted = Unfused(v) + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffff) - 0x00400000;
}

// Q3_K as ggml's quantize_row_q3_K_ref (what llama-quantize runs without --imatrix): the same bytes.
// n a multiple of 256; dst RowBytes(kQ3_K, n) bytes.
void QuantizeQ3_K(const float* src, std::byte* dst, int64_t n);
// Q2_K as ggml's quantize_row_q2_K_ref, the same way.
void QuantizeQ2_K(const float* src, std::byte* dst, int64_t n);

// IQ4_NL / IQ4_XS as ggml's quantize_iq4_nl / quantize_iq4_xs without an importance matrix (what
// llama-quantize runs without --imatrix), so a file quantized here has the same bytes as one from
// llama-quantize. n a multiple of 32 (IQ4_NL) / 256 (IQ4_XS); dst RowBytes(type, n) bytes.
void QuantizeIQ4_NL(const float* src, std::byte* dst, int64_t n);
void QuantizeIQ4_XS(const float* src, std::byte* dst, int64_t n);

// MXFP4 as ggml's quantize_row_mxfp4_ref (tensor/quantize_mxfp4.cc): the same bytes. n a multiple of 32; dst
// RowBytes(kMXFP4, n) bytes.
void QuantizeMXFP4(const float* src, std::byte* dst, int64_t n);

}  // namespace lockstep
