// A bidirectional encoder (tiny-bert) in the engine: each embedding request is computed whole in one forward
// pass, so its vector (CLS, mean, last) equals the model's rows for the prompt alone, whatever the budget's
// other occupants; no prefix cache is read or written; generation and over-long inputs are refused with a
// clear message.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_testing.h"
#include "model/local_kv.h"
#include "tensor/thread_pool.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

// Every row's final state for `prompt` alone, straight from the model.
std::vector<std::vector<float>> BertRows(Model& model, const std::vector<int32_t>& prompt) {
  ThreadPool pool(1);
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF32);
  LocalKv kv(layout, int64_t(prompt.size()));
  Batch batch;
  batch.sequences.push_back(kv.view());
  for (size_t p = 0; p < prompt.size(); ++p) batch.rows.push_back({prompt[p], int32_t(p), 0, false, true});
  const size_t d = size_t(model.config().n_embd);
  std::vector<float> out(prompt.size() * d);
  EXPECT_TRUE(model.Forward(batch, layout, ForwardOutputs{{}, out}, pool).ok());
  std::vector<std::vector<float>> rows;
  for (size_t p = 0; p < prompt.size(); ++p)
    rows.emplace_back(out.begin() + p * d, out.begin() + (p + 1) * d);
  return rows;
}

class EngineBertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LOCKSTEP_REQUIRE_TESTDATA();
    static const testing::TestModel model = testing::MakeRandomTestModel("tiny-bert", "f32");
    m_ = model;
    ASSERT_NE(m_.model, nullptr);
  }
  testing::TestModel m_;
};

TEST_F(EngineBertTest, PooledVectorsAreThePromptsOwnRowsWhateverRunsBeside) {
  const std::vector<std::vector<int32_t>> prompts = {
      {101, 7592, 2088, 102}, {101, 2023, 2003, 1037, 3231, 1012, 102}, {101, 7592, 2088, 999, 102}};
  // The model's own rows first: Forward is for one thread at a time, and the engine's thread will run it.
  std::vector<std::vector<std::vector<float>>> rows_of;
  for (const auto& p : prompts) rows_of.push_back(BertRows(*m_.model, p));
  // A budget of 12 rows: the prompts cannot all share a step, and none may be split.
  auto engine = testing::MakeTestEngine(m_, 12, /*prefix_caching=*/true);
  ASSERT_NE(engine, nullptr);
  for (Pooling pooling : {Pooling::kCls, Pooling::kMean, Pooling::kLast}) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (int repeat = 0; repeat < 2; ++repeat) {
      for (const auto& p : prompts) {
        auto h = engine->Submit(testing::EmbedRequest(p, pooling));
        ASSERT_TRUE(h.ok()) << h.status().ToString();
        handles.push_back(*h);
      }
    }
    for (size_t i = 0; i < handles.size(); ++i) {
      const auto& rows = rows_of[i % prompts.size()];
      std::vector<float> want(rows[0].size(), 0.0f);
      if (pooling == Pooling::kCls) want = rows.front();
      if (pooling == Pooling::kLast) want = rows.back();
      if (pooling == Pooling::kMean) {
        std::vector<double> sum(want.size(), 0.0);
        for (const auto& r : rows) {
          for (size_t k = 0; k < r.size(); ++k) sum[k] += r[k];
        }
        for (size_t k = 0; k < want.size(); ++k) want[k] = float(sum[k] / double(rows.size()));
      }
      const std::vector<TokenEvent> events = testing::DrainEvents(*handles[i]);
      ASSERT_EQ(events.size(), 1u);
      EXPECT_EQ(events[0].embedding, want) << PoolingName(pooling) << " request " << i;
    }
  }
  EXPECT_FALSE(engine->Stats().prefix_caching);
  EXPECT_EQ(engine->Stats().prefix_cache_hits_total, 0);
  EXPECT_EQ(engine->Stats().kv_blocks_cached, 0);
  testing::ExpectAllBlocksFree(*engine);
}

// A BERT cross-encoder's rank request scores the [CLS] row (llama.cpp's rank pooling for bert), not the last.
TEST(EngineBertRerankTest, RankAppliesTheHeadToTheClsRow) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const testing::TestModel m = testing::MakeRandomTestModel("tiny-bert-reranker", "f32");
  ASSERT_NE(m.model, nullptr);
  const Classifier* head = m.model->classifier();
  ASSERT_NE(head, nullptr);
  const std::vector<int32_t> prompt = {101, 7592, 102, 2088, 999, 102};
  const auto rows = BertRows(*m.model, prompt);
  float want = 0, last = 0;
  head->Apply(rows.front(), std::span<float>(&want, 1));
  head->Apply(rows.back(), std::span<float>(&last, 1));
  ASSERT_NE(want, last);
  auto engine = testing::MakeTestEngine(m, 16, true);
  ASSERT_NE(engine, nullptr);
  auto h = engine->Submit(testing::EmbedRequest(prompt, Pooling::kRank));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const std::vector<TokenEvent> events = testing::DrainEvents(**h);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].embedding, std::vector<float>({want}));
}

TEST_F(EngineBertTest, RefusesGenerationAndInputsLongerThanOnePass) {
  auto engine = testing::MakeTestEngine(m_, 16, true);
  ASSERT_NE(engine, nullptr);
  Request generate;
  generate.prompt_ids = {101, 7592, 102};
  generate.max_tokens = 4;
  auto g = engine->Submit(generate);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("embeddings only"), std::string::npos) << g.status().ToString();
  auto long_one = engine->Submit(testing::EmbedRequest(std::vector<int32_t>(17, 7592), Pooling::kCls));
  ASSERT_FALSE(long_one.ok());
  EXPECT_EQ(long_one.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(long_one.status().message().find("at most 16"), std::string::npos)
      << long_one.status().ToString();
  auto fits = engine->Submit(testing::EmbedRequest(std::vector<int32_t>(16, 7592), Pooling::kCls));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(testing::DrainEvents(**fits).size(), 1u);
}

}  // namespace
}  // namespace lockstep
