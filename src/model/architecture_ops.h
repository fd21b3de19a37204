// Element-wise operations that only some architectures use (model/model_config.h's architecture
// differences), scalar and in a fixed order per element: the same bits whatever the batch, thread or CPU
// level. Pure functions, thread-safe.
#pragma once

#include <cmath>
#include <cstdint>

namespace lockstep {

// Gemma 2's soft-capping: x[i] = cap * tanh(x[i] / cap) (cap > 0).
inline void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

// x[i] *= factor.
inline void Scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

}  // namespace lockstep
