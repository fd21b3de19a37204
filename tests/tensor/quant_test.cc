// Dequantization of hand-built blocks (checks the ggml layouts, not just self-consistency) and
// quantize -> dequantize error bounds per type; the IQ4_NL / IQ4_XS, Q3_K and Q2_K quantizers against
// llama.cpp's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "testing/golden_hash.h"

namespace lockstep {
namespace {

std::vector<float> Dequantize(TensorType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n);
  DequantizeRow(type, reinterpret_cast<const std::byte*>(bytes.data()), out.data(), n);
  return out;
}

TEST(Dequantize, HandBuiltQ8_0) {
  std::vector<uint8_t> bytes = {0x00, 0x38};  // d = 0.5 (f16 0x3800, little endian)
  for (int i = 0; i < 32; ++i) bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(i - 16)));
  const std::vector<float> y = Dequantize(TensorType::kQ8_0, bytes, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * (i - 16)) << i;
}

TEST(Dequantize, HandBuiltQ4_0) {
  std::vector<uint8_t> bytes = {0x00, 0x40};  // d = 2.0
  for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  const std::vector<float> y = Dequantize(TensorType::kQ4_0, bytes, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * (j - 8)) << j;            // low nibbles: elements 0..15
    EXPECT_EQ(y[j + 16], 2.0f * (7 - j)) << j + 16;  // high nibbles: elements 16..31
  }
}

// Q5_0 / Q5_1: qh is a little-endian u32 whose bit e is element e's fifth bit; qs[j] holds elements j (low
// nibble) and j + 16 (high nibble).
constexpr uint8_t kQh[4] = {0x5a, 0x3c, 0xf0, 0x81};  // 0x81f03c5a
int HandBuiltQ5Quant(int e) {
  const uint32_t qh = 0x81f03c5au;
  const int nibble = e < 16 ? e : 15 - (e - 16);
  return nibble + 16 * static_cast<int>((qh >> e) & 1);
}

TEST(Dequantize, HandBuiltQ5_0) {
  std::vector<uint8_t> bytes = {0x00, 0x40};  // d = 2.0
  bytes.insert(bytes.end(), kQh, kQh + 4);
  for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  ASSERT_EQ(bytes.size(), 22u);
  const std::vector<float> y = Dequantize(TensorType::kQ5_0, bytes, 32);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], 2.0f * (HandBuiltQ5Quant(e) - 16)) << e;
  EXPECT_EQ(y[1], 2.0f * (1 + 16 - 16));   // bit 1 of 0x5a
  EXPECT_EQ(y[31], 2.0f * (0 + 16 - 16));  // bit 31: the last byte's top bit
}

TEST(Dequantize, HandBuiltQ5_1) {
  std::vector<uint8_t> bytes = {0x00, 0x38, 0x00, 0xbc};  // d = 0.5, m = -1.0
  bytes.insert(bytes.end(), kQh, kQh + 4);
  for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  ASSERT_EQ(bytes.size(), 24u);
  const std::vector<float> y = Dequantize(TensorType::kQ5_1, bytes, 32);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], 0.5f * HandBuiltQ5Quant(e) - 1.0f) << e;
  EXPECT_EQ(y[0], -1.0f);                     // bit 0 of 0x5a is clear
  EXPECT_EQ(y[20], 0.5f * (11 + 16) - 1.0f);  // bit 20: bit 4 of 0xf0
}

TEST(Dequantize, HandBuiltQ4_K) {
  // d = 1.0, dmin = 0.5; sub-block scales {1,2,3,4,33,34,35,63}, mins {0,1,2,3,17,18,19,40}, packed by hand.
  std::vector<uint8_t> bytes = {0x00, 0x3c, 0x00, 0x38, 0x81, 0x82, 0x83, 0xc4,
                                0x40, 0x41, 0x42, 0x83, 0x11, 0x22, 0x33, 0x8f};
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) bytes.push_back(static_cast<uint8_t>((l % 16) | (((l + c) % 16) << 4)));
  }
  ASSERT_EQ(bytes.size(), 144u);
  const int sc[8] = {1, 2, 3, 4, 33, 34, 35, 63};
  const int m[8] = {0, 1, 2, 3, 17, 18, 19, 40};
  const std::vector<float> y = Dequantize(TensorType::kQ4_K, bytes, 256);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, within = e % 64;
    const int sub = 2 * c + within / 32, l = within % 32;
    const int q = within < 32 ? l % 16 : (l + c) % 16;
    EXPECT_EQ(y[e], 1.0f * sc[sub] * q - 0.5f * m[sub]) << e;
  }
}

TEST(Dequantize, HandBuiltQ5_K) {
  // Q4_K's d, dmin and scales above, then qh[32] and qs[128]: element 64c + l (l < 32) = low nibble of
  // qs[32c + l] | bit 2c of qh[l] << 4, element 64c + 32 + l = its high nibble | bit 2c + 1 of qh[l] << 4.
  std::vector<uint8_t> bytes = {0x00, 0x3c, 0x00, 0x38, 0x81, 0x82, 0x83, 0xc4,
                                0x40, 0x41, 0x42, 0x83, 0x11, 0x22, 0x33, 0x8f};
  for (int l = 0; l < 32; ++l) bytes.push_back(static_cast<uint8_t>(37 * l));
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) bytes.push_back(static_cast<uint8_t>((l % 16) | (((l + c) % 16) << 4)));
  }
  ASSERT_EQ(bytes.size(), 176u);
  const int sc[8] = {1, 2, 3, 4, 33, 34, 35, 63};
  const int m[8] = {0, 1, 2, 3, 17, 18, 19, 40};
  const std::vector<float> y = Dequantize(TensorType::kQ5_K, bytes, 256);
  int with_fifth_bit = 0;
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, within = e % 64;
    const int sub = 2 * c + within / 32, l = within % 32;
    const int nibble = within < 32 ? l % 16 : (l + c) % 16;
    const int bit = ((37 * l) & 0xff) >> sub & 1;
    with_fifth_bit += bit;
    EXPECT_EQ(y[e], 1.0f * sc[sub] * (nibble + 16 * bit) - 0.5f * m[sub]) << e;
  }
  EXPECT_GT(with_fifth_bit, 64);
  // By hand: element 1 = nibble 1 + 16 (qh[1] = 37, bit 0 set), sub-block 0 (sc 1, m 0); element 255 =
  // nibble (31 + 3) % 16 = 2, qh[31] = 123 has bit 7 clear, sub-block 7 (sc 63, m 40): 126 - 20.
  EXPECT_EQ(y[1], 17.0f);
  EXPECT_EQ(y[255], 106.0f);
}

TEST(Dequantize, HandBuiltQ6_K) {
  BlockQ6_K block;
  std::memset(&block, 0, sizeof(block));
  block.ql[0] = 0x21;
  block.qh[0] = 0xe4;  // bits: 00 (el 0), 01 (el 32), 10 (el 64), 11 (el 96)
  block.ql[32] = 0x5a;
  block.ql[64 + 3] = 0xf0;
  block.qh[32 + 3] = 0x1b;  // 11 (el 131), 10 (el 163), 01 (el 195), 00 (el 227)
  for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<int8_t>(j - 8);
  block.d = 0x3400;  // 0.25
  std::vector<uint8_t> bytes(sizeof(block));
  std::memcpy(bytes.data(), &block, sizeof(block));
  // Byte offsets of the standard layout: ql at 0, qh at 128, scales at 192, d at 208.
  ASSERT_EQ(bytes[128], 0xe4);
  ASSERT_EQ(bytes[192], static_cast<uint8_t>(-8));
  ASSERT_EQ(bytes[208], 0x00);
  ASSERT_EQ(bytes[209], 0x34);
  std::vector<int> q(256, 0);
  q[0] = 1;
  q[64] = 2 + 32;
  q[32] = 10 + 16;
  q[96] = 5 + 48;
  q[131] = 48;
  q[195] = 15 + 16;
  q[163] = 32;
  const std::vector<float> y = Dequantize(TensorType::kQ6_K, bytes, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.25f * (e / 16 - 8) * (q[e] - 32)) << e;
}

TEST(Dequantize, HalfAndBFloatRows) {
  const std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00};
  EXPECT_EQ(Dequantize(TensorType::kF16, f16, 3), (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24)}));
  const std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x40, 0xc0};
  EXPECT_EQ(Dequantize(TensorType::kBF16, bf16, 2), (std::vector<float>{1.0f, -3.0f}));
}

std::vector<float> RandomRow(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  if (n > 40) {  // outliers, an all-zero block and an all-positive stretch
    x[5] = 25.0f;
    x[37] = -30.0f;
    for (int i = 0; i < 32 && 64 + i < n; ++i) x[64 + i] = 0.0f;
  }
  for (int64_t i = n / 2; i < n / 2 + 40 && i < n; ++i) x[i] = std::fabs(x[i]) + 3.0f;
  return x;
}

std::vector<float> RoundTrip(TensorType type, const std::vector<float>& x, std::vector<uint8_t>* bytes) {
  bytes->assign(RowBytes(type, static_cast<int64_t>(x.size())), 0);
  QuantizeRow(type, x.data(), reinterpret_cast<std::byte*>(bytes->data()), static_cast<int64_t>(x.size()));
  return Dequantize(type, *bytes, static_cast<int64_t>(x.size()));
}

constexpr float kF16Eps = 1.0f / 2048;  // f16 relative rounding (2^-11)

TEST(Quantize, FloatTypesRoundToNearest) {
  const std::vector<float> x = RandomRow(512, 1);
  std::vector<uint8_t> bytes;
  EXPECT_EQ(RoundTrip(TensorType::kF32, x, &bytes), x);
  const std::vector<float> h = RoundTrip(TensorType::kF16, x, &bytes);
  const std::vector<float> b = RoundTrip(TensorType::kBF16, x, &bytes);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * kF16Eps) << i;
    EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) / 256) << i;
  }
}

TEST(Quantize, Q8_0ErrorAtMostHalfAStep) {
  const std::vector<float> x = RandomRow(1024, 2);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(TensorType::kQ8_0, x, &bytes);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    const float d = amax / 127;  // q = round(x / d); the stored f16 scale adds at most 127 * d * 2^-11
    const float bound = d / 2 + 127 * d * kF16Eps + 1e-6f * amax;
    for (int i = 0; i < 32; ++i) EXPECT_LE(std::fabs(y[32 * b + i] - x[32 * b + i]), bound) << b << " " << i;
  }
}

TEST(Quantize, Q4_0ErrorAtMostOneStep) {
  const std::vector<float> x = RandomRow(1024, 3);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(TensorType::kQ4_0, x, &bytes);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    // Step d = amax / 8; quants span [-8, 7] steps, so the side opposite the extreme may clip by one step;
    // everything else is within half a step.
    const float d = amax / 8;
    const float bound = d + 8 * d * kF16Eps + 1e-6f * amax;
    for (int i = 0; i < 32; ++i) EXPECT_LE(std::fabs(y[32 * b + i] - x[32 * b + i]), bound) << b << " " << i;
  }
}

TEST(Quantize, Q5_0ErrorAtMostOneStep) {
  const std::vector<float> x = RandomRow(1024, 7);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(TensorType::kQ5_0, x, &bytes);
  int high_quants = 0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    // Step d = amax / 16, quants [-16, 15] steps: as Q4_0, one step on the side opposite the extreme.
    const float d = amax / 16;
    const float bound = d + 16 * d * kF16Eps + 1e-6f * amax;
    BlockQ5_0 block;
    std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
    for (int i = 0; i < 32; ++i) {
      EXPECT_LE(std::fabs(y[32 * b + i] - x[32 * b + i]), bound) << b << " " << i;
      high_quants += Q5Quant(block.qh, block.qs, i) >= 16;
    }
  }
  EXPECT_GT(high_quants, 100);  // the fifth bit is used
}

TEST(Quantize, Q5_1ErrorAtMostHalfAStep) {
  const std::vector<float> x = RandomRow(1024, 8);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(TensorType::kQ5_1, x, &bytes);
  int high_quants = 0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float lo = x[32 * b], hi = x[32 * b];
    for (int i = 0; i < 32; ++i) {
      lo = std::min(lo, x[32 * b + i]);
      hi = std::max(hi, x[32 * b + i]);
    }
    // Step d = (max - min) / 31 from m = min: half a step, plus the f16 rounding of d (31 steps) and of m.
    const float d = (hi - lo) / 31;
    const float bound = d / 2 + 31 * d * kF16Eps + std::fabs(lo) * kF16Eps + 1e-6f * (hi - lo);
    BlockQ5_1 block;
    std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
    for (int i = 0; i < 32; ++i) {
      EXPECT_LE(std::fabs(y[32 * b + i] - x[32 * b + i]), bound) << b << " " << i;
      high_quants += Q5Quant(block.qh, block.qs, i) >= 16;
    }
  }
  EXPECT_GT(high_quants, 100);
}

// Q4_K / Q5_K (quants 0..max_q): the error is at most half the sub-block step, plus what rounding the 6-bit
// scale (d/2 per step, max_q steps) and min (dmin/2) can push out of the representable range. Returns how
// many quants are above 15 (Q5_K: the fifth bit in use).
template <class Block>
int ExpectScaleMinErrorBound(TensorType type, int max_q, uint32_t seed) {
  const std::vector<float> x = RandomRow(1024, seed);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(type, x, &bytes);
  int high_quants = 0;
  for (size_t b = 0; b < x.size() / 256; ++b) {
    Block block;
    std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
    const float d = F16ToF32(block.d), dmin = F16ToF32(block.dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      DecodeQ4KScaleMin(block.scales, j, &sc, &m);
      const float bound = (0.5f * d * sc + 0.5f * max_q * d + 0.5f * dmin) * 1.01f;
      for (int l = 0; l < 32; ++l) {
        const size_t i = 256 * b + 32 * j + l;
        EXPECT_LE(std::fabs(y[i] - x[i]), bound) << TensorTypeName(type) << " " << i;
        if constexpr (std::is_same_v<Block, BlockQ5_K>) high_quants += Q5KQuant(block, 32 * j + l) >= 16;
      }
    }
  }
  return high_quants;
}

TEST(Quantize, Q4_KErrorBound) { ExpectScaleMinErrorBound<BlockQ4_K>(TensorType::kQ4_K, 15, 4); }

TEST(Quantize, Q5_KErrorBound) {
  EXPECT_GT(ExpectScaleMinErrorBound<BlockQ5_K>(TensorType::kQ5_K, 31, 6), 100);  // the fifth bit is used
}

TEST(Quantize, Q6_KErrorBound) {
  const std::vector<float> x = RandomRow(1024, 5);
  std::vector<uint8_t> bytes;
  const std::vector<float> y = RoundTrip(TensorType::kQ6_K, x, &bytes);
  for (size_t b = 0; b < x.size() / 256; ++b) {
    BlockQ6_K block;
    std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int j = 0; j < 16; ++j) {
      // Half a step, plus the clipping that rounding the 8-bit scale (by d/2) can cause over 31.5 steps.
      const float bound = (0.5f * d * block.scales[j] + 15.75f * d) * 1.01f;
      for (int l = 0; l < 16; ++l) {
        const size_t i = 256 * b + 16 * j + l;
        EXPECT_LE(std::fabs(y[i] - x[i]), bound) << i;
      }
    }
  }
}

TEST(Quantize, Q8_0MatchesGgmlReferenceRounding) {
  // amax 127 -> d = 1 exactly; 2.5 rounds away from zero (roundf) like ggml's reference quantizer.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  std::vector<uint8_t> bytes;
  RoundTrip(TensorType::kQ8_0, x, &bytes);
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[1], 0x3c);
  EXPECT_EQ(static_cast<int8_t>(bytes[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(bytes[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(bytes[4]), -3);
}

// IQ4_NL / IQ4_XS: the ggml layouts (nibble order, the 6-bit scales' split into scales_l / scales_h) and the
// quantizer (ggml's scale search: exact fits, zero blocks, error, llama.cpp's bytes).
std::vector<uint8_t> QuantizeBytes(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(RowBytes(type, static_cast<int64_t>(x.size())));
  QuantizeRow(type, x.data(), reinterpret_cast<std::byte*>(bytes.data()), static_cast<int64_t>(x.size()));
  return bytes;
}

TEST(IQ4, HandBuiltIQ4_NL) {
  std::vector<uint8_t> bytes = {0x00, 0x40};  // d = 2.0
  for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  const std::vector<float> y = Dequantize(TensorType::kIQ4_NL, bytes, 32);
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
  const std::vector<float> y = Dequantize(TensorType::kIQ4_XS, bytes, 256);
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
  const std::vector<uint8_t> nl = QuantizeBytes(TensorType::kIQ4_NL, x);
  EXPECT_EQ(Dequantize(TensorType::kIQ4_NL, nl, 256), x);
  EXPECT_EQ(nl[0], 0x00);
  EXPECT_EQ(nl[1], 0x38);  // d = 0.5
  EXPECT_EQ(nl[2], 0x00);  // element 0: index 0, element 16: index 0
  // IQ4_XS: the block scales 0.5 against d = -0.5 / 32: ls - 32 = -32 each.
  const std::vector<uint8_t> xs = QuantizeBytes(TensorType::kIQ4_XS, x);
  EXPECT_EQ(Dequantize(TensorType::kIQ4_XS, xs, 256), x);
  BlockIQ4_XS block;
  std::memcpy(&block, xs.data(), sizeof(block));
  for (int j = 0; j < 8; ++j) EXPECT_EQ(IQ4XSScale(block, j), -32) << j;
}

// Blocks below 1e-15 (ggml's GROUP_MAX_EPS) quantize to d = 0 with every index 8 (value 1); an IQ4_XS
// super-block of them has d = -0 (ggml's -max_scale / 32) and scales of 0 (ls 32).
TEST(IQ4, TinyBlocksAreZero) {
  const std::vector<float> x(256, 1e-16f);
  const std::vector<uint8_t> nl = QuantizeBytes(TensorType::kIQ4_NL, x);
  for (size_t b = 0; b < 8; ++b) {
    EXPECT_EQ(nl[18 * b], 0x00);
    EXPECT_EQ(nl[18 * b + 1], 0x00);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(nl[18 * b + 2 + j], 0x88);
  }
  const std::vector<uint8_t> xs = QuantizeBytes(TensorType::kIQ4_XS, x);
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
    const std::vector<uint8_t> bytes = QuantizeBytes(type, x);
    const std::vector<float> y = Dequantize(type, bytes, static_cast<int64_t>(x.size()));
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
  float v = testing::HashedUnit(i) * static_cast<float>(1 + (i / 256) % 4);
  if (i % 97 == 0) v *= 8.0f;
  if (i / 32 == 5) v = 0.0f;
  return v;
}

uint64_t Fnv1a(const std::vector<uint8_t>& bytes) { return testing::Fnv1a(bytes.data(), bytes.size()); }

TEST(IQ4, QuantizerMatchesLlamaCppBytes) {
  std::vector<float> x(262144);  // enough for the rare ties an FMA-contracted sum breaks otherwise
  for (uint32_t i = 0; i < x.size(); ++i) x[i] = GoldenInput(i);
  EXPECT_EQ(Fnv1a(QuantizeBytes(TensorType::kIQ4_NL, x)), 0x402770c14cd34333ull);
  EXPECT_EQ(Fnv1a(QuantizeBytes(TensorType::kIQ4_XS, x)), 0x37596185f13fd094ull);
}

// One block's dequantized elements.
template <typename Block>
std::vector<float> DequantizeBlock(TensorType type, const Block& block) {
  std::vector<uint8_t> bytes(sizeof(block));
  std::memcpy(bytes.data(), &block, sizeof(block));
  return Dequantize(type, bytes, 256);
}

// Calls f(e, j, n, k, l) for Q2_K / Q3_K's elements in the order ggml's dequantize_row_q2_K / q3_K walk them:
// per half n of 128, per shift 2k (and Q3_K's hmask bit 4n + k), two runs of 16 (l in [0, 16), [16, 32)),
// each with the next sub-block scale j.
template <typename F>
void ForEachKLowElement(const F& f) {
  int e = 0, j = 0;
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 4; ++k) {
      for (int run = 0; run < 2; ++run, ++j) {
        for (int l = 16 * run; l < 16 * run + 16; ++l, ++e) f(e, j, n, k, l);
      }
    }
  }
}

// Q3_K: scales 1 (j < 8) and 2 (j >= 8) but -30 where scales[8]'s bits are 0 (j = 8, 12), d = 0.5.
TEST(Dequantize, HandBuiltQ3_K) {
  BlockQ3_K block;
  for (int l = 0; l < 32; ++l) block.hmask[l] = static_cast<uint8_t>(37 * l + 11);
  for (int i = 0; i < 64; ++i) block.qs[i] = static_cast<uint8_t>(91 * i + 5);
  std::memset(block.scales, 0x21, 8);
  std::memset(block.scales + 8, 0xaa, 4);
  block.scales[8] = 0x0a;
  block.d = 0x3800;  // 0.5
  const std::vector<float> y = DequantizeBlock(TensorType::kQ3_K, block);
  ForEachKLowElement([&](int e, int j, int n, int k, int l) {
    const float sc = (j == 8 || j == 12) ? -30.0f : j < 8 ? 1.0f : 2.0f;
    const int low = (block.qs[32 * n + l] >> (2 * k)) & 3;
    const int q = low - ((block.hmask[l] & (1 << (4 * n + k))) ? 0 : 4);
    EXPECT_EQ(y[e], 0.5f * sc * static_cast<float>(q)) << e;
  });
}

// Q2_K: scales[j] = sc | m << 4 (sc = j, m = 15 - j), d = 0.5, dmin = 2.
TEST(Dequantize, HandBuiltQ2_K) {
  BlockQ2_K block;
  for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  for (int i = 0; i < 64; ++i) block.qs[i] = static_cast<uint8_t>(91 * i + 5);
  block.d = 0x3800;     // 0.5
  block.dmin = 0x4000;  // 2
  const std::vector<float> y = DequantizeBlock(TensorType::kQ2_K, block);
  ForEachKLowElement([&](int e, int j, int n, int k, int l) {
    const int q = (block.qs[32 * n + l] >> (2 * k)) & 3;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(j) * static_cast<float>(q) - 2.0f * static_cast<float>(15 - j))
        << e;
  });
}

// The Q3_K / Q2_K quantizers' bytes equal llama.cpp's (GoldenInput; ggml_quantize_chunk and to_float of
// llama.cpp c392e50's libggml-base after ggml_init, whose f16 table its quantizers read), and their errors
// are those of 3- and 2-bit fits.
TEST(Quantize, Q3_KAndQ2_KMatchLlamaCppBytes) {
  std::vector<float> x(262144);
  for (uint32_t i = 0; i < x.size(); ++i) x[i] = GoldenInput(i);
  EXPECT_EQ(Fnv1a(QuantizeBytes(TensorType::kQ3_K, x)), 0x54201433b2f22255ull);
  EXPECT_EQ(Fnv1a(QuantizeBytes(TensorType::kQ2_K, x)), 0xc5340d6ae906276eull);
  // and DequantizeRow of them equals ggml's to_float (hashes of the float bytes).
  for (const auto& [type, hash] :
       {std::pair{TensorType::kQ3_K, 0xc6c58fc673629628ull}, {TensorType::kQ2_K, 0xcd7d7abf749d3890ull}}) {
    const std::vector<float> y = Dequantize(type, QuantizeBytes(type, x), 262144);
    std::vector<uint8_t> bytes(4 * y.size());
    std::memcpy(bytes.data(), y.data(), bytes.size());
    EXPECT_EQ(Fnv1a(bytes), hash) << TensorTypeName(type);
  }
  for (const auto& [type, low, high] :
       {std::tuple{TensorType::kQ3_K, 0.1, 0.25}, {TensorType::kQ2_K, 0.2, 0.5}}) {
    const std::vector<float> y = Dequantize(type, QuantizeBytes(type, x), 262144);
    double err = 0, norm = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (y[i] - x[i]) * (y[i] - x[i]);
      norm += x[i] * x[i];
    }
    EXPECT_LT(std::sqrt(err / norm), high) << TensorTypeName(type);
    EXPECT_GT(std::sqrt(err / norm), low) << TensorTypeName(type);
  }
}

}  // namespace
}  // namespace lockstep
