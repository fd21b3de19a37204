// stories260K greedy goldens (../shared/testdata/models): the fast path must reproduce every id exactly.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "model/test_models.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

struct GoldenCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
};

std::vector<GoldenCase> LoadCases() {
  std::ifstream in(TestDataPath("models/stories260K.golden.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GoldenCase> cases;
  for (const auto& c : j.at("cases")) {
    cases.push_back({c.at("prompt").get<std::vector<int32_t>>(), c.at("greedy").get<std::vector<int32_t>>()});
  }
  return cases;
}

// Greedy continuation as the golden reference defines it: forward passes at positions 0..128, the prompt as
// one prefill batch, stopping before a predicted BOS (1).
std::vector<int32_t> Greedy(Model& model, const std::vector<int32_t>& prompt, KvDtype dtype,
                            ThreadPool& pool) {
  const int32_t kLastPosition = 128;
  const KvLayout layout = model.MakeKvLayout(dtype, 16);
  LocalKv kv(layout, kLastPosition + 1);
  const int64_t vocab = model.config().n_vocab;
  std::vector<float> logits(vocab);
  std::vector<int32_t> out;
  std::vector<int32_t> feed = prompt;
  int32_t position = 0;
  while (position + int32_t(feed.size()) - 1 <= kLastPosition) {
    Batch batch;
    batch.sequences.push_back(kv.view());
    for (size_t i = 0; i < feed.size(); ++i) {
      batch.rows.push_back({feed[i], position + int32_t(i), 0, i + 1 == feed.size()});
    }
    const Status status = model.Forward(batch, layout, logits, pool);
    EXPECT_TRUE(status.ok()) << status.ToString();
    position += int32_t(feed.size());
    const int32_t best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (best == 1) break;
    out.push_back(best);
    feed = {best};
  }
  return out;
}

class GoldenTest : public ::testing::TestWithParam<int> {};

TEST_P(GoldenTest, Stories260KGreedyMatches) {
  LOCKSTEP_REQUIRE_TESTDATA();
  LoadedModel m = LoadModelOrDie(TestDataPath("models/stories260K.gguf"));
  ThreadPool pool(GetParam());
  int index = 0;
  for (const GoldenCase& c : LoadCases()) {
    EXPECT_EQ(Greedy(*m.model, c.prompt, KvDtype::kF32, pool), c.greedy) << "case " << index;
    ++index;
  }
  EXPECT_EQ(index, 4);
}

INSTANTIATE_TEST_SUITE_P(Threads, GoldenTest, ::testing::Values(1, 2));

TEST(GoldenF16Kv, FirstTokensMatch) {
  // f16 KV is not bit-exact with the f32 reference, but the first tokens (small margin-free prefix) agree.
  LOCKSTEP_REQUIRE_TESTDATA();
  LoadedModel m = LoadModelOrDie(TestDataPath("models/stories260K.gguf"));
  ThreadPool pool(1);
  const GoldenCase c = LoadCases()[0];
  const std::vector<int32_t> got = Greedy(*m.model, c.prompt, KvDtype::kF16, pool);
  ASSERT_GE(got.size(), 10u);
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + 10),
            std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + 10));
}

}  // namespace
}  // namespace lockstep::testing
