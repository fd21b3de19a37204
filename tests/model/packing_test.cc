// Load-time repacking: ModelWeights packs every matrix whose type has packed int8 kernels (and only those),
// owns the packed copies, and the result does not depend on how many threads packed it.
#include <gtest/gtest.h>

#include "model/test_models.h"
#include "model/transformer.h"
#include "testing/levels.h"

namespace lockstep::testing {
namespace {

std::vector<const WeightMatrix*> AllMatrices(const ModelWeights& w) {
  std::vector<const WeightMatrix*> all = {&w.output};
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      all.push_back(m);
  }
  return all;
}

class PackingTest : public ::testing::TestWithParam<TensorType> {};

// K-quant rows need 256 elements (on "tiny" they would fall back to q8_0).
std::string ModelFor(TensorType type) {
  const bool k_quant = type == TensorType::kQ4_K || type == TensorType::kQ5_K || type == TensorType::kQ6_K ||
                       type == TensorType::kQ3_K;
  return TinyModelPath(k_quant ? "tiny-256" : "tiny", type);
}

TEST_P(PackingTest, PacksExactlyThePackableMatrices) {
  LoadedModel m = LoadModelOrDie(ModelFor(GetParam()));
  ASSERT_NE(m.model, nullptr);
  const auto* transformer = dynamic_cast<const Transformer*>(m.model.get());
  ASSERT_NE(transformer, nullptr);
  const ModelWeights& w = transformer->weights();
  const std::vector<const WeightMatrix*> all = AllMatrices(w);
  size_t packed = 0;
  for (const WeightMatrix* mat : all) {
    EXPECT_EQ(mat->packed != nullptr, CanPackWeights(mat->type)) << TensorTypeName(mat->type);
    packed += mat->packed != nullptr;
  }
  EXPECT_EQ(w.packed.size(), packed);
  if (CanPackWeights(GetParam())) {
    EXPECT_EQ(packed, all.size());
  }
}

TEST_P(PackingTest, LoadWithoutPackingPacksNothing) {
  LoadedModel m = LoadModelOrDie(ModelFor(GetParam()));
  ASSERT_NE(m.model, nullptr);
  auto unpacked = Model::Load(m.file, {.pack_weights = false});
  ASSERT_TRUE(unpacked.ok()) << unpacked.status().ToString();
  const auto* transformer = dynamic_cast<const Transformer*>(unpacked->get());
  ASSERT_NE(transformer, nullptr);
  EXPECT_TRUE(transformer->weights().packed.empty());
  for (const WeightMatrix* mat : AllMatrices(transformer->weights())) EXPECT_EQ(mat->packed, nullptr);
}

TEST_P(PackingTest, PackThreadCountDoesNotChangeLogits) {
  const std::string path = ModelFor(GetParam());
  LoadedModel m = LoadModelOrDie(path);
  ASSERT_NE(m.model, nullptr);
  auto config = ModelConfig::FromGguf(*m.file);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto one = ModelWeights::Bind(*m.file, *config, /*pack_threads=*/1);
  auto three = ModelWeights::Bind(*m.file, *config, /*pack_threads=*/3);
  ASSERT_TRUE(one.ok() && three.ok());
  Transformer a(m.file, *config, std::move(one).value(), BestKernels());
  Transformer b(m.file, *config, std::move(three).value(), BestKernels());
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = {1, 5, 9, 2, 7, 3};
  EXPECT_EQ(RunSequence(a, tokens, 3, KvDtype::kF16, pool), RunSequence(b, tokens, 3, KvDtype::kF16, pool));
}

INSTANTIATE_TEST_SUITE_P(Types, PackingTest,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kQ8_0,
                                           TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ5_1,
                                           TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                                           TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kQ3_K,
                                           TensorType::kMXFP4),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                           return std::string(TensorTypeName(info.param));
                         });

}  // namespace
}  // namespace lockstep::testing
