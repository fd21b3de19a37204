// Conversions between GGUF storage types and f32, one row at a time (a row is a whole number of blocks).
// Dequantize: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4.
// Quantize: the same types (Q4_K, Q5_K, Q6_K by a simple direct fit, tensor/quantize.cc). Standard ggml
// block layouts, so files interoperate with other GGUF tools. Pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "gguf/tensor_type.h"

namespace lockstep {

bool CanDequantize(TensorType type);
bool CanQuantize(TensorType type);

// dst[0..n) = src row of n elements. Requires CanDequantize(type) and n % block_elements == 0.
void DequantizeRow(TensorType type, const std::byte* src, float* dst, int64_t n);
// dst (RowBytes(type, n) bytes) = quantized src[0..n). Requires CanQuantize(type), n % block_elements == 0.
void QuantizeRow(TensorType type, const float* src, std::byte* dst, int64_t n);

}  // namespace lockstep
