// Element-wise operations that only some architectures use (model/model_config.h's architecture
// differences), scalar and in a fixed order per element: the same bits whatever the batch, thread or CPU
// level. Pure functions, thread-safe.
#pragma once

#include <cmath>
#include <cstdint>

namespace lockstep {

// Gemma's GeGLU: gate[i] = gelu(gate[i]) * up[i] with GELU's tanh approximation,
// gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (Hugging Face's gelu_pytorch_tanh, ggml_gelu;
// llama.cpp's CPU path reads it from an f16 table: its values differ by up to ~1e-3 relative).
inline void GeluTanhGlu(float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kCoefficient = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    gate[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefficient * x * x))) * up[i];
  }
}

// Gemma 2's soft-capping: x[i] = cap * tanh(x[i] / cap) (cap > 0).
inline void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

// x[i] *= factor.
inline void Scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

}  // namespace lockstep
