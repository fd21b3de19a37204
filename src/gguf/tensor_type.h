// Tensor element types as numbered in the GGUF format (ggml_type), with their block geometry. The file format
// layer knows every standard type's size so that it can validate any GGUF file; which types the kernels can
// compute with is the tensor layer's business (tensor/type_support.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace lockstep {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct TensorTypeTraits {
  std::string_view name;   // lower-case ggml name: "f32", "q8_0", "q4_K"
  int64_t block_elements;  // elements per block (1 for plain types)
  int64_t block_bytes;     // bytes per block
};

// Traits for a raw type number read from a file; nullopt for a number that is not a known ggml type.
std::optional<TensorTypeTraits> FindTensorTypeTraits(uint32_t raw_type);
// Traits for a known type (asserts it is known).
TensorTypeTraits GetTensorTypeTraits(TensorType type);
std::string_view TensorTypeName(TensorType type);
// Parses "f32", "F16", "q8_0", "Q4_K" ... (case-insensitive).
Result<TensorType> ParseTensorType(std::string_view name);
// Bytes of a row of `elements` elements; requires elements % block_elements == 0.
size_t RowBytes(TensorType type, int64_t elements);

}  // namespace lockstep
