// Test helper: owns the buffers RunQuantizeActivations writes (tensor/matmul_simd.h), quantizes rows of
// activations into them, and points a TileArgs at them.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"

namespace lockstep::testing {

struct QuantizedActivations {
  // x: [rows][in] floats; quants rows are q_stride bytes apart.
  QuantizedActivations(const float* x, int64_t rows, int64_t in, int64_t q_stride)
      : q_stride(q_stride),
        q(size_t(rows * q_stride)),
        d(size_t(rows * (in / kActBlock))),
        sums(d.size()),
        sums16(2 * d.size()),
        q8_starts(d.size()) {
    ActivationQuants out;
    out.q = q.data();
    out.q_stride = q_stride;
    out.d = d.data();
    out.sums = sums.data();
    out.sums16 = sums16.data();
    out.q8_starts = q8_starts.data();
    RunQuantizeActivations(x, in, 0, rows, out);
  }
  void Into(TileArgs* a) const {
    a->q = q.data();
    a->q_stride = q_stride;
    a->d = d.data();
    a->sums = sums.data();
    a->sums16 = sums16.data();
    a->q8_starts = q8_starts.data();
  }

  int64_t q_stride;
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sums, sums16, q8_starts;
};

}  // namespace lockstep::testing
