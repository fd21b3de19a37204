// MXFP4 (ggml type 39, gpt-oss's expert weights): the block layout and E8M0 scale of hand-built blocks, and
// the quantizer and dequantizer against mainline ggml's quantize_row_mxfp4_ref / dequantize_row_mxfp4 (FNV-1a
// hashes recorded with a throwaway program linking libggml-base of ggml-org/ggml d99724f2).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/quant_blocks.h"
#include "testing/golden_hash.h"

namespace lockstep::mxfp4_test {
namespace {

std::vector<float> Dequantize(const std::vector<BlockMXFP4>& blocks) {
  std::vector<float> out(32 * blocks.size());
  DequantizeRow(TensorType::kMXFP4, reinterpret_cast<const std::byte*>(blocks.data()), out.data(),
                static_cast<int64_t>(out.size()));
  return out;
}

std::vector<BlockMXFP4> Quantize(const std::vector<float>& x) {
  std::vector<BlockMXFP4> blocks(x.size() / 32);
  QuantizeRow(TensorType::kMXFP4, x.data(), reinterpret_cast<std::byte*>(blocks.data()),
              static_cast<int64_t>(x.size()));
  return blocks;
}

// Every exponent byte with the index pairs (j, 15 - j): value = 2^(e - 128) * table value, low nibbles first.
std::vector<BlockMXFP4> EveryExponent() {
  std::vector<BlockMXFP4> blocks(256);
  for (int e = 0; e < 256; ++e) {
    blocks[e].e = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) blocks[e].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  }
  return blocks;
}

TEST(MXFP4, HandBuiltBlocks) {
  const std::vector<float> y = Dequantize(EveryExponent());
  const double e2m1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int e = 0; e < 256; ++e) {
    // The E8M0 scale 2^(e - 127) (the table holds the E2M1 values doubled), in double, then rounded to float
    // (e = 255: 2 * 2^127 and more overflow to inf, as in ggml).
    const double scale = std::ldexp(1.0, e - 127);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[32 * e + j], static_cast<float>(e2m1[j] * scale)) << e << " " << j;
      EXPECT_EQ(y[32 * e + 16 + j], static_cast<float>(e2m1[15 - j] * scale)) << e << " " << j;
    }
  }
  EXPECT_EQ(y[32 * 255 + 7], std::numeric_limits<float>::infinity());
  EXPECT_EQ(E8M0Half(0), 0x1p-128f);  // subnormal, exact
  EXPECT_EQ(E8M0Half(1), 0x1p-127f);
  EXPECT_EQ(E8M0Half(2), 0x1p-126f);
  EXPECT_EQ(E8M0Half(128), 1.0f);
  EXPECT_EQ(E8M0Half(255), 0x1p127f);   // not NaN, as ggml's
  EXPECT_EQ(y[32 * 128 + 16], -12.0f);  // e = 128: scale 2 * -6, index 15 in the high nibble of qs[0]
}

TEST(MXFP4, DequantizationMatchesGgml) {
  const std::vector<float> y = Dequantize(EveryExponent());
  EXPECT_EQ(testing::Fnv1a(y.data(), y.size() * sizeof(float)), 0xe4ab516a9fd92783ull);
}

// A block whose max|x| is 6 * 2^k gets e = floor(log2(6 * 2^k)) - 2 + 127 = k + 127, the E8M0 scale 2^k: a
// block of E2M1 values times 2^k is exact.
TEST(MXFP4, QuantizerFitsScaledTableValuesExactly) {
  std::vector<float> x(32 * 8);
  for (int b = 0; b < 8; ++b) {
    for (int i = 0; i < 32; ++i) x[32 * b + i] = std::ldexp(kMXFP4Values[(i + b) % 16] * 0.5f, 3 * b - 10);
    x[32 * b + 31] = std::ldexp(6.0f, 3 * b - 10);  // the block's max is a 6 (table 12)
  }
  const std::vector<BlockMXFP4> q = Quantize(x);
  EXPECT_EQ(Dequantize(q), x);
  EXPECT_EQ(q[0].e, 117);         // k = -10
  EXPECT_EQ(q[7].e, 117 + 21);    // k = 11
  EXPECT_EQ(q[0].qs[0] & 15, 0);  // element 0: value 0, the first of indices 0 and 8
  EXPECT_EQ(q[0].qs[8] & 15, 0);  // element 8: the table's other 0 (index 8), quantized to index 0
}

// Relative RMS error on normal data: that of a 4-bit float with a power-of-two block scale.
TEST(MXFP4, QuantizerErrorOnNormalData) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(8192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (1.0f + static_cast<float>(i / 256 % 4));
  const std::vector<float> y = Dequantize(Quantize(x));
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (y[i] - x[i]) * (y[i] - x[i]);
    norm += x[i] * x[i];
  }
  EXPECT_LT(std::sqrt(err / norm), 0.2);
  EXPECT_GT(std::sqrt(err / norm), 0.05);
}

// An integer-hash input with outliers, a zero block, blocks whose max|x| is below 2^-125 (ggml's exponent
// conversion then wraps: x86 builds keep the low byte), subnormal, huge and infinite blocks, a NaN, and
// blocks of exact values and midpoints between table values (the first nearest index wins).
float GoldenInput(uint32_t i) {
  float v = testing::HashedUnit(i) * static_cast<float>(1 + (i / 32) % 7);
  if (i % 97 == 0) v *= 8.0f;
  const uint32_t b = i / 32;
  if (b == 5) v = 0.0f;
  if (b == 7) v *= 0x1p-130f;
  if (b == 8) v *= 0x1p-149f * 0x1p30f;
  if (b == 9) v *= 0x1p120f;
  if (b == 10) v *= 0x1p-124f;
  if (b == 11 && i % 32 == 3) v = std::numeric_limits<float>::infinity();
  if (b == 12 && i % 32 == 4) v = std::numeric_limits<float>::quiet_NaN();
  if (b == 13 && i % 32 == 5) v = -std::numeric_limits<float>::infinity();
  if (b >= 14 && b < 46)
    v = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.25f * static_cast<float>(1 << (b % 5));
  return v;
}

TEST(MXFP4, QuantizerMatchesGgmlBytes) {
  std::vector<float> x(65536);
  for (uint32_t i = 0; i < x.size(); ++i) x[i] = GoldenInput(i);
  const std::vector<BlockMXFP4> q = Quantize(x);
  EXPECT_EQ(testing::Fnv1a(q.data(), q.size() * sizeof(BlockMXFP4)), 0xecda381c92e36e56ull);
  EXPECT_EQ(q[5].e, 0);    // zero block
  EXPECT_EQ(q[7].e, 250);  // floor(log2(max)) - 2 + 127 < 0: the low byte
  EXPECT_EQ(q[9].e, 248);
  EXPECT_EQ(q[11].e, 0);  // an infinite max
}

}  // namespace
}  // namespace lockstep::mxfp4_test
