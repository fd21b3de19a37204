// IQ4_NL / IQ4_XS quantizers (tensor/quantize.cc's QuantizeRow calls them): ggml's quantize_iq4_nl /
// quantize_iq4_xs without an importance matrix (what llama-quantize runs without --imatrix), so a file
// quantized here has the same bytes as one from llama-quantize. Internal to tensor/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

// n a multiple of 32 (IQ4_NL) / 256 (IQ4_XS); dst RowBytes(type, n) bytes.
void QuantizeIQ4_NL(const float* src, std::byte* dst, int64_t n);
void QuantizeIQ4_XS(const float* src, std::byte* dst, int64_t n);

}  // namespace lockstep
