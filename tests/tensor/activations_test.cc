// Gated activations and the polynomial exp: ExpPolynomial reproduces Exp8 bit for bit and is accurate; GeGLU
// gives the same bits at every level this machine runs (odd lengths, so every vector body and tail is
// used) and matches GELU's tanh form in double; SwiGLU gives the same bits at every level too; gpt-oss's
// clamped SwiGLU matches its formula in double (both clamps reached) at every level.
#include "tensor/activations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/vec_math.h"
#include "testing/levels.h"

namespace lockstep {
namespace {

std::vector<float> Inputs(float range) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> x(4099);
  for (float& v : x) v = dist(rng);
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 88.0f, -87.0f, 88.5f, -90.0f, 1e-8f, 1e30f, -1e30f})
    x.push_back(v);
  return x;
}

TEST(ExpPolynomial, IsAccurateOverItsRange) {
  for (float x : Inputs(100.0f)) {
    const double want = std::exp(std::fmin(std::fmax(double(x), -87.0), 88.0));
    EXPECT_NEAR(ExpPolynomial(x), want, 2e-7 * want) << x;
  }
}

#ifdef LOCKSTEP_VEC_MATH_AVX2
TEST(ExpPolynomial, GivesExp8sBitsLaneByLane) {
  std::vector<float> x = Inputs(100.0f);
  x.resize(x.size() / 8 * 8);
  for (size_t i = 0; i < x.size(); i += 8) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, Exp8(_mm256_loadu_ps(x.data() + i)));
    for (int l = 0; l < 8; ++l) {
      const float one = ExpPolynomial(x[i + l]);
      EXPECT_EQ(std::memcmp(&one, &lanes[l], sizeof(float)), 0) << x[i + l];
    }
  }
}
#endif

TEST(GeGlu, EveryLevelGivesTheSameBitsAndMatchesGeluInDouble) {
  const std::vector<float> gate = Inputs(8.0f);
  std::vector<float> up(gate.size());
  for (size_t i = 0; i < up.size(); ++i) up[i] = 1.0f - float(i % 7) / 4;
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(23), int64_t(gate.size())}) {
    std::vector<float> first;
    for (const Kernels& k : testing::RunnableKernels()) {
      std::vector<float> g(gate.begin(), gate.begin() + n);
      k.elementwise.geglu(g.data(), up.data(), n);
      if (first.empty()) {
        first = g;
        for (int64_t i = 0; i < n; ++i) {
          const double x = gate[i];
          const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
          EXPECT_NEAR(g[i], gelu * up[i], 1e-6 * (1 + std::abs(gelu))) << gate[i];
        }
      } else {
        EXPECT_EQ(std::memcmp(g.data(), first.data(), sizeof(float) * size_t(n)), 0)
            << testing::LevelName(k) << " n " << n;
      }
    }
  }
}

TEST(SwiGlu, EveryLevelMatchesSiluAndAllLevelsAgreeBitForBit) {
  const std::vector<float> gate = Inputs(20.0f);
  std::vector<float> up(gate.size(), 0.75f);
  const int64_t n = int64_t(gate.size());
  std::vector<float> first;
  for (const Kernels& k : testing::RunnableKernels()) {
    std::vector<float> g = gate;
    k.elementwise.swiglu(g.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = gate[i], want = x / (1 + std::exp(-x)) * 0.75;
      EXPECT_NEAR(g[i], want, 1e-6 * (1 + std::abs(want))) << gate[i];
    }
    if (first.empty()) {
      first = g;
    } else {
      EXPECT_EQ(std::memcmp(g.data(), first.data(), sizeof(float) * g.size()), 0) << testing::LevelName(k);
    }
  }
}

TEST(ReluSquared, EveryLevelSquaresThePositivesAndZeroesTheRest) {
  std::vector<float> in = Inputs(12.0f);
  in.push_back(-0.0f);
  in.push_back(0.0f);
  for (const Kernels& k : testing::RunnableKernels()) {
    std::vector<float> x = in;
    k.elementwise.relu_squared(x.data(), int64_t(x.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = in[i] > 0 ? in[i] * in[i] : 0.0f;
      EXPECT_EQ(std::memcmp(&x[i], &want, sizeof(float)), 0) << in[i] << " -> " << x[i];
    }
  }
}

TEST(SwiGluOai, EveryLevelMatchesTheClampedFormula) {
  // Gates and ups in [-12, 12]: past the limit 7 on both sides, so both clamps of the up and the gate's upper
  // clamp (its lower side is not clamped) are reached.
  const std::vector<float> gate = Inputs(12.0f);
  std::vector<float> up = Inputs(12.0f);
  std::reverse(up.begin(), up.end());
  const int64_t n = int64_t(gate.size());
  const double alpha = kSwiGluOaiAlpha, limit = kSwiGluOaiLimit;
  int clamped_gates = 0, clamped_ups = 0;
  for (const Kernels& k : testing::RunnableKernels()) {
    std::vector<float> g = gate;
    k.elementwise.swiglu_oai(g.data(), up.data(), n, kSwiGluOaiAlpha, kSwiGluOaiLimit);
    for (int64_t i = 0; i < n; ++i) {
      const double x = std::min(double(gate[i]), limit);
      const double y = std::clamp(double(up[i]), -limit, limit);
      clamped_gates += gate[i] > limit ? 1 : 0;
      clamped_ups += std::abs(up[i]) > limit ? 1 : 0;
      const double want = x / (1 + std::exp(-alpha * x)) * (y + 1);
      EXPECT_NEAR(g[i], want, 1e-6 * (1 + std::abs(want))) << gate[i] << " " << up[i];
    }
  }
  EXPECT_GT(clamped_gates, 100);
  EXPECT_GT(clamped_ups, 100);
}

}  // namespace
}  // namespace lockstep
