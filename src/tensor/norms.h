// Normalisation kernels of the forward pass (the table in tensor/kernels.h points at them). One version for
// every level: the sum of squares runs in double in a fixed order, so a row always gives the same bits.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>

namespace lockstep {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], i < n. The sum of squares is taken in double: element i goes
// to partial sum i % 16 in index order, the 16 partial sums are then added pairwise (j + 8 into j, then
// j + 4, ...).
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);
// LayerNorm (BERT): out[i] = (x[i] - mean(x)) / sqrt(var(x) + eps) * w[i] + b[i], i < n. The mean's sum in
// double in index order; the variance as the sum of squares above of the centred values. b may be null (no
// bias: command-r's, cohere2's). out may be x.
void LayerNorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out);

}  // namespace lockstep
