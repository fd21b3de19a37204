// Weight × activation products, the hot loop of every forward pass.
// A weight matrix is `out` rows of `in` elements in a GGUF storage type (row-major, each row RowBytes(type, in)
// bytes). MatMul applies it to `rows` activation rows at once, so each weight tile is read once per call and
// serves every row. Quantized weights meet activations quantized once per call to 8-bit blocks; float weights
// meet float activations. Batch invariance: the value computed for one row never depends on how many other
// rows share the call (the reduction order is fixed by `in` alone). SIMD paths are chosen once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace lockstep {

class ThreadPool;

struct WeightMatrix {
  TensorType type = TensorType::kF32;
  int64_t in = 0;   // elements per row (GGUF dims[0])
  int64_t out = 0;  // rows (GGUF dims[1])
  const std::byte* data = nullptr;
};

// True if MatMul supports weights of this type.
bool MatMulSupports(TensorType type);

// y[r * out + o] = sum_i w[o][i] * x[r * in + i] for r in [0, rows), o in [0, out).
// x: [rows][in] f32, y: [rows][out] f32.
void MatMul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool);

}  // namespace lockstep
