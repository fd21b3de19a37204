// Sliding-window, soft-capped and sink attention (model/attention.h AttentionRule): AttendRows against a
// plain double-precision computation, the same bits however rows are tiled and heads grouped (and, for
// decode rows, split into parts and merged), and no read of a block below AttentionStart (such blocks may
// be released: they are null here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "model/attention.h"
#include "model/local_kv.h"
#include "tensor/float16.h"
#include "testing/levels.h"

namespace lockstep::testing {
namespace {

struct Shape {
  int32_t head_dim, block_tokens;
  KvDtype dtype;
  AttentionRule rule;
  bool sinks = false;  // gpt-oss's sinks, one per query head (kSinks)
};

// Sinks of the 4 query heads: below, near and far above the scores (the last takes most of the weight).
constexpr float kSinks[] = {-3.0f, 0.5f, 2.0f, 6.0f};

// AttendRows with the best level's kernels and scratch of the size it asks for.
void Attend(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
            int32_t first, int32_t rows, const float* q, size_t q_stride, int32_t heads, float scale,
            float* out, size_t out_stride, const AttentionRule& rule) {
  const AttentionKernels& k = BestKernels().attention;
  std::vector<std::byte> scratch(AttendRowsScratchBytes(k, kv, first, rows, heads, rule) + 64);
  std::byte* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  AttendRows(k, kv, blocks, layer, kv_head, first, rows, q, q_stride, heads, scale, out, out_stride, aligned,
             rule);
}

// x[0..n) as q8_0 KV holds it: each scale group's quants times its scale (tensor/kv_storage.h, whose rule
// KvStorage.* tests on its own).
void RoundAsQ8(float* x, int n) {
  const int group = KvScaleGroup(n);
  std::vector<int8_t> q(static_cast<size_t>(group));
  for (int g = 0; g < n; g += group) {
    const float d = F16ToF32(QuantizeKvGroup(x + g, group, q.data(), 1));
    for (int i = 0; i < group; ++i) x[g + i] = float(q[size_t(i)]) * d;
  }
}

class WindowAttentionTest : public ::testing::TestWithParam<Shape> {};

TEST_P(WindowAttentionTest, MatchesPlainSoftmaxAndEveryTiling) {
  const Shape& p = GetParam();
  constexpr int32_t kPositions = 600;  // past two attention parts of 256
  constexpr int32_t kHeads = 4;        // query heads sharing the KV head
  KvLayout kv;
  kv.n_layer = 2;
  kv.n_kv_head = 2;
  kv.head_dim = p.head_dim;
  kv.block_tokens = p.block_tokens;
  kv.dtype = p.dtype;
  LocalKv storage(kv, kPositions);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int32_t n = p.head_dim;
  std::vector<std::vector<float>> keys(kPositions), values(kPositions);
  for (int32_t t = 0; t < kPositions; ++t) {
    std::vector<float> k(size_t(kv.n_kv_head) * n), v(size_t(kv.n_kv_head) * n);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    for (int32_t layer = 0; layer < kv.n_layer; ++layer) {
      WriteKv(kv, storage.blocks(), layer, t, k.data(), v.data());
    }
    // What attention reads back: KV head 1 of layer 1, rounded as stored.
    keys[t].assign(k.begin() + n, k.end());
    values[t].assign(v.begin() + n, v.end());
    if (p.dtype == KvDtype::kF16) {
      for (float* vec : {keys[t].data(), values[t].data()}) {
        for (int32_t d = 0; d < n; ++d) vec[d] = F16ToF32(F32ToF16(vec[d]));
      }
    } else if (p.dtype == KvDtype::kQ8_0) {
      for (float* vec : {keys[t].data(), values[t].data()}) RoundAsQ8(vec, n);
    }
  }
  std::vector<float> q(size_t(kPositions) * kHeads * n);
  for (float& x : q) x = normal(rng) * 0.5f;
  const float scale = 1.0f / std::sqrt(float(n));
  const size_t q_stride = size_t(kHeads) * n;
  AttentionRule rule = p.rule;  // with the sinks of head 0 on (a call's first head's)
  if (p.sinks) rule.sinks = kSinks;
  auto head_rule = [&](int32_t h) {
    AttentionRule r = rule;
    if (p.sinks) r.sinks = kSinks + h;
    return r;
  };

  // Reference: every row alone, in double.
  double max_err = 0;
  std::vector<float> solo(q.size());
  for (int32_t t = 0; t < kPositions; ++t) {
    Attend(kv, storage.blocks(), 1, 1, t, 1, q.data() + t * q_stride, q_stride, kHeads, scale,
           solo.data() + t * q_stride, q_stride, rule);
    const int32_t lo = p.rule.window > 0 ? std::max(0, t - p.rule.window + 1) : 0;
    for (int32_t h = 0; h < kHeads; ++h) {
      const float* qh = q.data() + t * q_stride + h * n;
      std::vector<double> w;
      double max = -1e300, sum = 0;
      for (int32_t s = lo; s <= t; ++s) {
        double dot = 0;
        for (int32_t d = 0; d < n; ++d) dot += double(qh[d]) * keys[s][d];
        dot *= scale;
        if (p.rule.softcap > 0) dot = p.rule.softcap * std::tanh(dot / p.rule.softcap);
        w.push_back(dot);
        max = std::max(max, dot);
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      if (p.sinks) sum += std::exp(double(kSinks[h]) - max);  // a score without a value
      for (int32_t d = 0; d < n; ++d) {
        double o = 0;
        for (int32_t s = lo; s <= t; ++s) o += w[s - lo] / sum * values[s][d];
        max_err = std::max(max_err, std::abs(o - solo[t * q_stride + h * n + d]));
      }
    }
  }
  EXPECT_LT(max_err, 2e-5);

  // Tiles of rows and single heads give the same bits, with the blocks below the tile's AttentionStart
  // gone.
  for (int32_t tile : {5, 13, 16, 40}) {
    std::vector<float> tiled(q.size());
    for (int32_t first = 0; first < kPositions; first += tile) {
      const int32_t rows = std::min(tile, kPositions - first);
      std::vector<std::byte*> blocks = storage.blocks();
      const int32_t start = AttentionStart(kv, first, p.rule.window);
      for (int32_t b = 0; b < start / kv.block_tokens; ++b) blocks[b] = nullptr;
      if (tile == 13) {  // one head per call
        for (int32_t h = 0; h < kHeads; ++h) {
          Attend(kv, blocks, 1, 1, first, rows, q.data() + first * q_stride + h * n, q_stride, 1, scale,
                 tiled.data() + first * q_stride + h * n, q_stride, head_rule(h));
        }
      } else {
        Attend(kv, blocks, 1, 1, first, rows, q.data() + first * q_stride, q_stride, kHeads, scale,
               tiled.data() + first * q_stride, q_stride, rule);
      }
    }
    EXPECT_EQ(std::memcmp(tiled.data(), solo.data(), q.size() * sizeof(float)), 0) << "tiles of " << tile;
  }

  // Decode rows split into their parts (flash-decoding) and merged: the same bits.
  const AttentionKernels& k = BestKernels().attention;
  if (!CanSplitRow(k, kv, kHeads, rule)) return;
  for (int32_t t : {0, 255, 256, 300, kPositions - 1}) {
    const int32_t parts = AttentionParts(t);
    std::vector<float> partials(size_t(kHeads) * parts * n), merged(size_t(kHeads) * n);
    std::vector<attention::SoftmaxStats> stats(size_t(kHeads) * parts);
    std::vector<float> scratch(AttendRowPartScratchBytes(kHeads) / sizeof(float) + 16);
    for (int32_t part = 0; part < parts; ++part) {
      AttendRowPart(k, kv, storage.blocks(), 1, 1, t, part, q.data() + t * q_stride, kHeads, scale,
                    partials.data(), stats.data(), reinterpret_cast<std::byte*>(scratch.data()));
    }
    std::vector<float> merge_scratch(MergeRowPartsScratchBytes(t, kHeads) / sizeof(float) + 16);
    MergeRowParts(k, kv, t, kHeads, partials.data(), stats.data(), merged.data(),
                  reinterpret_cast<std::byte*>(merge_scratch.data()), rule.sinks);
    EXPECT_EQ(std::memcmp(merged.data(), solo.data() + t * q_stride, merged.size() * sizeof(float)), 0)
        << "split row " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, WindowAttentionTest,
    ::testing::Values(Shape{16, 16, KvDtype::kF32, {40, 0}}, Shape{16, 16, KvDtype::kF16, {40, 0}},
                      Shape{32, 32, KvDtype::kF32, {40, 0}}, Shape{16, 16, KvDtype::kF32, {300, 0}},
                      Shape{64, 16, KvDtype::kF16, {300, 0}}, Shape{16, 16, KvDtype::kF32, {0, 0.5f}},
                      Shape{16, 32, KvDtype::kF16, {40, 2.0f}}, Shape{16, 8, KvDtype::kF32, {37, 0}},
                      Shape{24, 16, KvDtype::kF32, {256, 1.0f}}, Shape{16, 16, KvDtype::kQ8_0, {40, 0}},
                      Shape{64, 16, KvDtype::kQ8_0, {300, 1.0f}},
                      // gpt-oss's sinks: alone (decode rows from the stored blocks, split or whole), with
                      // its window of 40 (here) and with a window and soft-cap.
                      Shape{16, 16, KvDtype::kF32, {0, 0}, true}, Shape{64, 16, KvDtype::kF16, {0, 0}, true},
                      Shape{16, 16, KvDtype::kF16, {40, 0}, true},
                      Shape{24, 16, KvDtype::kF32, {256, 1.0f}, true}));

TEST(AttentionStart, RoundsTheWindowStartDownToBlocksAndKeyGroups) {
  KvLayout kv;
  kv.block_tokens = 16;
  EXPECT_EQ(AttentionStart(kv, 100, 0), 0);
  EXPECT_EQ(AttentionStart(kv, 39, 40), 0);
  EXPECT_EQ(AttentionStart(kv, 100, 40), 48);  // Lo = 61
  EXPECT_EQ(AttentionStart(kv, 111, 40), 64);  // Lo = 72
  kv.block_tokens = 32;
  EXPECT_EQ(AttentionStart(kv, 100, 40), 32);
  kv.block_tokens = 8;
  EXPECT_EQ(AttentionStart(kv, 100, 40), 48);  // key groups of 16
  EXPECT_EQ(AttentionStart(kv, 111, 40), 64);
}

}  // namespace
}  // namespace lockstep::testing
