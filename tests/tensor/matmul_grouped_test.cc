// MatMulGrouped against separate MatMul calls and the scalar reference (MatMulReference), bit for bit, at
// every distinct CPU level this machine runs: every packable type packed and not, F32 and F16, groups of 0,
// 1, 3 and 17 rows with one or two matrices each (a mixture-of-experts layer's down, and gate/up), and a call
// that mixes types.
#include "tensor/matmul_grouped.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/matmul.h"
#include "tensor/matmul_internal.h"
#include "tensor/thread_pool.h"
#include "testing/levels.h"
#include "testing/random_weights.h"

namespace lockstep {
namespace {

// An expert's matrix: random weights of `type`, packed if asked and packable.
struct ExpertMatrix {
  std::vector<std::byte> data;
  PackedWeightsPtr packed;
  WeightMatrix matrix;
};

ExpertMatrix MakeExpertMatrix(TensorType type, int64_t in, int64_t out, bool pack, std::mt19937& rng) {
  ExpertMatrix m;
  m.data = testing::RandomQuantizedWeights(type, in, out, rng);
  m.matrix = WeightMatrix{type, in, out, m.data.data()};
  if (pack && CanPackWeights(type)) {
    m.packed = PackWeights(m.matrix);
    m.matrix.packed = m.packed.get();
  }
  return m;
}

// Rows of activations with block magnitudes that vary, one element past an aligned address.
std::vector<float> GroupActivations(int64_t rows, int64_t in, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1 + size_t(rows * in));
  for (size_t i = 1; i < x.size(); ++i) x[i] = normal(rng) * (1.0f + float((i / 32) % 7));
  return x;
}

void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
        << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

// One grouped call over groups of `group_rows` rows, `per_group` matrices each (matrix i of group g:
// types[(g + i) % types.size()], out outs[i]), checked against a MatMul per (group, matrix) at every distinct
// level, with 1, 2 and 3 threads.
void ExpectGroupedMatchesSeparate(const std::vector<TensorType>& types, bool pack, int64_t in,
                                  const std::vector<int64_t>& group_rows, const std::vector<int64_t>& outs,
                                  const std::string& what) {
  std::mt19937 rng(7);
  const size_t n_groups = group_rows.size(), per_group = outs.size();
  std::vector<ExpertMatrix> experts;
  std::vector<std::vector<float>> xs;
  for (size_t g = 0; g < n_groups; ++g) {
    for (size_t i = 0; i < per_group; ++i) {
      experts.push_back(MakeExpertMatrix(types[(g + i) % types.size()], in, outs[i], pack, rng));
    }
    xs.push_back(GroupActivations(group_rows[g], in, rng));
  }
  std::vector<WeightMatrix> ws;
  for (const ExpertMatrix& e : experts) ws.push_back(e.matrix);
  // The scalar reference too: MatMul itself runs on MatMulGrouped.
  std::vector<std::vector<float>> references(ws.size());
  for (size_t j = 0; j < ws.size(); ++j) {
    const size_t g = j / per_group;
    references[j].resize(size_t(group_rows[g] * ws[j].out));
    MatMulReference(ws[j], xs[g].data() + 1, group_rows[g], references[j].data());
  }
  for (const Kernels& k : testing::DistinctMatMulKernels()) {
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<std::vector<float>> ys(ws.size());
      std::vector<float*> y_ptrs(ws.size());
      std::vector<MatMulGroup> groups;
      for (size_t g = 0; g < n_groups; ++g) {
        for (size_t i = 0; i < per_group; ++i) {
          const size_t j = g * per_group + i;
          ys[j].assign(size_t(group_rows[g] * ws[j].out), -1.0f);
          y_ptrs[j] = ys[j].data();
        }
        groups.push_back(MatMulGroup{std::span<const WeightMatrix>(ws.data() + g * per_group, per_group),
                                     xs[g].data() + 1, group_rows[g],
                                     std::span<float* const>(y_ptrs.data() + g * per_group, per_group)});
      }
      MatMulGrouped(k.matmul, groups, pool);
      for (size_t g = 0; g < n_groups; ++g) {
        for (size_t i = 0; i < per_group; ++i) {
          const size_t j = g * per_group + i;
          std::vector<float> expected(size_t(group_rows[g] * ws[j].out), -1.0f);
          MatMul(k.matmul, ws[j], xs[g].data() + 1, group_rows[g], expected.data(), pool);
          const std::string where =
              what + " level=" + testing::LevelName(k) + " threads=" + std::to_string(threads) + " group " +
              std::to_string(g) + " (" + std::to_string(group_rows[g]) + " rows) matrix " + std::to_string(i);
          ExpectSameBits(ys[j], expected, where);
          ExpectSameBits(ys[j], references[j], where + " vs the reference");
        }
      }
    }
  }
}

const std::vector<int64_t> kGroupRows = {3, 0, 17, 1, 0, 3};

TEST(MatMulGrouped, EveryTypeMatchesSeparateMatMulsAtEveryLevel) {
  for (TensorType type :
       {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kQ3_K,
        TensorType::kQ2_K, TensorType::kMXFP4, TensorType::kF32, TensorType::kF16}) {
    const bool packable = CanPackWeights(type);
    const int64_t in = GetTensorTypeTraits(type).block_elements == 256 ? 256 : 96;
    for (bool pack : {false, true}) {
      if (pack && !packable) continue;
      const std::string what = std::string(TensorTypeName(type)) + (pack ? " packed" : "");
      ExpectGroupedMatchesSeparate({type}, pack, in, kGroupRows, {40, 24}, what + " gate/up");  // 2 per group
      ExpectGroupedMatchesSeparate({type}, pack, in, kGroupRows, {70}, what + " down");
    }
  }
}

TEST(MatMulGrouped, MixedTypesMatchSeparateMatMuls) {
  ExpectGroupedMatchesSeparate({TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ8_0, TensorType::kF16},
                               true, 256, kGroupRows, {33, 16}, "mixed packed");
  ExpectGroupedMatchesSeparate({TensorType::kQ5_K, TensorType::kQ4_K}, true, 256, kGroupRows, {16, 33},
                               "mixed packed q5_K");
  ExpectGroupedMatchesSeparate({TensorType::kF32, TensorType::kQ4_0}, false, 64, {17, 1}, {5}, "mixed");
  ExpectGroupedMatchesSeparate({TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ8_0}, true, 96,
                               kGroupRows, {33, 16}, "mixed packed q5_0 / q5_1");
}

TEST(MatMulGrouped, NoRowsIsANoOp) {
  std::mt19937 rng(3);
  const ExpertMatrix e = MakeExpertMatrix(TensorType::kQ8_0, 64, 3, true, rng);
  ThreadPool pool(2);
  float y = 7.0f;
  float* const ys[] = {&y};
  const MatMulGroup groups[] = {{std::span<const WeightMatrix>(&e.matrix, 1), nullptr, 0, ys}};
  MatMulGrouped(testing::BestKernels().matmul, groups, pool);
  MatMulGrouped(testing::BestKernels().matmul, {}, pool);
  EXPECT_EQ(y, 7.0f);
}

}  // namespace
}  // namespace lockstep
