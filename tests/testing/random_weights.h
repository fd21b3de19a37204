// Test helper: a weight matrix of `out` rows x `in` elements in a quantized GGUF type, quantized from normal
// random rows (row o scaled by 1 + o % 3). Q8_0 also gets a few -128 quants: valid in a file, never made by
// the quantizer, and the one value whose magnitude does not fit a signed byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/tensor_type.h"
#include "tensor/dequantize.h"

namespace lockstep::testing {

inline std::vector<std::byte> RandomQuantizedWeights(TensorType type, int64_t in, int64_t out,
                                                     std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t row_bytes = RowBytes(type, in);
  std::vector<std::byte> weights(row_bytes * size_t(out));
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t o = 0; o < out; ++o) {
    for (float& v : row) v = normal(rng) * (1.0f + float(o % 3));
    QuantizeRow(type, row.data(), weights.data() + o * row_bytes, in);
  }
  if (type == TensorType::kQ8_0) {
    for (size_t i = 7; i < weights.size(); i += 11) {
      if (i % 34 >= 2) weights[i] = std::byte{0x80};  // not a block's f16 scale (bytes 0-1 of 34)
    }
  }
  return weights;
}

}  // namespace lockstep::testing
