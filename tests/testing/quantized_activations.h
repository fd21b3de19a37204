// Test helper: owns the buffers activation quantization writes (tensor/matmul_simd.h), quantizes rows of
// activations into them (with `kernels`' quantizer: the best level's by default; every level's agree), and
// points a TileArgs at them.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/matmul_internal.h"
#include "tensor/matmul_kernels.h"
#include "tensor/matmul_simd.h"
#include "testing/levels.h"

namespace lockstep::testing {

struct QuantizedActivations {
  // x: [rows][in] floats; quants rows are q_stride bytes apart.
  QuantizedActivations(const float* x, int64_t rows, int64_t in, int64_t q_stride,
                       const MatMulKernels& kernels = BestKernels().matmul)
      : q(size_t(rows * q_stride)),
        d(size_t(rows * (in / kActBlock))),
        sums(d.size()),
        sums16(2 * d.size()),
        q8_starts(d.size()),
        q4_starts(d.size()),
        sum_d(d.size()) {
    view.q = q.data();
    view.q_stride = q_stride;
    view.d = d.data();
    view.sums = sums.data();
    view.sums16 = sums16.data();
    view.q8_starts = q8_starts.data();
    view.q4_starts = q4_starts.data();
    view.sum_d = sum_d.data();
    kernels.quantize(x, in, 0, rows, view);
    view.sum_d_exact = SumDIsExact(d.data(), static_cast<int64_t>(d.size()));
  }
  QuantizedActivations(const QuantizedActivations&) = delete;  // view points into this object's vectors
  QuantizedActivations& operator=(const QuantizedActivations&) = delete;
  void Into(TileArgs* a) const { a->UseQuants(view); }

  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sums, sums16, q8_starts, q4_starts;
  std::vector<float> sum_d;
  ActivationQuants view;  // points into the vectors above
};

}  // namespace lockstep::testing
