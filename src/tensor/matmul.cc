#include "tensor/matmul.h"

#include "base/status.h"
#include "tensor/matmul_grouped.h"
#include "tensor/matmul_internal.h"

namespace lockstep {

bool MatMulSupports(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return true;
    default:
      return IsQuantizedMatMulType(type);
  }
}

void MatMul(const MatMulKernels& kernels, const WeightMatrix& w, const float* x, int64_t rows, float* y,
            ThreadPool& pool) {
  MatMulShared(kernels, std::span<const WeightMatrix>(&w, 1), x, rows, std::span<float* const>(&y, 1), pool);
}

void MatMulShared(const MatMulKernels& kernels, std::span<const WeightMatrix> ws, const float* x,
                  int64_t rows, std::span<float* const> ys, ThreadPool& pool) {
  LOCKSTEP_CHECK(ws.size() == ys.size() && ws.size() <= kMaxSharedMatrices);
  const MatMulGroup group{ws, x, rows, ys};
  MatMulGrouped(kernels, std::span<const MatMulGroup>(&group, 1), pool);
}

}  // namespace lockstep
