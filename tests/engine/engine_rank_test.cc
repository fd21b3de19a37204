// Rank requests (Request::embedding = Pooling::kRank) on a real forward pass: a reranker file's classifier
// head applied to the naive reference's last final hidden state gives the engine's logits, and RankScore is
// the softmax's first ("yes") entry; a plain model's yes/no token head gives exactly the score of those
// tokens' next-token log-probabilities; the logits are bit-identical alone, batched and read through a warm
// prefix cache (which reports the shared prefix as cached); models without a head refuse rank requests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/engine.h"
#include "engine_testing.h"
#include "model/classifier.h"
#include "model/reference_forward.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

Request RankRequest(std::vector<int32_t> prompt) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.embedding = Pooling::kRank;
  r.max_tokens = 0;
  return r;
}

TokenEvent RankEvent(Engine& engine, const Request& request) {
  auto handle = engine.Submit(request);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  if (!handle.ok()) return {};
  std::vector<TokenEvent> events = testing::DrainEvents(**handle);
  EXPECT_EQ(events.size(), 1u);
  return events.empty() ? TokenEvent{} : events.back();
}

// The model at `file`'s path loaded again with a classifier of `tokens` (ModelLoadOptions).
testing::TestModel WithTokenHead(const testing::TestModel& m, std::vector<int32_t> tokens) {
  testing::TestModel out = m;
  auto model = Model::Load(m.file, {.classifier_tokens = std::move(tokens)});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  out.model = model.ok() ? std::shared_ptr<Model>(std::move(model).value()) : nullptr;
  return out;
}

TEST(RankTest, FileHeadMatchesTheReferenceHiddenState) {
  const testing::TestModel m = testing::MakeRandomTestModel("tiny-qwen3-reranker", "f32");
  ASSERT_NE(m.model, nullptr);
  EXPECT_EQ(m.model->config().pooling, Pooling::kRank);
  const Classifier* head = m.model->classifier();
  ASSERT_NE(head, nullptr);
  ASSERT_EQ(head->n_cls, 2);
  EXPECT_FALSE(head->from_tokens);
  EXPECT_EQ(head->labels, (std::vector<std::string>{"yes", "no"}));
  // cls.output.weight read by hand: [n_cls][n_embd] f32 rows.
  const GgufTensorInfo* w = m.file->FindTensor("cls.output.weight");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->type, TensorType::kF32);
  const size_t d = size_t(m.model->config().n_embd);
  std::vector<float> weight(2 * d);
  std::memcpy(weight.data(), w->data, weight.size() * sizeof(float));

  auto engine = testing::MakeTestEngine(m, 16, true, 0, KvDtype::kF32);  // chunks of 16 rows
  ASSERT_NE(engine, nullptr);
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<int32_t> prompt = testing::RandomTokenIds(int32_t(m.model->config().n_vocab), 29, seed);
    std::vector<std::vector<double>> hidden;
    ASSERT_TRUE(testing::ReferenceForward(*m.file, prompt, &hidden).ok());
    double want[2] = {0, 0};
    for (size_t c = 0; c < 2; ++c) {
      for (size_t k = 0; k < d; ++k) want[c] += double(weight[c * d + k]) * hidden.back()[k];
    }
    const TokenEvent event = RankEvent(*engine, RankRequest(prompt));
    ASSERT_EQ(event.embedding.size(), 2u);
    EXPECT_EQ(event.finish_reason, FinishReason::kLength);
    EXPECT_EQ(event.token, kNoToken);
    for (size_t c = 0; c < 2; ++c) EXPECT_NEAR(event.embedding[c], want[c], 1e-4) << seed << " " << c;
    const double score = RankScore(event.embedding);
    EXPECT_NEAR(score, 1.0 / (1.0 + std::exp(want[1] - want[0])), 1e-5) << seed;
    EXPECT_GT(score, 0.0);
    EXPECT_LT(score, 1.0);
  }
}

TEST(RankTest, RankScoreIsTheFirstSoftmaxEntry) {
  const float two[] = {1.5f, -0.5f};
  EXPECT_NEAR(RankScore(two), 1.0 / (1.0 + std::exp(-2.0)), 1e-12);
  const float one[] = {0.0f};
  EXPECT_DOUBLE_EQ(RankScore(one), 0.5);
  const float three[] = {1.0f, 1.0f, 1.0f};
  EXPECT_NEAR(RankScore(three), 1.0 / 3.0, 1e-12);
  const float big[] = {1000.0f, -1000.0f};  // no overflow
  EXPECT_DOUBLE_EQ(RankScore(big), 1.0);
}

// The score of a yes/no token head equals sigmoid(logit_yes - logit_no) of those tokens' log-probabilities
// after the prompt (the generate path's prompt logprobs, which are log-softmaxes of the raw logits).
TEST(RankTest, TokenHeadScoreIsTheYesNoLogitDifference) {
  for (const char* shape : {"tiny", "tiny-gemma2"}) {  // gemma2: the final soft-cap applies to both
    const testing::TestModel plain = testing::MakeRandomTestModel(shape, "f32");
    ASSERT_NE(plain.model, nullptr);
    EXPECT_EQ(plain.model->classifier(), nullptr);
    const int32_t yes = 'y', no = 'n';  // byte tokens of the built-in vocabulary
    const testing::TestModel ranked = WithTokenHead(plain, {yes, no});
    ASSERT_NE(ranked.model, nullptr);
    ASSERT_NE(ranked.model->classifier(), nullptr);
    EXPECT_TRUE(ranked.model->classifier()->from_tokens);
    auto rank_engine = testing::MakeTestEngine(ranked, 16, true, 0, KvDtype::kF32);
    auto plain_engine = testing::MakeTestEngine(plain, 16, true, 0, KvDtype::kF32);
    ASSERT_NE(rank_engine, nullptr);
    ASSERT_NE(plain_engine, nullptr);
    const std::vector<int32_t> prompt =
        testing::RandomTokenIds(int32_t(plain.model->config().n_vocab), 23, 5);
    const TokenEvent event = RankEvent(*rank_engine, RankRequest(prompt));
    ASSERT_EQ(event.embedding.size(), 2u) << shape;
    float logprob[2];
    for (int i = 0; i < 2; ++i) {
      Request r;
      r.prompt_ids = prompt;
      r.prompt_ids.push_back(i == 0 ? yes : no);
      r.max_tokens = 0;
      r.prompt_logprobs = 0;
      auto handle = plain_engine->Submit(r);
      ASSERT_TRUE(handle.ok()) << handle.status().ToString();
      const std::vector<TokenEvent> events = testing::DrainEvents(**handle);
      ASSERT_FALSE(events.empty());
      ASSERT_EQ(events.front().prompt_logprobs.size(), prompt.size());
      logprob[i] = events.front().prompt_logprobs.back().logprob;
    }
    // Log-softmax differences are logit differences.
    EXPECT_NEAR(event.embedding[0] - event.embedding[1], logprob[0] - logprob[1], 1e-4) << shape;
    EXPECT_NEAR(RankScore(event.embedding), 1.0 / (1.0 + std::exp(double(logprob[1]) - logprob[0])), 1e-5)
        << shape;
  }
}

TEST(RankTest, LogitsAreTheSameAloneBatchedAndCached) {
  const testing::TestModel m = testing::MakeRandomTestModel("tiny-qwen3-reranker", "f32");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  const std::vector<int32_t> prefix = testing::RandomTokenIds(n_vocab, 40, 11);  // a shared "query"
  std::vector<std::vector<int32_t>> prompts;
  for (uint64_t seed : {21, 22, 23}) {
    std::vector<int32_t> p = prefix;
    for (int32_t t : testing::RandomTokenIds(n_vocab, 9 + int(seed % 5), seed)) p.push_back(t);
    prompts.push_back(std::move(p));
  }
  std::vector<std::vector<float>> alone;
  for (const auto& p : prompts) {
    auto engine = testing::MakeTestEngine(m, 16, /*prefix_caching=*/false);
    ASSERT_NE(engine, nullptr);
    alone.push_back(RankEvent(*engine, RankRequest(p)).embedding);
  }
  auto engine = testing::MakeTestEngine(m, 64);
  ASSERT_NE(engine, nullptr);
  std::vector<Request> group;
  for (const auto& p : prompts) group.push_back(RankRequest(p));
  auto handles = engine->SubmitGroup(group);
  ASSERT_TRUE(handles.ok()) << handles.status().ToString();
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<TokenEvent> events = testing::DrainEvents(*(*handles)[i]);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].embedding, alone[i]) << i;  // bit for bit
  }
  // Again, now that the prefix is cached: the shared query's full blocks are not computed again.
  const TokenEvent cached = RankEvent(*engine, RankRequest(prompts[1]));
  EXPECT_EQ(cached.embedding, alone[1]);
  EXPECT_GE(cached.timing.cached_tokens, 32);
  testing::ExpectAllBlocksFree(*engine);
}

TEST(RankTest, ModelsWithoutAHeadRefuse) {
  const testing::TestModel plain = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(plain.model, nullptr);
  auto engine = testing::MakeTestEngine(plain, 16);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->classifier(), nullptr);
  auto refused = engine->Submit(RankRequest({1, 2, 3}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("classifier head"), std::string::npos)
      << refused.status().message();
  // Token heads: ids in the vocabulary only, and not on top of a file's own head.
  EXPECT_FALSE(
      Model::Load(plain.file, {.classifier_tokens = {1, int32_t(plain.model->config().n_vocab)}}).ok());
  const testing::TestModel headed = testing::MakeRandomTestModel("tiny-qwen3-reranker", "f32");
  auto both = Model::Load(headed.file, {.classifier_tokens = {1, 2}});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("own classifier head"), std::string::npos)
      << both.status().message();
}

}  // namespace
}  // namespace lockstep
