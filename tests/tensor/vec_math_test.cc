// Vector math: Exp8 is accurate over its range, Exp16 gives Exp8's bits lane by lane, and SwiGlu (16 lanes
// where the CPU has AVX-512) gives the 8-lane body's bits.
#include "tensor/vec_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/activations.h"

namespace lockstep {
namespace {

#ifdef LOCKSTEP_VEC_MATH_AVX2
std::vector<float> Inputs() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> x(4096);
  for (float& v : x) v = dist(rng);
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 88.0f, -87.0f, 88.5f, -90.0f, 1e-8f}) x.push_back(v);
  while (x.size() % 16 != 0) x.push_back(0.5f);
  return x;
}

std::vector<float> Exp8All(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 8)
    _mm256_storeu_ps(y.data() + i, Exp8(_mm256_loadu_ps(x.data() + i)));
  return y;
}

TEST(VecMath, Exp8IsAccurate) {
  const std::vector<float> x = Inputs();
  const std::vector<float> y = Exp8All(x);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(std::clamp(double(x[i]), -87.0, 88.0));
    EXPECT_NEAR(y[i], want, 2e-7 * want) << x[i];
  }
}

__attribute__((target("avx512f"))) std::vector<float> Exp16All(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 16)
    _mm512_storeu_ps(y.data() + i, Exp16(_mm512_loadu_ps(x.data() + i)));
  return y;
}

TEST(VecMath, Exp16AndSwiGluOn16LanesGiveThe8LaneBits) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  const std::vector<float> x = Inputs();
  const std::vector<float> y8 = Exp8All(x), y16 = Exp16All(x);
  EXPECT_EQ(std::memcmp(y8.data(), y16.data(), x.size() * sizeof(float)), 0);

  std::vector<float> gate(x.size()), up(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    gate[i] = x[i] / 10;
    up[i] = 1.0f - x[i] / 50;
  }
  for (int64_t n : {int64_t(3), int64_t(8), int64_t(29), int64_t(gate.size())}) {
    std::vector<float> g16 = gate, g8 = gate;
    SwiGluAvx512(g16.data(), up.data(), n);  // the 16-lane body
    // The 8-lane body alone, then the scalar tail.
    int64_t i = SwiGlu8(g8.data(), up.data(), 0, n);
    for (; i < n; ++i) g8[i] = g8[i] / (1.0f + ExpPolynomial(-g8[i])) * up[i];
    EXPECT_EQ(std::memcmp(g8.data(), g16.data(), size_t(n) * sizeof(float)), 0) << n;
  }
}
#endif

}  // namespace
}  // namespace lockstep
