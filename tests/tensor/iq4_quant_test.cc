// IQ4_NL / IQ4_XS: dequantization of hand-built blocks (the ggml layouts: nibble order, the 6-bit scales'
// split into scales_l / scales_h) and the quantizer (ggml's scale search: exact fits, zero blocks, error).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/float16.h"
#include "tensor/quant_blocks.h"

namespace lockstep {
namespace {

std::vector<float> DequantizeIQ4(TensorType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n);
  DequantizeRow(type, reinterpret_cast<const std::byte*>(bytes.data()), out.data(), n);
  return out;
}

std::vector<uint8_t> QuantizeIQ4(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(RowBytes(type, static_cast<int64_t>(x.size())));
  QuantizeRow(type, x.data(), reinterpret_cast<std::byte*>(bytes.data()), static_cast<int64_t>(x.size()));
  return bytes;
}

TEST(IQ4, HandBuiltIQ4_NL) {
  std::vector<uint8_t> bytes = {0x00, 0x40};  // d = 2.0
  for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  const std::vector<float> y = DequantizeIQ4(TensorType::kIQ4_NL, bytes, 32);
  for (int e = 0; e < 16; ++e) EXPECT_EQ(y[e], 2.0f * kIQ4Values[e]) << e;
  for (int e = 16; e < 32; ++e) EXPECT_EQ(y[e], 2.0f * kIQ4Values[31 - e]) << e;
  EXPECT_EQ(y[0], -254.0f);
  EXPECT_EQ(y[16], 226.0f);  // index 15 (113) in the high nibble of qs[0]
}

TEST(IQ4, HandBuiltIQ4_XS) {
  // d = 0.5; 6-bit scales ls = {0, 1, 31, 32, 33, 47, 62, 63}: low nibbles {0, 1, 15, 0, 1, 15, 14, 15} in
  // scales_l (sub-block 2k in the low nibble of byte k), high bits {0, 0, 1, 2, 2, 2, 3, 3} in scales_h.
  const int ls[8] = {0, 1, 31, 32, 33, 47, 62, 63};
  std::vector<uint8_t> bytes = {0x00, 0x38};
  const uint16_t scales_h = 0 | 0 << 2 | 1 << 4 | 2 << 6 | 2 << 8 | 2 << 10 | 3 << 12 | 3 << 14;
  bytes.push_back(static_cast<uint8_t>(scales_h & 0xff));
  bytes.push_back(static_cast<uint8_t>(scales_h >> 8));
  for (uint8_t b : {0x10, 0x0f, 0xf1, 0xfe}) bytes.push_back(b);
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 16; ++l) bytes.push_back(static_cast<uint8_t>(((l + j) % 16) | ((15 - l) << 4)));
  }
  ASSERT_EQ(bytes.size(), sizeof(BlockIQ4_XS));
  const std::vector<float> y = DequantizeIQ4(TensorType::kIQ4_XS, bytes, 256);
  for (int j = 0; j < 8; ++j) {
    const float dl = 0.5f * static_cast<float>(ls[j] - 32);
    for (int l = 0; l < 16; ++l) {
      EXPECT_EQ(y[32 * j + l], dl * kIQ4Values[(l + j) % 16]) << j << " " << l;
      EXPECT_EQ(y[32 * j + 16 + l], dl * kIQ4Values[15 - l]) << j << " " << l;
    }
  }
  EXPECT_EQ(y[0], 0.5f * -32 * -127);  // ls 0: scale -32
  EXPECT_EQ(y[96], 0.0f);              // ls 32: scale 0
}

// A block that is exactly 0.5 x the table: the search's trial scale 0 (-127 / max) fits it exactly.
TEST(IQ4, QuantizerFitsAScaledTableExactly) {
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = 0.5f * kIQ4Values[(e + e / 32) % 16];
  const std::vector<uint8_t> nl = QuantizeIQ4(TensorType::kIQ4_NL, x);
  EXPECT_EQ(DequantizeIQ4(TensorType::kIQ4_NL, nl, 256), x);
  EXPECT_EQ(nl[0], 0x00);
  EXPECT_EQ(nl[1], 0x38);  // d = 0.5
  EXPECT_EQ(nl[2], 0x00);  // element 0: index 0, element 16: index 0
  // IQ4_XS: the block scales 0.5 against d = -0.5 / 32: ls - 32 = -32 each.
  const std::vector<uint8_t> xs = QuantizeIQ4(TensorType::kIQ4_XS, x);
  EXPECT_EQ(DequantizeIQ4(TensorType::kIQ4_XS, xs, 256), x);
  BlockIQ4_XS block;
  std::memcpy(&block, xs.data(), sizeof(block));
  for (int j = 0; j < 8; ++j) EXPECT_EQ(IQ4XSScale(block, j), -32) << j;
}

// Blocks below 1e-15 (ggml's GROUP_MAX_EPS) quantize to d = 0 with every index 8 (value 1); an IQ4_XS
// super-block of them has d = -0 (ggml's -max_scale / 32) and scales of 0 (ls 32).
TEST(IQ4, TinyBlocksAreZero) {
  const std::vector<float> x(256, 1e-16f);
  const std::vector<uint8_t> nl = QuantizeIQ4(TensorType::kIQ4_NL, x);
  for (size_t b = 0; b < 8; ++b) {
    EXPECT_EQ(nl[18 * b], 0x00);
    EXPECT_EQ(nl[18 * b + 1], 0x00);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(nl[18 * b + 2 + j], 0x88);
  }
  const std::vector<uint8_t> xs = QuantizeIQ4(TensorType::kIQ4_XS, x);
  BlockIQ4_XS block;
  std::memcpy(&block, xs.data(), sizeof(block));
  EXPECT_EQ(block.d, 0x8000);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(IQ4XSScale(block, j), 0);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0x88);
}

// On normal data the relative RMS error is that of a 4-bit quantizer (about 0.1), IQ4_XS's 6-bit block scales
// costing little; every IQ4_XS scale sign and most indices are in use.
TEST(IQ4, QuantizerErrorOnNormalData) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(8192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (1.0f + static_cast<float>(i / 256 % 4));
  for (TensorType type : {TensorType::kIQ4_NL, TensorType::kIQ4_XS}) {
    const std::vector<uint8_t> bytes = QuantizeIQ4(type, x);
    const std::vector<float> y = DequantizeIQ4(type, bytes, static_cast<int64_t>(x.size()));
    double err = 0, norm = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (y[i] - x[i]) * (y[i] - x[i]);
      norm += x[i] * x[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.12) << TensorTypeName(type);
    EXPECT_GT(std::sqrt(err / norm), 0.05) << TensorTypeName(type);
  }
}

// The quantizer's bytes equal llama.cpp's: FNV-1a hashes of ggml_quantize_chunk's output (llama.cpp c392e50,
// no importance matrix) for this integer-hash input (outliers every 97th element, a zero block), recorded
// with a throwaway program linking its libggml-base.
float GoldenInput(uint32_t i) {
  uint32_t h = i * 2654435761u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  float v = static_cast<float>(static_cast<int32_t>(h)) * 0x1p-31f * static_cast<float>(1 + (i / 256) % 4);
  if (i % 97 == 0) v *= 8.0f;
  if (i / 32 == 5) v = 0.0f;
  return v;
}

uint64_t Fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

TEST(IQ4, QuantizerMatchesLlamaCppBytes) {
  std::vector<float> x(262144);  // enough for the rare ties an FMA-contracted sum breaks otherwise
  for (uint32_t i = 0; i < x.size(); ++i) x[i] = GoldenInput(i);
  EXPECT_EQ(Fnv1a(QuantizeIQ4(TensorType::kIQ4_NL, x)), 0x402770c14cd34333ull);
  EXPECT_EQ(Fnv1a(QuantizeIQ4(TensorType::kIQ4_XS, x)), 0x37596185f13fd094ull);
}

}  // namespace
}  // namespace lockstep
