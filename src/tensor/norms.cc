#include "tensor/norms.h"

#include <cmath>

namespace lockstep {
namespace {

// The independent partial sums let the compiler vectorise the loop (one chain over all n was ~8x slower).
double SumOfSquares(const float* x, int64_t n) {
  constexpr int kPartials = 16;
  double partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= n; i += kPartials) {
    for (int j = 0; j < kPartials; ++j) partial[j] += double(x[i + j]) * double(x[i + j]);
  }
  for (int j = 0; i + j < n; ++j) partial[j] += double(x[i + j]) * double(x[i + j]);
  for (int width = kPartials / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) partial[j] += partial[j + width];
  }
  return partial[0];
}

}  // namespace

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(SumOfSquares(x, n) / double(n)) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

void LayerNorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]);
  const float mean = static_cast<float>(sum / double(n));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] - mean;
  const float scale = 1.0f / std::sqrt(static_cast<float>(SumOfSquares(out, n) / double(n)) + eps);
  if (b == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] * scale * w[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = out[i] * scale * w[i] + b[i];
}

}  // namespace lockstep
