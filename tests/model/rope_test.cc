// RoPE pairing (normal = adjacent pairs, neox = halves) and linear position scaling.
#include "model/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/levels.h"

namespace lockstep {
namespace {

ModelConfig Config(RopeMode mode) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_dim = 8;
  c.rope_freq_base = 10000;
  c.rope_mode = mode;
  return c;
}

std::vector<float> Rotate(const Rope& rope, std::vector<float> x, int32_t position) {
  std::vector<float> cs(2 * rope.pairs());
  rope.Angles(position, cs.data());
  rope.Apply(testing::BestKernels().elementwise, cs.data(), x.data(), 1);
  return x;
}

TEST(Rope, NormalModeRotatesAdjacentPairs) {
  Rope rope(Config(RopeMode::kNormal));
  // Only dim 0 set: pair (0, 1) with theta_0 = 1 rad per position.
  const std::vector<float> y = Rotate(rope, {1, 0, 0, 0, 0, 0, 0, 0}, 1);
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(y[1], std::sin(1.0), 1e-6);
  for (int i = 2; i < 8; ++i) EXPECT_EQ(y[i], 0.0f);
}

TEST(Rope, NeoxModeRotatesHalves) {
  Rope rope(Config(RopeMode::kNeox));
  const std::vector<float> y = Rotate(rope, {1, 0, 0, 0, 0, 0, 0, 0}, 1);
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(y[4], std::sin(1.0), 1e-6);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(Rope, LinearScalingDividesPositions) {
  ModelConfig scaled = Config(RopeMode::kNormal);
  scaled.rope_scaling = RopeScaling::kLinear;
  scaled.rope_scale_factor = 4;
  const std::vector<float> x = {0.3f, -1, 2, 0.5f, 1, 1, -0.25f, 4};
  EXPECT_EQ(Rotate(Rope(scaled), x, 40), Rotate(Rope(Config(RopeMode::kNormal)), x, 10));
}

TEST(Rope, PartialRotaryDimsLeaveTheRest) {
  ModelConfig c = Config(RopeMode::kNeox);
  c.rope_dim = 4;
  const std::vector<float> y = Rotate(Rope(c), {1, 2, 3, 4, 5, 6, 7, 8}, 3);
  EXPECT_EQ(y[4], 5.0f);
  EXPECT_EQ(y[7], 8.0f);
  EXPECT_NE(y[0], 1.0f);
}

}  // namespace
}  // namespace lockstep
