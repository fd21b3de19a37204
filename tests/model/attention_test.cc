// Attention kernels: every SIMD level this CPU runs is bit-identical to the scalar reference (odd head dims
// and counts, unaligned buffers), the reference agrees with double-precision arithmetic, and AttendRows gives
// every (row, head) the same bits whether rows are tiled together or run one by one and heads grouped or not
// — for f16, f32 and q8_0 KV — and agrees with a naive double-precision attention over what the KV stores.
#include "model/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/attention_decode.h"
#include "tensor/attention_kernels.h"
#include "tensor/cpu_features.h"
#include "tensor/cpu_level.h"
#include "tensor/float16.h"
#include "tensor/kernels.h"
#include "testing/levels.h"

namespace lockstep {
namespace {

using attention::KernelLevel;

// The attention levels of the CPU levels this machine runs (scalar first).
std::vector<KernelLevel> Levels() {
  std::vector<KernelLevel> levels;
  for (CpuLevel level : RunnableCpuLevels(ProbeCpuFeatures())) {
    const KernelLevel a = attention::AttentionLevelFor(level);
    if (std::find(levels.begin(), levels.end(), a) == levels.end()) levels.push_back(a);
  }
  return levels;
}

// The kernels AttendRows and its kin run with here: the best level's, with scratch of the size they ask for.
const AttentionKernels& Best() { return testing::BestKernels().attention; }
void Attend(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
            int32_t first, int32_t rows, const float* q, size_t q_stride, int32_t heads, float scale,
            float* out, size_t out_stride) {
  std::vector<std::byte> scratch(AttendRowsScratchBytes(Best(), kv, first, rows, heads) + 64);
  std::byte* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  AttendRows(Best(), kv, blocks, layer, kv_head, first, rows, q, q_stride, heads, scale, out, out_stride,
             aligned);
}

std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

bool SameBits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// One head's vector x[0..n) as a KV cache of `dtype` stores it (tensor/kv_storage.h), from the rule itself:
// f16 rounding, or for q8_0 each KvScaleGroup(n) values to the nearest multiple of d = f16(max|x| / 127).
void RoundAsStored(KvDtype dtype, float* x, int n) {
  if (dtype == KvDtype::kF16) {
    for (int i = 0; i < n; ++i) x[i] = F16ToF32(F32ToF16(x[i]));
  } else if (dtype == KvDtype::kQ8_0) {
    const int group = KvScaleGroup(n);
    for (int g = 0; g < n; g += group) {
      float amax = 0;
      for (int i = g; i < g + group; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float d = F16ToF32(F32ToF16(amax / 127.0f));
      for (int i = g; i < g + group; ++i) x[i] = d > 0 ? std::nearbyint(x[i] / d) * d : 0.0f;
    }
  }
}

// Keys k ([count][head_dim]) as a KV block stores them (dim-major, block_tokens = count), widened.
std::vector<float> WidenedKeys(const std::vector<float>& k, int32_t count, int head_dim, size_t offset = 0) {
  std::vector<float> stored(k.size());
  for (int32_t s = 0; s < count; ++s) {
    for (int d = 0; d < head_dim; ++d) stored[size_t(d) * count + s] = k[size_t(s) * head_dim + d];
  }
  std::vector<float> keys(attention::TransposedKeyFloats(count, head_dim) + offset, -7.0f);
  attention::WidenKeysTransposed(stored.data(), KvDtype::kF32, count, count, head_dim, keys.data() + offset);
  return keys;
}

TEST(AttentionKernels, DotKeysMatchesTheScalarReferenceBitForBit) {
  std::mt19937 rng(7);
  for (int head_dim : {4, 8, 12, 20, 64, 80, 96, 128, 136}) {
    for (int32_t count : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33}) {
      const std::vector<float> k = Random(size_t(count) * head_dim, rng);
      const std::vector<float> q = Random(size_t(head_dim) + 1, rng);
      const std::vector<float> keys = WidenedKeys(k, count, head_dim, 1);  // +1: unaligned buffers
      std::vector<float> reference(size_t(count) + 1);
      attention::DotKeys(KernelLevel::kScalar, q.data() + 1, 0, 1, keys.data() + 1, count, head_dim, 0.125f,
                         reference.data() + 1, 0);
      for (int32_t s = 0; s < count; ++s) {
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) dot += double(q[1 + d]) * double(k[size_t(s) * head_dim + d]);
        EXPECT_NEAR(reference[1 + s], dot * 0.125, 1e-5 * (1 + std::abs(dot))) << head_dim << " " << s;
      }
      for (KernelLevel level : Levels()) {
        std::vector<float> scores(size_t(count) + 1, -1.0f);
        attention::DotKeys(level, q.data() + 1, 0, 1, keys.data() + 1, count, head_dim, 0.125f,
                           scores.data() + 1, 0);
        EXPECT_TRUE(SameBits(scores.data() + 1, reference.data() + 1, count))
            << attention::KernelLevelName(level) << " head_dim " << head_dim << " count " << count;
        EXPECT_EQ(scores[0], -1.0f);  // nothing written before the output
      }
    }
  }
}

TEST(AttentionKernels, AccumulateValuesMatchesTheScalarReferenceBitForBit) {
  std::mt19937 rng(11);
  for (int head_dim : {4, 8, 12, 64, 72, 80, 136, 200}) {
    for (int32_t count : {1, 3, 16, 17}) {
      const std::vector<float> v = Random(size_t(count) * head_dim + 1, rng);
      const std::vector<float> w = Random(size_t(count), rng);
      const std::vector<float> start = Random(size_t(head_dim) + 1, rng);
      std::vector<float> reference = start;
      attention::AccumulateValues(KernelLevel::kScalar, w.data(), 0, 1, v.data() + 1, count, head_dim,
                                  reference.data() + 1, 0);
      for (int d = 0; d < head_dim; ++d) {
        double sum = start[1 + d];
        for (int32_t s = 0; s < count; ++s) sum += double(w[s]) * double(v[1 + size_t(s) * head_dim + d]);
        EXPECT_NEAR(reference[1 + d], sum, 1e-5 * (1 + std::abs(sum)));
      }
      for (KernelLevel level : Levels()) {
        std::vector<float> out = start;
        attention::AccumulateValues(level, w.data(), 0, 1, v.data() + 1, count, head_dim, out.data() + 1, 0);
        EXPECT_TRUE(SameBits(out.data(), reference.data(), out.size()))
            << attention::KernelLevelName(level) << " head_dim " << head_dim << " count " << count;
      }
    }
  }
}

TEST(AttentionKernels, SeveralQueriesAtOnceGiveEachQuerysSoloBits) {
  std::mt19937 rng(13);
  for (int head_dim : {12, 20, 64, 72, 128}) {
    const int dp = head_dim + 3;  // queries apart by more than head_dim
    for (int queries : {1, 2, 3, 4, 5, 7, 8, 9, 12, 17}) {
      for (int32_t count : {1, 6, 16, 17, 40}) {
        const std::vector<float> k = Random(size_t(count) * head_dim, rng);
        const std::vector<float> keys = WidenedKeys(k, count, head_dim);
        const std::vector<float> q = Random(size_t(queries) * dp, rng);
        const size_t scores_stride = size_t(count) + 3;
        const std::vector<float> start = Random(size_t(queries) * head_dim, rng);
        for (KernelLevel level : Levels()) {
          std::vector<float> together(size_t(queries) * scores_stride), alone(together.size());
          attention::DotKeys(level, q.data(), dp, queries, keys.data(), count, head_dim, 0.5f,
                             together.data(), scores_stride);
          for (int j = 0; j < queries; ++j) {
            attention::DotKeys(level, q.data() + j * dp, 0, 1, keys.data(), count, head_dim, 0.5f,
                               alone.data() + j * scores_stride, 0);
          }
          EXPECT_TRUE(SameBits(together.data(), alone.data(), together.size()))
              << attention::KernelLevelName(level) << " dot queries " << queries << " count " << count;
          std::vector<float> out_together = start, out_alone = start;
          attention::AccumulateValues(level, together.data(), scores_stride, queries, k.data(), count,
                                      head_dim, out_together.data(), head_dim);
          for (int j = 0; j < queries; ++j) {
            attention::AccumulateValues(level, together.data() + j * scores_stride, 0, 1, k.data(), count,
                                        head_dim, out_alone.data() + j * head_dim, 0);
          }
          EXPECT_TRUE(SameBits(out_together.data(), out_alone.data(), out_alone.size()))
              << attention::KernelLevelName(level) << " values queries " << queries << " count " << count;
        }
      }
    }
  }
}

TEST(AttentionKernels, SoftmaxIsIdenticalOnEveryLevelAndNormalised) {
  std::mt19937 rng(5);
  for (int32_t len : {1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 513}) {
    std::vector<float> x = Random(size_t(len + 7) / 8 * 8 + 1, rng);
    for (float& v : x) v *= 8;
    std::vector<float> simd_reference;
    for (KernelLevel level : Levels()) {
      std::vector<float> y = x;
      attention::Softmax(level, y.data() + 1, len);
      double sum = 0;
      float max_x = -INFINITY;
      for (int32_t t = 0; t < len; ++t) max_x = std::max(max_x, x[1 + t]);
      for (int32_t t = 0; t < len; ++t) sum += std::exp(double(x[1 + t]) - max_x);
      for (int32_t t = 0; t < len; ++t) {
        EXPECT_NEAR(y[1 + t], std::exp(double(x[1 + t]) - max_x) / sum, 1e-6) << len;
      }
      EXPECT_EQ(y[0], x[0]);
      // Every level, scalar and NEON included, uses the same polynomial exp and sum order.
      if (simd_reference.empty()) {
        simd_reference = y;
      } else {
        EXPECT_TRUE(SameBits(y.data() + 1, simd_reference.data() + 1, size_t(len)))
            << attention::KernelLevelName(level) << " len " << len;
      }
    }
  }
}

TEST(AttentionKernels, WideningIsExactAndPadsWithZeros) {
  const int head_dim = 12;
  const int32_t block_tokens = 20, count = 19;  // two key groups, the second with 3 of 16 positions
  std::vector<uint16_t> h(size_t(block_tokens) * head_dim);  // stored dim-major: h[d * block_tokens + s]
  for (size_t i = 0; i < h.size(); ++i) h[i] = F32ToF16(0.25f * float(i) - 3.0f);
  std::vector<float> keys(attention::TransposedKeyFloats(count, head_dim), -1.0f);
  attention::WidenKeysTransposed(h.data(), KvDtype::kF16, block_tokens, count, head_dim, keys.data());
  ASSERT_EQ(keys.size(), 2u * 16 * head_dim);
  for (int s = 0; s < 32; ++s) {
    for (int d = 0; d < head_dim; ++d) {
      const float got = keys[size_t(s / 16) * 16 * head_dim + size_t(d) * 16 + s % 16];
      const float want = s < count ? F16ToF32(h[size_t(d) * block_tokens + s]) : 0.0f;
      EXPECT_EQ(got, want) << s << " " << d;
    }
  }
  // Blocks of 7 positions placed one after another (positions 7b + s) fill the groups without gaps.
  std::vector<float> joined(attention::TransposedKeyFloats(3 * 7, head_dim), -1.0f);
  for (int32_t b = 0; b < 3; ++b) {
    attention::WidenKeysTransposed(h.data() + b, KvDtype::kF16, block_tokens, 7, head_dim, joined.data(),
                                   7 * b);
  }
  for (int s = 0; s < 32; ++s) {
    for (int d = 0; d < head_dim; ++d) {
      const float got = joined[size_t(s / 16) * 16 * head_dim + size_t(d) * 16 + s % 16];
      const float want = s < 21 ? F16ToF32(h[size_t(d) * block_tokens + s % 7 + s / 7]) : 0.0f;
      EXPECT_EQ(got, want) << "joined " << s << " " << d;
    }
  }
  std::vector<float> values(3 * head_dim);
  attention::WidenValues(h.data(), KvDtype::kF16, block_tokens, 3, head_dim, values.data());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], F16ToF32(h[i]));
}

class AttendRowsTest : public ::testing::TestWithParam<KvDtype> {};

// Context lengths and block sizes: a short context, and longer ones (past the 256-position key chunk
// AttendRows scores per call, and past the first attention part, kAttentionPart = 256) with blocks that are
// not a multiple of the 16-position key groups or do not divide a part.
// head_dim 20 (not a multiple of 8) takes the general path for every row; head_dims that are multiples of 16
// with block_tokens multiples of 16 take attention::AttendDecodeRow for single rows, which must give the
// tiles' bits, whole or split into parts run one by one (AttendRowPart, MergeRowParts).
// value_dim (0: head_dim): values narrower or wider than keys (deepseek2's latent attention).
void CheckTilingAndNaiveAttention(KvDtype dtype, int32_t positions, int32_t block_tokens, int head_dim = 20,
                                  int32_t group = 3, int value_dim = 0, int32_t n_kv_head = 2) {
  SCOPED_TRACE("positions " + std::to_string(positions) + " block_tokens " + std::to_string(block_tokens) +
               " head_dim " + std::to_string(head_dim) + " group " + std::to_string(group) + " value_dim " +
               std::to_string(value_dim) + " kv heads " + std::to_string(n_kv_head));
  KvLayout kv;
  kv.n_layer = 2;
  kv.n_kv_head = n_kv_head;
  kv.head_dim = head_dim;
  kv.value_dim = value_dim;
  kv.block_tokens = block_tokens;
  kv.dtype = dtype;
  const int32_t n_head = kv.n_kv_head * group, q_dim = n_head * kv.head_dim;
  const int nv = kv.ValueDim();
  const int32_t o_dim = n_head * nv;  // a row's outputs
  std::vector<std::vector<std::byte>> storage((positions + kv.block_tokens - 1) / kv.block_tokens,
                                              std::vector<std::byte>(kv.BlockBytes()));
  std::vector<std::byte*> blocks;
  for (auto& b : storage) blocks.push_back(b.data());
  std::mt19937 rng(3);
  const int32_t layer = 1;
  std::vector<std::vector<float>> keys, values;  // as stored (RoundAsStored), [position][kv_dim]
  for (int32_t p = 0; p < positions; ++p) {
    std::vector<float> k = Random(size_t(kv.n_kv_head) * kv.head_dim, rng);
    std::vector<float> v = Random(size_t(kv.n_kv_head) * nv, rng);
    WriteKv(kv, blocks, layer, p, k.data(), v.data());
    for (int32_t h = 0; h < kv.n_kv_head; ++h) {
      RoundAsStored(kv.dtype, k.data() + size_t(h) * kv.head_dim, kv.head_dim);
      RoundAsStored(kv.dtype, v.data() + size_t(h) * nv, nv);
    }
    keys.push_back(k);
    values.push_back(v);
  }
  const std::vector<float> q = Random(size_t(positions) * q_dim, rng);
  const float scale = 1.0f / std::sqrt(float(kv.head_dim));

  // Rows 0..positions-1 as tiles of `tile` rows with whole KV groups.
  auto run_tiles = [&](int32_t tile) {
    std::vector<float> out(size_t(positions) * o_dim);
    for (int32_t first = 0; first < positions; first += tile) {
      const int32_t rows = std::min(tile, positions - first);
      for (int32_t g = 0; g < kv.n_kv_head; ++g) {
        const size_t at = size_t(first) * q_dim + g * group * kv.head_dim;
        const size_t out_at = size_t(first) * o_dim + g * group * nv;
        Attend(kv, blocks, layer, g, first, rows, q.data() + at, q_dim, group, scale, out.data() + out_at,
               o_dim);
      }
    }
    return out;
  };
  const std::vector<float> tiled = run_tiles(16);
  // Tiles of 13 rows: some span the end of a part (rows with one part and with two in one call).
  const std::vector<float> tiled13 = run_tiles(13);
  EXPECT_TRUE(SameBits(tiled.data(), tiled13.data(), tiled.size()));
  // Every row in one call (a whole prompt in one chunk), and two large tiles (the second one's rows reach
  // every position before its first): rows drop out of the key slices they do not reach.
  const std::vector<float> whole = run_tiles(positions);
  EXPECT_TRUE(SameBits(tiled.data(), whole.data(), tiled.size()));
  const std::vector<float> halves = run_tiles(positions / 2 + 5);
  EXPECT_TRUE(SameBits(tiled.data(), halves.data(), tiled.size()));
  // One row and one head per call, rows in reverse order.
  std::vector<float> single(size_t(positions) * o_dim);
  for (int32_t p = positions - 1; p >= 0; --p) {
    for (int32_t h = 0; h < n_head; ++h) {
      Attend(kv, blocks, layer, h / group, p, 1, q.data() + size_t(p) * q_dim + h * kv.head_dim, q_dim, 1,
             scale, single.data() + size_t(p) * o_dim + h * nv, o_dim);
    }
  }
  EXPECT_TRUE(SameBits(tiled.data(), single.data(), tiled.size()));
  // One row per call with its whole group of query heads (how decode rows run).
  std::vector<float> grouped(size_t(positions) * o_dim);
  for (int32_t p = 0; p < positions; ++p) {
    for (int32_t g = 0; g < kv.n_kv_head; ++g) {
      Attend(kv, blocks, layer, g, p, 1, q.data() + size_t(p) * q_dim + g * group * kv.head_dim, q_dim, group,
             scale, grouped.data() + size_t(p) * o_dim + g * group * nv, o_dim);
    }
  }
  EXPECT_TRUE(SameBits(tiled.data(), grouped.data(), tiled.size()));
  // One row's parts run separately (as threads do for a long decode row), last part first, then merged.
  if (CanSplitRow(Best(), kv, group)) {
    std::vector<float> split(size_t(positions) * o_dim);
    for (int32_t p = 0; p < positions; ++p) {
      const int32_t parts = AttentionParts(p);
      std::vector<float> partials(size_t(group) * parts * nv, -1.0f);
      std::vector<attention::SoftmaxStats> stats(size_t(group) * parts);
      for (int32_t g = 0; g < kv.n_kv_head; ++g) {
        const size_t at = size_t(p) * q_dim + g * group * kv.head_dim;
        for (int32_t part = parts - 1; part >= 0; --part) {
          std::vector<float> scratch(AttendRowPartScratchBytes(group) / sizeof(float));
          AttendRowPart(Best(), kv, blocks, layer, g, p, part, q.data() + at, group, scale, partials.data(),
                        stats.data(), reinterpret_cast<std::byte*>(scratch.data()));
        }
        std::vector<float> scratch(MergeRowPartsScratchBytes(p, group) / sizeof(float));
        MergeRowParts(Best(), kv, p, group, partials.data(), stats.data(),
                      split.data() + size_t(p) * o_dim + g * group * nv,
                      reinterpret_cast<std::byte*>(scratch.data()));
      }
    }
    EXPECT_TRUE(SameBits(tiled.data(), split.data(), tiled.size()));
  }
  // The decode-row kernels called directly at every level this CPU runs (AttendRows uses the best one), one
  // part at a time, merged with that level's weights.
  for (KernelLevel level : Levels()) {
    if (!attention::CanAttendDecodeRow(level, kv.head_dim, nv, kv.block_tokens, group)) continue;
    SCOPED_TRACE(attention::KernelLevelName(level));
    const int n = kv.head_dim;
    std::vector<float> direct(size_t(positions) * o_dim), scores(size_t(group) * (kAttentionPart + 8));
    for (int32_t p = 0; p < positions; ++p) {
      const int32_t parts = AttentionParts(p);
      std::vector<float> partials(size_t(group) * parts * nv), weights(parts);
      std::vector<attention::SoftmaxStats> stats(size_t(group) * parts);
      for (int32_t g = 0; g < kv.n_kv_head; ++g) {
        const size_t at = size_t(p) * q_dim + g * group * n;
        for (int32_t part = 0; part < parts; ++part) {
          const int32_t begin = part * kAttentionPart, end = std::min(p + 1, begin + kAttentionPart);
          attention::AttendDecodeRow(level, blocks.data(), kv.KeyOffset(layer, g), kv.ValueOffset(layer, g),
                                     kv.dtype, kv.block_tokens, begin, end, q.data() + at, size_t(n), group,
                                     n, nv, scale, scores.data(), size_t(kAttentionPart + 8),
                                     partials.data() + size_t(part) * nv, size_t(parts) * nv,
                                     stats.data() + part, size_t(parts));
        }
        for (int32_t h = 0; h < group; ++h) {
          attention::PartitionWeights(level, stats.data() + size_t(h) * parts, parts, weights.data());
          attention::AccumulateValues(level, weights.data(), 0, 1, partials.data() + size_t(h) * parts * nv,
                                      parts, nv, direct.data() + size_t(p) * o_dim + (g * group + h) * nv,
                                      size_t(nv));
        }
      }
    }
    EXPECT_TRUE(SameBits(tiled.data(), direct.data(), tiled.size()));
  }

  // Naive attention in double.
  for (int32_t p = 0; p < positions; ++p) {
    for (int32_t h = 0; h < n_head; ++h) {
      const int32_t g = h / group;
      std::vector<double> w(p + 1);
      double max_score = -1e300;
      for (int32_t t = 0; t <= p; ++t) {
        double dot = 0;
        for (int d = 0; d < kv.head_dim; ++d) {
          dot += double(q[size_t(p) * q_dim + h * kv.head_dim + d]) * keys[t][size_t(g) * kv.head_dim + d];
        }
        w[t] = dot * scale;
        max_score = std::max(max_score, w[t]);
      }
      double sum = 0;
      for (double& x : w) sum += (x = std::exp(x - max_score));
      for (int d = 0; d < nv; ++d) {
        double out = 0;
        for (int32_t t = 0; t <= p; ++t) out += w[t] / sum * values[t][size_t(g) * nv + d];
        EXPECT_NEAR(tiled[size_t(p) * o_dim + h * nv + d], out, 1e-4) << p << " " << h << " " << d;
      }
    }
  }
}

TEST_P(AttendRowsTest, TilingAndHeadGroupingNeverChangeARowAndMatchNaiveAttention) {
  CheckTilingAndNaiveAttention(GetParam(), 37, 8);
  CheckTilingAndNaiveAttention(GetParam(), 300, 8);   // chunks [0, 256), [256, 300)
  CheckTilingAndNaiveAttention(GetParam(), 400, 20);  // chunks [0, 320), [320, 400)
}

// Decode rows read the stored blocks directly (attention::AttendDecodeRow) where the shape allows: every
// query count it takes (1..8 per KV head: 7 and 8 need two passes over the values), head_dims with 1..4
// 16-dim chunks past the 64-dim ones, blocks of 16 and 32 positions, contexts ending mid-group.
TEST_P(AttendRowsTest, DecodeRowsFromStoredBlocksMatchTheTiles) {
  CheckTilingAndNaiveAttention(GetParam(), 45, 16, 64, 3);
  CheckTilingAndNaiveAttention(GetParam(), 300, 16, 64, 4);
  CheckTilingAndNaiveAttention(GetParam(), 77, 32, 48, 1);
  CheckTilingAndNaiveAttention(GetParam(), 61, 16, 80, 8);
  CheckTilingAndNaiveAttention(GetParam(), 40, 16, 32, 7);
  CheckTilingAndNaiveAttention(GetParam(), 33, 32, 16, 5);
  CheckTilingAndNaiveAttention(GetParam(), 50, 16, 128, 2);
  CheckTilingAndNaiveAttention(GetParam(), 530, 48, 16, 3);  // three parts; blocks across part ends
}

// Values narrower and wider than keys (deepseek2 stores keys of qk_nope + qk_rope dims and values of
// v_head_dim): the general path (head_dim 20) and the decode rows (multiples of 16), one part and three.
TEST_P(AttendRowsTest, ValuesOfAnotherWidthThanKeys) {
  CheckTilingAndNaiveAttention(GetParam(), 37, 8, 20, 3, 12);
  CheckTilingAndNaiveAttention(GetParam(), 300, 20, 24, 2, 40);
  CheckTilingAndNaiveAttention(GetParam(), 45, 16, 48, 3, 32);
  CheckTilingAndNaiveAttention(GetParam(), 530, 16, 32, 4, 80);
  CheckTilingAndNaiveAttention(GetParam(), 61, 32, 96, 8, 64);
  // The absorbed latent's widths (model/mla.h; DeepSeek's 64 rope dims + a latent of 512, values the latent)
  // and its one KV head; rows past 256 have two parts. (This case was 85 % of the test's work with 300
  // positions and two KV heads: minutes under qemu in the ARM check.)
  CheckTilingAndNaiveAttention(GetParam(), 264, 16, 576, 8, 512, 1);
}

TEST(AttendDecodeRow, RunsForItsShapesOnly) {
  using attention::CanAttendDecodeRow;
  const KernelLevel best = Levels().back();
  EXPECT_EQ(CanAttendDecodeRow(best, 64, 64, 16, 3), best != KernelLevel::kScalar);
  EXPECT_EQ(CanAttendDecodeRow(best, 48, 32, 16, 3), best != KernelLevel::kScalar);
  EXPECT_FALSE(CanAttendDecodeRow(KernelLevel::kScalar, 64, 64, 16, 3));
  EXPECT_FALSE(CanAttendDecodeRow(best, 20, 20, 16, 3));
  EXPECT_FALSE(CanAttendDecodeRow(best, 64, 24, 16, 3));
  EXPECT_FALSE(CanAttendDecodeRow(best, 64, 64, 8, 3));
  EXPECT_FALSE(CanAttendDecodeRow(best, 64, 64, 16, 9));
}

INSTANTIATE_TEST_SUITE_P(KvTypes, AttendRowsTest,
                         ::testing::Values(KvDtype::kF16, KvDtype::kF32, KvDtype::kQ8_0),
                         [](const ::testing::TestParamInfo<KvDtype>& info) {
                           return std::string(KvDtypeName(info.param));
                         });

}  // namespace
}  // namespace lockstep
