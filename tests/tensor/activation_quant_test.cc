// Activation quantization for the int8 kernels (tensor/matmul_internal.h): power-of-two block scales that use
// at least half of the int8 range, exact round-to-nearest quants, zero blocks for tiny or non-finite input,
// and every SIMD target writing the same quants, scales and sums as the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/kernels.h"
#include "tensor/matmul_internal.h"
#include "testing/levels.h"
#include "testing/quantized_activations.h"

namespace lockstep {
namespace {

struct Quantized {
  std::vector<int8_t> q;
  float d = 0;
  int32_t sum16[2] = {0, 0};
};

Quantized Quantize(const std::vector<float>& x) {
  Quantized out;
  out.q.resize(kActBlock);
  QuantizeActivationBlock(x.data(), out.q.data(), &out.d, out.sum16);
  return out;
}

int MaxAbsQuant(const Quantized& z) {
  int m = 0;
  for (int8_t v : z.q) m = std::max(m, std::abs(static_cast<int>(v)));
  return m;
}

TEST(ActivationQuantization, ScaleIsThePowerOfTwoThatFitsTheLargestValue) {
  struct Case {
    float max_abs, d;
    int max_quant;
  };
  const Case cases[] = {
      {127.0f, 1.0f, 127},        // exactly 127 * 2^0
      {127.00002f, 2.0f, 64},     // just above: the next power
      {64.0f, 1.0f, 64},          // 64 <= 127 * 1, 64 > 127 / 2
      {63.5f, 0.5f, 127},         // exactly 127 * 2^-1
      {1.0f, 0x1p-6f, 64},        // 1 = 64 * 2^-6
      {0.99f, 0x1p-7f, 127},      // 0.99 / 2^-7 = 126.7
      {3.0e30f, 0x1p95f, 76},     // large: 3e30 / 2^95 = 75.7
      {1.0e-25f, 0x1p-90f, 124},  // small: 1e-25 / 2^-90 = 123.8
  };
  for (const Case& c : cases) {
    std::vector<float> x(kActBlock, 0.0f);
    x[5] = -c.max_abs;
    x[6] = c.max_abs / 3;
    const Quantized z = Quantize(x);
    EXPECT_EQ(z.d, c.d) << c.max_abs;
    EXPECT_EQ(MaxAbsQuant(z), c.max_quant) << c.max_abs;
    EXPECT_EQ(z.q[5], -MaxAbsQuant(z));
  }
}

TEST(ActivationQuantization, QuantsAreExactRoundingAndUseHalfTheRangeOrMore) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-30.0f, 30.0f);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> x(kActBlock);
    const float scale = std::exp(log_scale(rng));
    for (float& v : x) v = normal(rng) * scale;
    const Quantized z = Quantize(x);
    int e = 0;
    ASSERT_EQ(std::frexp(z.d, &e), 0.5f) << "scale " << z.d << " is not a power of two";
    const int m = MaxAbsQuant(z);
    ASSERT_GE(m, 64);
    ASSERT_LE(m, 127);
    int32_t sums[2] = {0, 0};
    for (int i = 0; i < kActBlock; ++i) {
      ASSERT_EQ(z.q[i], static_cast<int8_t>(std::nearbyint(x[i] / z.d))) << i;  // x / 2^e is exact
      ASSERT_LE(std::fabs(x[i] - z.q[i] * z.d), z.d / 2);
      sums[i / 16] += z.q[i];
    }
    EXPECT_EQ(z.sum16[0], sums[0]);
    EXPECT_EQ(z.sum16[1], sums[1]);
  }
}

TEST(ActivationQuantization, TinyZeroAndNonFiniteBlocksBecomeZero) {
  const float values[] = {0.0f, kTinyActivation / 2, -1e-35f, std::numeric_limits<float>::infinity()};
  for (float v : values) {
    std::vector<float> x(kActBlock, 0.0f);
    x[0] = v;
    x[31] = v / 2;
    const Quantized z = Quantize(x);
    EXPECT_EQ(z.d, 0.0f) << v;
    EXPECT_EQ(MaxAbsQuant(z), 0) << v;
    EXPECT_EQ(z.sum16[0] + z.sum16[1], 0) << v;
  }
  std::vector<float> x(kActBlock, 0.0f);
  x[3] = kTinyActivation;  // the smallest block that keeps its values
  EXPECT_GT(MaxAbsQuant(Quantize(x)), 0);
}

// Activation quantization at every CPU level the machine runs: the reference's quants and scales, the sums,
// and the Q8_0 dot starts (-128 * sum). Rows of 5 blocks (one at a time on x86), 8 and 16 (eight at a time)
// and 13 (eight at a time, the last eight overlapping the first).
TEST(ActivationQuantization, EveryLevelMatchesTheReference) {
  for (const int64_t in : {160, 256, 416, 512}) {
    constexpr int64_t kRows = 5;
    const int64_t blocks = in / kActBlock, stride = in + 32;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(kRows * in);
    for (int64_t i = 0; i < kRows * in; ++i) {  // scales from 2^-3 up, a block's from the row's block index
      x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i % in / 32 + 4 * (i / in)) - 3);
    }
    std::fill(x.begin() + 64, x.begin() + 96, 0.0f);
    // A non-finite block (row 1, block 2): d = 0 and every quant and sum 0, as in the reference (the AVX2
    // quantizer stored -128 for the infinities and wrapped its sums).
    x[in + 64] = std::numeric_limits<float>::infinity();
    x[in + 90] = -std::numeric_limits<float>::infinity();
    // Row 2: a tiny block (d = 0), the smallest kept one, one whose largest value is exactly 127 * 2^-4 (the
    // smaller of the two candidate scales) and one just over it, and huge ones.
    std::fill(x.begin() + 2 * in, x.begin() + 2 * in + 32, 1e-35f);
    std::fill(x.begin() + 2 * in + 32, x.begin() + 2 * in + 64, 0.0f);
    x[2 * in + 35] = kTinyActivation;
    x[2 * in + 64 + 7] = -127.0f / 16;
    x[2 * in + 96 + 31] = std::nextafter(127.0f / 16, 200.0f);
    x[2 * in + 128 + 1] = std::numeric_limits<float>::max();
    x[2 * in + (blocks - 1) * 32 + 3] = -0x1p120f;
    for (const Kernels& k : testing::RunnableKernels()) {
      const testing::QuantizedActivations quants(x.data(), kRows, in, stride, k.matmul);
      const std::vector<int8_t>& q = quants.q;
      const std::vector<float>& d = quants.d;
      const std::vector<int32_t>&sums = quants.sums, &sums16 = quants.sums16, &starts = quants.q8_starts;
      const std::string name = testing::LevelName(k) + " in " + std::to_string(in);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t i = r * blocks + b;
          const Quantized z =
              Quantize(std::vector<float>(x.begin() + r * in + 32 * b, x.begin() + r * in + 32 * b + 32));
          ASSERT_EQ(std::memcmp(z.q.data(), &q[r * stride + 32 * b], 32), 0) << name << " block " << i;
          ASSERT_EQ(d[i], z.d) << name << " block " << i;
          ASSERT_EQ(sums16[2 * i], z.sum16[0]) << name << " block " << i;
          ASSERT_EQ(sums16[2 * i + 1], z.sum16[1]) << name << " block " << i;
          ASSERT_EQ(sums[i], z.sum16[0] + z.sum16[1]) << name << " block " << i;
          ASSERT_EQ(starts[i], -128 * sums[i]) << name << " block " << i;
          // The AVX2 Q4_0 tile's start: -8 * sum in the high half, i.e. q8_starts << 12.
          ASSERT_EQ(quants.q4_starts[i], static_cast<int32_t>(static_cast<uint32_t>(starts[i]) << 12))
              << name;
          // The AVX2 Q4_K tile's min-term factor.
          ASSERT_EQ(quants.sum_d[i], static_cast<float>(sums[i]) * d[i]) << name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
