#include "tensor/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace lockstep {
namespace {

#if defined(__F16C__)
// The F16C instructions (part of the x86 baseline) are an independent oracle for round-to-nearest-even.
uint16_t HardwareF32ToF16(float f) { return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }
float HardwareF16ToF32(uint16_t h) { return _cvtsh_ss(h); }

TEST(Float16, EveryHalfRoundTripsAndMatchesHardware) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    const float hw = HardwareF16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(std::isnan(F16ToF32(F32ToF16(f)))) << h;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(f), std::bit_cast<uint32_t>(hw)) << h;
    ASSERT_EQ(F32ToF16(f), h) << h;
  }
}

#endif  // __F16C__

TEST(Float16, EdgeValues) {
  EXPECT_EQ(F32ToF16(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);    // largest finite
  EXPECT_EQ(F32ToF16(65519.996f), 0x7bff);  // just below the rounding boundary
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);    // tie rounds to even = infinity
  EXPECT_EQ(F32ToF16(-1e10f), 0xfc00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even (0)
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: tie to even (2)
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(F32ToF16(std::ldexp(1023.5f, -24)), 0x0400);      // subnormal rounding up into the normals
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even (down)
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even (up)
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
}

#if defined(__F16C__)
TEST(Float16, F32ToF16MatchesHardwareOnManyValues) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t bits = rng();
    if (i % 2 == 0) bits = (bits & 0x87ffffffu) | 0x30000000u;  // concentrate on the f16 range
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16(f), HardwareF32ToF16(f)) << std::hex << bits;
  }
}

#endif  // __F16C__

TEST(BFloat16, EdgeValues) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(F32ToBF16(-2.0f), 0xc000);
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);        // tie to even (down)
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);        // tie to even (up)
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -9)), 0x3f80);        // below half
  EXPECT_EQ(F32ToBF16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(F32ToBF16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(F32ToBF16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::bit_cast<float>(0x7f800001u)))));  // low-payload NaN
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = BF16ToF32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(F32ToBF16(f), b);
    }
  }
}

}  // namespace
}  // namespace lockstep
