// The gated delta rule (tensor/delta_rule.h): every level this machine runs gives the scalar reference's
// bits, for the state, the outputs and a run of tokens, at head sizes that use every vector body and tail
// (whole 64- and 32-row blocks, single vectors, left-over rows); the reference agrees with the rule's
// definition computed in double.
#include "tensor/delta_rule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "testing/levels.h"

namespace lockstep {
namespace {

struct DeltaToken {
  std::vector<float> q, k, v;
  float beta = 0, decay = 0;
};

std::vector<DeltaToken> DeltaTokens(int64_t v_dim, int64_t k_dim, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f), unit(0.05f, 0.999f);
  std::vector<DeltaToken> tokens(static_cast<size_t>(n));
  for (DeltaToken& t : tokens) {
    for (int64_t j = 0; j < k_dim; ++j) t.q.push_back(x(rng) / 8), t.k.push_back(x(rng) / 8);
    for (int64_t i = 0; i < v_dim; ++i) t.v.push_back(x(rng));
    t.beta = unit(rng);
    t.decay = unit(rng);
  }
  return tokens;
}

// Runs `tokens` through `rule` from the state `initial`; returns the final state then every output.
using DeltaRuleFn = void (*)(float*, int64_t, int64_t, const float*, const float*, const float*, float, float,
                             float*);
std::vector<float> RunDeltaRule(DeltaRuleFn rule, const std::vector<float>& initial, int64_t v_dim,
                                int64_t k_dim, const std::vector<DeltaToken>& tokens) {
  std::vector<float> state = initial;
  std::vector<float> outputs;
  for (const DeltaToken& t : tokens) {
    std::vector<float> o(size_t(v_dim), -7.0f);
    rule(state.data(), v_dim, k_dim, t.q.data(), t.k.data(), t.v.data(), t.beta, t.decay, o.data());
    outputs.insert(outputs.end(), o.begin(), o.end());
  }
  state.insert(state.end(), outputs.begin(), outputs.end());
  return state;
}

TEST(DeltaRule, EveryLevelGivesTheScalarBits) {
  // v_dim: 128 (Qwen3.5), 64 (tiny-qwen35), and sizes whose rows end in every tail.
  for (int64_t v_dim : {1, 3, 4, 8, 13, 16, 24, 32, 40, 64, 100, 128}) {
    const int64_t k_dim = v_dim == 128 ? 128 : 64 - v_dim % 5;
    const std::vector<DeltaToken> tokens = DeltaTokens(v_dim, k_dim, 5, uint32_t(v_dim));
    std::vector<float> initial(size_t(v_dim * k_dim));
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> x(-0.5f, 0.5f);
    for (float& s : initial) s = x(rng);
    const std::vector<float> want = RunDeltaRule(&DeltaRuleScalar, initial, v_dim, k_dim, tokens);
    for (const Kernels& k : testing::RunnableKernels()) {
      const std::vector<float> got = RunDeltaRule(k.recurrent.delta_rule, initial, v_dim, k_dim, tokens);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0)
          << testing::LevelName(k) << " v_dim " << v_dim << " k_dim " << k_dim;
    }
  }
}

TEST(DeltaRule, ReferenceMatchesTheRuleInDouble) {
  constexpr int64_t kV = 24, kK = 40;
  const std::vector<DeltaToken> tokens = DeltaTokens(kV, kK, 6, 3);
  std::vector<float> state(size_t(kV * kK), 0.0f);
  std::vector<double> s(size_t(kV * kK), 0.0);  // S[i][j] at i * kK + j
  for (const DeltaToken& t : tokens) {
    std::vector<float> o(static_cast<size_t>(kV));
    DeltaRuleScalar(state.data(), kV, kK, t.q.data(), t.k.data(), t.v.data(), t.beta, t.decay, o.data());
    for (int64_t i = 0; i < kV; ++i) {
      double predicted = 0;
      for (int64_t j = 0; j < kK; ++j) predicted += t.decay * s[size_t(i * kK + j)] * t.k[size_t(j)];
      const double delta = t.beta * (t.v[size_t(i)] - predicted);
      double out = 0;
      for (int64_t j = 0; j < kK; ++j) {
        double& x = s[size_t(i * kK + j)];
        x = t.decay * x + delta * t.k[size_t(j)];
        out += x * t.q[size_t(j)];
      }
      EXPECT_NEAR(o[size_t(i)], out, 1e-6) << i;
    }
  }
  for (int64_t i = 0; i < kV; ++i) {
    for (int64_t j = 0; j < kK; ++j) EXPECT_NEAR(state[size_t(j * kV + i)], s[size_t(i * kK + j)], 1e-6);
  }
}

}  // namespace
}  // namespace lockstep
