// Embedding requests (Request::embedding) on a real forward pass: the pooled vector is the naive reference's
// final normed hidden states pooled the same way (mean, first, last); it is bit-identical whatever the
// chunking, the neighbours, a warm prefix cache (which last-token pooling reads) or a tight cache; a request
// gets one event and generates nothing; bad combinations are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "engine_testing.h"
#include "model/reference_forward.h"

namespace lockstep {
namespace {

using testing::EmbedRequest;
using testing::TestModel;

std::vector<float> Embed(Engine& engine, const Request& request) {
  auto handle = engine.Submit(request);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  if (!handle.ok()) return {};
  std::vector<TokenEvent> events = testing::DrainEvents(**handle);
  EXPECT_EQ(events.size(), 1u);
  return events.empty() ? std::vector<float>{} : events.back().embedding;
}

class EmbeddingTest : public testing::RandomTinyModelTest {};

TEST_F(EmbeddingTest, PooledVectorsMatchTheReference) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 37, 1);
  std::vector<std::vector<double>> hidden;
  ASSERT_TRUE(testing::ReferenceForward(*model_.file, prompt, &hidden).ok());
  const size_t d = size_t(model_.model->config().n_embd);
  ASSERT_EQ(hidden.size(), prompt.size());
  auto engine = testing::MakeTestEngine(model_, 16, true, 0, KvDtype::kF32);  // chunks of 16 rows
  ASSERT_NE(engine, nullptr);
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    std::vector<double> want(d, 0.0);
    for (size_t p = 0; p < prompt.size(); ++p) {
      const bool take = pooling == Pooling::kMean || (pooling == Pooling::kCls && p == 0) ||
                        (pooling == Pooling::kLast && p + 1 == prompt.size());
      if (!take) continue;
      for (size_t k = 0; k < d; ++k) want[k] += hidden[p][k];
    }
    if (pooling == Pooling::kMean) {
      for (double& v : want) v /= double(prompt.size());
    }
    const std::vector<float> got = Embed(*engine, EmbedRequest(prompt, pooling));
    ASSERT_EQ(got.size(), d) << PoolingName(pooling);
    double max_ref = 0, max_err = 0;
    for (size_t k = 0; k < d; ++k) {
      max_ref = std::max(max_ref, std::abs(want[k]));
      max_err = std::max(max_err, std::abs(double(got[k]) - want[k]));
    }
    EXPECT_GT(max_ref, 0.1) << PoolingName(pooling);  // normed hidden states: values of order 1
    EXPECT_LE(max_err, 1e-5 * max_ref) << PoolingName(pooling);
  }
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EmbeddingTest, ChunkingNeighboursAndAWarmCacheChangeNothing) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 70, 2);
  auto alone_engine = testing::MakeTestEngine(model_, 512, /*prefix_caching=*/false);
  ASSERT_NE(alone_engine, nullptr);
  const std::vector<float> mean = Embed(*alone_engine, EmbedRequest(prompt, Pooling::kMean));
  const std::vector<float> last = Embed(*alone_engine, EmbedRequest(prompt, Pooling::kLast));
  ASSERT_FALSE(mean.empty());

  // Chunks of 16 rows beside generating neighbours, after a generation left the prompt in the prefix cache.
  auto engine = testing::MakeTestEngine(model_, 16);
  ASSERT_NE(engine, nullptr);
  Request warm;
  warm.prompt_ids = prompt;
  warm.max_tokens = 2;
  testing::Collect(**engine->Submit(warm));
  std::vector<std::shared_ptr<RequestHandle>> neighbours;
  for (int i = 0; i < 3; ++i) {
    Request neighbour;
    neighbour.prompt_ids = testing::RandomTokenIds(n_vocab_, 20 + 5 * i, 10 + uint64_t(i));
    neighbour.max_tokens = 40;
    neighbour.ignore_eos = true;
    neighbours.push_back(*engine->Submit(neighbour));
  }
  auto group =
      engine->SubmitGroup({EmbedRequest(prompt, Pooling::kMean), EmbedRequest(prompt, Pooling::kLast)});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const std::vector<TokenEvent> got_mean = testing::DrainEvents(*(*group)[0]);
  const std::vector<TokenEvent> got_last = testing::DrainEvents(*(*group)[1]);
  for (auto& h : neighbours) testing::Collect(*h);
  ASSERT_EQ(got_mean.size(), 1u);
  ASSERT_EQ(got_last.size(), 1u);
  EXPECT_EQ(got_mean[0].embedding, mean);
  EXPECT_EQ(got_last[0].embedding, last);
  EXPECT_EQ(got_mean[0].timing.cached_tokens, 0);   // computed, not read from the cache
  EXPECT_EQ(got_last[0].timing.cached_tokens, 64);  // the last row alone is needed: 4 cached blocks read
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EmbeddingTest, APreemptedRequestPoolsEachPositionOnce) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 100, 4);
  auto alone_engine = testing::MakeTestEngine(model_, 512, /*prefix_caching=*/false);
  ASSERT_NE(alone_engine, nullptr);
  const std::vector<float> want = Embed(*alone_engine, EmbedRequest(prompt, Pooling::kMean));
  // A cache of 10 blocks of 16 tokens and 4 rows a step: a generating request (2 blocks at first) is
  // admitted, then the embedding request (7 blocks) prefills 3 rows a step beside its decodes, which need a
  // 4th block before the prompt is done: the newer request, the embedding's, is preempted and later
  // recomputed (without the rows it had pooled).
  // The engine may run the generating request far ahead before the embedding request arrives (a busy
  // machine deschedules this thread), and then nothing is preempted: the scenario is tried again, and every
  // try's vector must be right.
  bool preempted = false;
  for (int attempt = 0; attempt < 20 && !preempted; ++attempt) {
    auto engine = testing::MakeTestEngine(model_, 4, /*prefix_caching=*/true, /*kv_tokens=*/160);
    ASSERT_NE(engine, nullptr);
    Request generating;
    generating.prompt_ids = testing::RandomTokenIds(n_vocab_, 20, 5);
    generating.max_tokens = 100;
    generating.ignore_eos = true;
    auto first = engine->Submit(generating);
    ASSERT_TRUE(first.ok());
    auto handle = engine->Submit(EmbedRequest(prompt, Pooling::kMean));
    ASSERT_TRUE(handle.ok());
    const std::vector<TokenEvent> got = testing::DrainEvents(**handle);
    testing::Collect(**first);
    ASSERT_EQ(got.size(), 1u);
    preempted = got[0].timing.preemptions > 0;
    EXPECT_EQ(got[0].embedding, want) << "attempt " << attempt;
    testing::ExpectAllBlocksFree(*engine);
  }
  EXPECT_TRUE(preempted) << "the embedding request was never preempted in 20 tries";
}

TEST_F(EmbeddingTest, OneEventNothingGenerated) {
  auto engine = testing::MakeTestEngine(model_, 64);
  ASSERT_NE(engine, nullptr);
  auto handle = engine->Submit(EmbedRequest(testing::RandomTokenIds(n_vocab_, 9, 3), Pooling::kLast));
  ASSERT_TRUE(handle.ok());
  const std::vector<TokenEvent> events = testing::DrainEvents(**handle);
  ASSERT_EQ(events.size(), 1u);
  const TokenEvent& e = events[0];
  EXPECT_EQ(e.token, kNoToken);
  EXPECT_EQ(e.finish_reason, FinishReason::kLength);
  EXPECT_EQ(e.embedding.size(), size_t(model_.model->config().n_embd));
  EXPECT_EQ(e.timing.prompt_tokens, 9);
  EXPECT_EQ(e.timing.generated_tokens, 0);
  EXPECT_EQ(engine->Stats().generation_tokens_total, 0);
  // A one-token prompt pools its only position.
  const std::vector<float> one = Embed(*engine, EmbedRequest({5}, Pooling::kMean));
  EXPECT_EQ(one, Embed(*engine, EmbedRequest({5}, Pooling::kLast)));
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EmbeddingTest, BadCombinationsAreRefused) {
  auto engine = testing::MakeTestEngine(model_, 64);
  ASSERT_NE(engine, nullptr);
  Request generating = EmbedRequest({1, 2, 3}, Pooling::kMean);
  generating.max_tokens = 4;
  auto refused = engine->Submit(generating);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("max_tokens must be 0"), std::string::npos);
  Request scored = EmbedRequest({1, 2, 3}, Pooling::kMean);
  scored.prompt_logprobs = 1;
  EXPECT_FALSE(engine->Submit(scored).ok());
}

}  // namespace
}  // namespace lockstep
