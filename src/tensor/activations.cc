#include "tensor/activations.h"

#include <cmath>

#include "tensor/vec_math.h"

namespace lockstep {
namespace {

constexpr float kGeluCubic = 0.044715f;
constexpr float kGeluMinusTwoSqrtTwoOverPi = -1.5957691216057308f;

inline float GeluOne(float g) {
  const float b = std::fma(g * g * kGeluCubic, g, g);
  return g / (1.0f + ExpPolynomial(b * kGeluMinusTwoSqrtTwoOverPi));
}

}  // namespace

float ExpPolynomial(float x) {
  x = std::fmin(std::fmax(x, -87.0f), 88.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(-n, 0.693359375f, x);
  r = std::fma(-n, -2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const float two_n = std::ldexp(1.0f, static_cast<int>(n));  // n in [-126, 127]: exact
  return y * two_n;
}

void SwiGluScalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + ExpPolynomial(-gate[i])) * up[i];
}

void SwiGluOaiScalar(float* gate, const float* up, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::fmin(gate[i], limit);
    const float y = std::fmax(std::fmin(up[i], limit), -limit);
    gate[i] = x / (1.0f + ExpPolynomial(-(alpha * x))) * (y + 1.0f);
  }
}

void ReluSquaredScalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] * x[i] : 0.0f;
}

void GeGluScalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = GeluOne(gate[i]) * up[i];
}

#if defined(__x86_64__)
void SwiGluAvx2(float* gate, const float* up, int64_t n) {
  const int64_t i = SwiGlu8(gate, up, 0, n);
  SwiGluScalar(gate + i, up + i, n - i);
}

void SwiGluAvx512(float* gate, const float* up, int64_t n) {
  int64_t i = SwiGlu16(gate, up, n);
  i = SwiGlu8(gate, up, i, n);
  SwiGluScalar(gate + i, up + i, n - i);
}

namespace {

inline __m256 Gelu8(__m256 g) {
  const __m256 b = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(g, g), _mm256_set1_ps(kGeluCubic)), g, g);
  const __m256 e = Exp8(_mm256_mul_ps(b, _mm256_set1_ps(kGeluMinusTwoSqrtTwoOverPi)));
  return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) int64_t GeGlu16(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 b = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_mul_ps(g, g), _mm512_set1_ps(kGeluCubic)), g, g);
    const __m512 e = Exp16(_mm512_mul_ps(b, _mm512_set1_ps(kGeluMinusTwoSqrtTwoOverPi)));
    const __m512 gelu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(gelu, _mm512_loadu_ps(up + i)));
  }
  return i;
}
#pragma GCC diagnostic pop

int64_t GeGlu8(float* gate, const float* up, int64_t i, int64_t n) {
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(Gelu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  }
  return i;
}

}  // namespace

void GeGluAvx2(float* gate, const float* up, int64_t n) {
  const int64_t i = GeGlu8(gate, up, 0, n);
  GeGluScalar(gate + i, up + i, n - i);
}

void GeGluAvx512(float* gate, const float* up, int64_t n) {
  int64_t i = GeGlu16(gate, up, n);
  i = GeGlu8(gate, up, i, n);
  GeGluScalar(gate + i, up + i, n - i);
}
#endif

}  // namespace lockstep
