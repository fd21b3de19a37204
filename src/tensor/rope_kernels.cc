#include "tensor/rope_kernels.h"

#include <cmath>

namespace lockstep {

void ApplyRope(const float* cos_sin, int64_t pairs, bool halves, int64_t head_dim, float* x, int64_t heads) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < pairs; ++i) {
      const float c = cos_sin[2 * i];
      const float s = cos_sin[2 * i + 1];
      const int64_t a = halves ? i : 2 * i;
      const int64_t b = halves ? i + pairs : 2 * i + 1;
      const float x0 = v[a];
      const float x1 = v[b];
      // Explicit fused multiply-adds: written as x0 * c - x1 * s, the compiler contracted it differently on
      // x86 (unfused, VADDSUBPS) and aarch64 (FNMSUB), so the same request gave different bits.
      v[a] = std::fma(x0, c, -(x1 * s));
      v[b] = std::fma(x0, s, x1 * c);
    }
  }
}

}  // namespace lockstep
