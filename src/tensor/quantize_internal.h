// Internals of the quantizers (tensor/quantize.cc, tensor/quantize_iq4.cc); not for other files.
#pragma once

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

// IQ4_NL / IQ4_XS as ggml's quantize_iq4_nl / quantize_iq4_xs without an importance matrix (what
// llama-quantize runs without --imatrix), so a file quantized here has the same bytes as one from
// llama-quantize. n a multiple of 32 (IQ4_NL) / 256 (IQ4_XS); dst RowBytes(type, n) bytes.
void QuantizeIQ4_NL(const float* src, std::byte* dst, int64_t n);
void QuantizeIQ4_XS(const float* src, std::byte* dst, int64_t n);

}  // namespace lockstep
