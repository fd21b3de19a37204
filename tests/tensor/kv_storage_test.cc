// The KV cache's storage (tensor/kv_storage.h): q8_0 groups round each value to the nearest multiple of their
// f16 scale max|x| / 127 (so the largest magnitude gets quant ±127), zero and non-finite input stay defined,
// the head layouts are where the header says, and the attention kernels widen what is stored exactly.
#include "tensor/kv_storage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tensor/attention_kernels.h"
#include "tensor/float16.h"

namespace lockstep {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(KvStorage, NamesRoundTrip) {
  for (KvDtype dtype : kKvDtypes) {
    EXPECT_EQ(ParseKvDtype(KvDtypeName(dtype)), dtype);
  }
  EXPECT_FALSE(ParseKvDtype("q4_0").has_value());
  EXPECT_FALSE(ParseKvDtype("Q8_0").has_value());
  EXPECT_FALSE(ParseKvDtype("").has_value());
}

TEST(KvStorage, HeadBytes) {
  EXPECT_EQ(KvHeadBytes(KvDtype::kF32, 16, 64), 16u * 64 * 4);
  EXPECT_EQ(KvHeadBytes(KvDtype::kF16, 16, 64), 16u * 64 * 2);
  EXPECT_EQ(KvHeadBytes(KvDtype::kQ8_0, 16, 64), 16u * 64 + 16 * 2 * 2);  // two scale groups of 32
  EXPECT_EQ(KvHeadBytes(KvDtype::kQ8_0, 16, 20), 16u * 20 + 16 * 2);      // one scale for all 20 dims
  EXPECT_EQ(KvScaleGroup(128), 32);
  EXPECT_EQ(KvScaleGroup(80), 80);
  EXPECT_EQ(KvScaleGroup(16), 16);
}

TEST(KvStorage, Q8GroupRoundsToTheNearestMultipleOfItsScale) {
  for (float range : {1e-3f, 0.5f, 3.0f, 900.0f}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      const std::vector<float> x = Random(32, seed, range);
      int8_t q[32];
      const uint16_t bits = QuantizeKvGroup(x.data(), 32, q, 1);
      const float d = F16ToF32(bits);
      float amax = 0;
      int qmax = 0;
      for (int i = 0; i < 32; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        qmax = std::max(qmax, std::abs(int(q[i])));
      }
      ASSERT_EQ(bits, F32ToF16(amax / 127.0f)) << range;
      EXPECT_EQ(qmax, 127) << range << " " << seed;
      for (int i = 0; i < 32; ++i) {
        EXPECT_LE(std::fabs(x[i] - float(q[i]) * d), 0.5f * d * (1 + 1e-6f)) << range << " " << i;
        EXPECT_EQ(float(q[i]), std::nearbyint(x[i] / d)) << range << " " << i;
      }
    }
  }
}

TEST(KvStorage, Q8ZeroTinyAndNonFiniteInputStayDefined) {
  int8_t q[4] = {1, 1, 1, 1};
  const float zeros[4] = {0.0f, -0.0f, 0.0f, 0.0f};
  EXPECT_EQ(QuantizeKvGroup(zeros, 4, q, 1), 0u);
  for (int8_t v : q) EXPECT_EQ(v, 0);
  const float tiny[4] = {1e-30f, -1e-30f, 0.0f, 0.0f};  // the scale underflows f16: everything 0
  EXPECT_EQ(F16ToF32(QuantizeKvGroup(tiny, 4, q, 1)), 0.0f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float odd[4] = {nan, 1.0f, -2.0f, 0.5f};  // a NaN is skipped for the scale and stored as 0
  const float d = F16ToF32(QuantizeKvGroup(odd, 4, q, 1));
  EXPECT_EQ(d, F16ToF32(F32ToF16(2.0f / 127.0f)));
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[2], -127);
  const float huge[4] = {inf, 1e9f, -1e9f, 1.0f};  // the scale saturates at f16's largest; quants clamp
  EXPECT_EQ(F16ToF32(QuantizeKvGroup(huge, 4, q, 1)), 65504.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], 127);
  EXPECT_EQ(q[2], -127);
  EXPECT_EQ(q[3], 0);
}

// Stored keys and values, read back by the widening kernels: exactly quant * scale, per the layout.
TEST(KvStorage, Q8RegionsWidenToQuantTimesScale) {
  for (int head_dim : {64, 20}) {
    const int32_t block_tokens = 20, count = 19;
    const int group = KvScaleGroup(head_dim);
    std::vector<std::byte> keys(KvHeadBytes(KvDtype::kQ8_0, block_tokens, head_dim));
    std::vector<std::byte> values(keys.size());
    std::vector<std::vector<float>> stored;  // what each position's vector reads back as
    for (int32_t s = 0; s < count; ++s) {
      const std::vector<float> x = Random(size_t(head_dim), 100 + s, 2.0f);
      StoreKey(KvDtype::kQ8_0, x.data(), head_dim, block_tokens, s, keys.data());
      StoreValue(KvDtype::kQ8_0, x.data(), head_dim, block_tokens, s, values.data());
      std::vector<float> y(x.size());
      for (int g = 0; g < head_dim / group; ++g) {
        std::vector<int8_t> q(static_cast<size_t>(group));
        const float d = F16ToF32(QuantizeKvGroup(x.data() + g * group, group, q.data(), 1));
        for (int i = 0; i < group; ++i) y[size_t(g * group + i)] = float(q[size_t(i)]) * d;
        // The layout: key quants dim-major, then scales [group][slot]; values slot-major, then [slot][group].
        const auto* key_scales =
            reinterpret_cast<const uint16_t*>(keys.data() + KvScaleOffset(block_tokens, head_dim));
        const auto* value_scales =
            reinterpret_cast<const uint16_t*>(values.data() + KvScaleOffset(block_tokens, head_dim));
        EXPECT_EQ(F16ToF32(key_scales[size_t(g) * block_tokens + s]), d);
        EXPECT_EQ(F16ToF32(value_scales[size_t(s) * (head_dim / group) + g]), d);
        EXPECT_EQ(int8_t(keys[size_t(g * group) * block_tokens + s]), q[0]);
        EXPECT_EQ(int8_t(values[size_t(s) * head_dim + g * group]), q[0]);
      }
      stored.push_back(y);
    }
    std::vector<float> widened(attention::TransposedKeyFloats(count, head_dim), -1.0f);
    attention::WidenKeysTransposed(keys.data(), KvDtype::kQ8_0, block_tokens, count, head_dim,
                                   widened.data());
    for (int s = 0; s < 32; ++s) {
      for (int d = 0; d < head_dim; ++d) {
        const float got = widened[size_t(s / 16) * 16 * head_dim + size_t(d) * 16 + s % 16];
        EXPECT_EQ(got, s < count ? stored[size_t(s)][size_t(d)] : 0.0f) << head_dim << " " << s << " " << d;
      }
    }
    std::vector<float> value_rows(size_t(count) * head_dim);
    attention::WidenValues(values.data(), KvDtype::kQ8_0, block_tokens, count, head_dim, value_rows.data());
    for (int32_t s = 0; s < count; ++s) {
      EXPECT_EQ(std::memcmp(value_rows.data() + size_t(s) * head_dim, stored[size_t(s)].data(),
                            sizeof(float) * size_t(head_dim)),
                0)
          << head_dim << " " << s;
    }
  }
}

}  // namespace
}  // namespace lockstep
