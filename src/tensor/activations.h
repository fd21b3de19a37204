// The gated activations of a feed-forward block, one version per kernel level (the table in
// tensor/kernels.h picks one): gate[i] <- act(gate[i]) * up[i] for i < n.
//   SwiGLU: silu(g) = g / (1 + e^-g)                                  (Llama, Qwen2, Mistral, ...)
//   GeGLU:  gelu(g) = g / (1 + e^z), z = -2 sqrt(2/pi) (g + 0.044715 g^3), i.e. GELU's tanh form
//           0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))         (Gemma, ...)
//   squared ReLU (Nemotron's ungated FFN): x <- x > 0 ? x * x : 0, exact: one scalar version for every level.
//   SwiGLU-OAI (gpt-oss, ggml's swiglu_oai): x = min(g, limit), y = clamp(up, -limit, limit),
//           gate <- x / (1 + e^(-alpha x)) * (y + 1); one scalar version for every level (the clamp and the
//           + 1 make it cheap beside the expert products), with the same polynomial exp.
// GeGLU's versions all use the same exp (tensor/vec_math.h's polynomial) and the same operations per element
// (g2 = g * g; b = fma(g2 * 0.044715, g, g); z = b * -1.5957691; e = exp(z); g / (1 + e) * up), so they are
// bit-identical everywhere. SwiGLU's versions (silu(g) = g / (1 + exp(-g)), then * up) share that
// polynomial too, so every level on every CPU (x86 and ARM) gives the same bits: std::exp is not used, its
// last bits differ between libm builds and architectures. Pure functions, thread-safe.
#pragma once

#include <cstdint>

namespace lockstep {

// The polynomial exp of tensor/vec_math.h (Exp8) on one float, operation for operation: the same bits.
float ExpPolynomial(float x);

void SwiGluScalar(float* gate, const float* up, int64_t n);
void GeGluScalar(float* gate, const float* up, int64_t n);
// gpt-oss's constants (ggml's, not in the GGUF): alpha 1.702, limit 7.
inline constexpr float kSwiGluOaiAlpha = 1.702f;
inline constexpr float kSwiGluOaiLimit = 7.0f;
void SwiGluOaiScalar(float* gate, const float* up, int64_t n, float alpha, float limit);
void ReluSquaredScalar(float* x, int64_t n);
#if defined(__x86_64__)
void SwiGluAvx2(float* gate, const float* up, int64_t n);
void SwiGluAvx512(float* gate, const float* up, int64_t n);
void GeGluAvx2(float* gate, const float* up, int64_t n);
void GeGluAvx512(float* gate, const float* up, int64_t n);
#endif

}  // namespace lockstep
