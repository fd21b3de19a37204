// RoPE pairing (normal = adjacent pairs, neox = halves), linear position scaling and YaRN against its
// formula (ggml's rope_yarn).
#include "model/rope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

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

std::vector<float> Random64() {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i) * 1.7 + 0.3));
  return x;
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

// gpt-oss-20b's YaRN: head_dim 64, base 150000, factor 32 from 4096. The correction dims are
// floor(64 ln(4096 / (32 * 2 pi)) / (2 ln 150000)) = floor(8.09) and ceil(64 ln(4096 / (2 pi)) / ...) =
// ceil(17.40); pair i's theta is theta_e (1 - m) / 32 + theta_e m with m = 1 - clamp((i - 8) / 10, 0, 1), and
// cos / sin are scaled by 1 + 0.1 ln 32.
TEST(Rope, YarnMatchesItsFormula) {
  EXPECT_EQ(YarnCorrectionDims(64, 4096, 150000, 32, 1), (std::array<float, 2>{8, 18}));
  EXPECT_EQ(YarnCorrectionDims(16, 4096, 150000, 32, 1), (std::array<float, 2>{2, 5}));  // tiny-gpt-oss
  EXPECT_EQ(YarnCorrectionDims(64, 4096, 10000, 32, 1), (std::array<float, 2>{10, 23}));
  ModelConfig c = Config(RopeMode::kNeox);
  c.head_dim = c.rope_dim = 64;
  c.rope_freq_base = 150000;
  c.rope_scaling = RopeScaling::kYarn;
  c.rope_scale_factor = 32;
  c.rope_orig_ctx = 4096;
  const Rope rope(c);
  const double mscale = 1 + 0.1 * std::log(32.0);
  for (int32_t position : {1, 7, 1000, 100000}) {
    std::vector<float> cs(2 * rope.pairs());
    rope.Angles(position, cs.data());
    for (int i = 0; i < 32; ++i) {
      const double extrapolated = position * std::pow(150000.0, -2.0 * i / 64);
      const double m = 1 - std::clamp((i - 8) / 10.0, 0.0, 1.0);
      const double theta = extrapolated / 32 * (1 - m) + extrapolated * m;
      EXPECT_NEAR(cs[2 * i], std::cos(theta) * mscale, 2e-6 * (1 + std::abs(theta))) << position << " " << i;
      EXPECT_NEAR(cs[2 * i + 1], std::sin(theta) * mscale, 2e-6 * (1 + std::abs(theta)))
          << position << " " << i;
    }
  }
  // Without extrapolation (ext_factor 0) YaRN is linear scaling without the magnitude correction.
  c.yarn_ext_factor = 0;
  ModelConfig linear = c;
  linear.rope_scaling = RopeScaling::kLinear;
  const std::vector<float> x = Random64();
  const std::vector<float> yarn = Rotate(Rope(c), x, 300), scaled = Rotate(Rope(linear), x, 300);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(yarn[i], scaled[i], 1e-6) << i;
}

// transformers' attention_factor: get_mscale(16) / get_mscale(16, mscale_all_dim); Ministral 3's 1 cancels
// it.
TEST(Rope, YarnLogMultiplierDividesTheMagnitude) {
  ModelConfig c = Config(RopeMode::kNormal);
  c.rope_scaling = RopeScaling::kYarn;
  c.rope_scale_factor = 16;
  c.rope_orig_ctx = 32;
  for (float log_mul : {0.0f, 1.0f, 0.707f}) {
    c.yarn_log_mul = log_mul;
    const Rope rope(c);
    std::vector<float> cs(2 * rope.pairs());
    rope.Angles(5, cs.data());
    const double expected = (1 + 0.1 * std::log(16.0)) / (1 + 0.1 * log_mul * std::log(16.0));
    for (int64_t i = 0; i < rope.pairs(); ++i) {
      EXPECT_NEAR(std::hypot(cs[2 * i], cs[2 * i + 1]), expected, 1e-6) << log_mul << " " << i;
    }
  }
}

// Llama 4's query temperature as transformers' Ministral 3 takes it: floor(position / length), so the first
// step is at position `length` itself (ik_llama.cpp's position + 1 would take it one earlier).
TEST(Rope, QueryTemperatureStepsAtMultiplesOfItsLength) {
  ModelConfig c;
  EXPECT_EQ(QueryTemperature(c, 100000), 1.0f);  // no temperature
  c.attn_temperature_scale = 0.1f;
  c.attn_temperature_length = 32;
  EXPECT_EQ(QueryTemperature(c, 0), 1.0f);
  EXPECT_EQ(QueryTemperature(c, 31), 1.0f);
  EXPECT_FLOAT_EQ(QueryTemperature(c, 32), float(1 + 0.1 * std::log(2.0)));
  EXPECT_FLOAT_EQ(QueryTemperature(c, 63), float(1 + 0.1 * std::log(2.0)));
  EXPECT_FLOAT_EQ(QueryTemperature(c, 64), float(1 + 0.1 * std::log(3.0)));
  c.attn_temperature_length = 16384;  // Ministral 3's: about 1.069 from 16384, 1.22 from 131072
  EXPECT_NEAR(QueryTemperature(c, 16384), 1.0693, 1e-4);
  EXPECT_NEAR(QueryTemperature(c, 131072), 1.2197, 1e-4);
}

}  // namespace
}  // namespace lockstep
