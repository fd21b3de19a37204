// Prompt logprobs (Request::prompt_logprobs) on a real forward pass: a prompt token's logprob is the one the
// model gave that token when it generated it (teacher forcing), bit for bit; the values do not depend on
// chunking, neighbours, preemption or a warm prefix cache (which such a request never reads); the request's
// own tokens are those it gets without prompt logprobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Collected;
using testing::TestModel;

struct Events {
  std::vector<TokenEvent> events;
  const TokenEvent& first() const { return events.front(); }
};

Events Drain(RequestHandle& handle) { return Events{testing::DrainEvents(handle)}; }

Events Submit(Engine& engine, const Request& request) {
  auto handle = engine.Submit(request);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? Drain(**handle) : Events{};
}

Request ScoreRequest(std::vector<int32_t> prompt, int32_t top) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.prompt_logprobs = top;
  r.max_tokens = 3;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  return r;
}

void ExpectSameScores(const std::vector<PromptLogprob>& got, const std::vector<PromptLogprob>& want,
                      const std::string& how) {
  ASSERT_EQ(got.size(), want.size()) << how;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].token) << how << ", position " << i + 1;
    EXPECT_EQ(got[i].logprob, want[i].logprob) << how << ", position " << i + 1;
    ASSERT_EQ(got[i].top.size(), want[i].top.size()) << how << ", position " << i + 1;
    for (size_t k = 0; k < got[i].top.size(); ++k) {
      EXPECT_EQ(got[i].top[k].token, want[i].top[k].token) << how << ", position " << i + 1;
      EXPECT_EQ(got[i].top[k].logprob, want[i].top[k].logprob) << how << ", position " << i + 1;
    }
  }
}

class PromptLogprobsTest : public testing::RandomTinyModelTest {};

TEST_F(PromptLogprobsTest, ScoresAreTheLogprobsOfTheTokensWhenGenerated) {
  auto engine = testing::MakeTestEngine(model_, 64);
  ASSERT_NE(engine, nullptr);
  Request generate;
  generate.prompt_ids = testing::RandomTokenIds(n_vocab_, 21, 1);
  generate.max_tokens = 30;
  generate.ignore_eos = true;
  generate.sampling.temperature = 0.9f;
  generate.sampling.seed = 5;
  generate.sampling.logprobs = true;
  generate.sampling.top_logprobs = 4;
  const Events generated = Submit(*engine, generate);
  ASSERT_EQ(generated.events.size(), 30u);
  EXPECT_TRUE(generated.first().prompt_logprobs.empty());  // not asked for

  // The prompt and every generated token but the last, scored in one request (one 49-row chunk; the next
  // test chunks).
  std::vector<int32_t> whole = generate.prompt_ids;
  for (size_t i = 0; i + 1 < generated.events.size(); ++i) whole.push_back(generated.events[i].token);
  const Events scored = Submit(*engine, ScoreRequest(whole, 4));
  const std::vector<PromptLogprob>& scores = scored.first().prompt_logprobs;
  ASSERT_EQ(scores.size(), whole.size() - 1);
  for (size_t p = 1; p < whole.size(); ++p) {
    EXPECT_EQ(scores[p - 1].token, whole[p]) << "position " << p;
    EXPECT_LE(scores[p - 1].logprob, 0.0f);
    ASSERT_EQ(scores[p - 1].top.size(), 4u);
    // The rank agrees with the top list: inside it, the token's place; outside, behind it.
    const auto& top = scores[p - 1].top;
    const auto in_top =
        std::find_if(top.begin(), top.end(), [&](const TokenLogprob& t) { return t.token == whole[p]; });
    if (in_top != top.end()) {
      EXPECT_EQ(scores[p - 1].rank, int32_t(in_top - top.begin()) + 1) << "position " << p;
    } else {
      EXPECT_GT(scores[p - 1].rank, 4) << "position " << p;
    }
  }
  for (size_t i = 0; i + 1 < generated.events.size(); ++i) {
    const TokenEvent& event = generated.events[i];
    const PromptLogprob& score = scores[generate.prompt_ids.size() - 1 + i];
    EXPECT_EQ(score.logprob, event.logprob) << "generated token " << i;
    ASSERT_EQ(score.top.size(), event.top_logprobs.size());
    for (size_t k = 0; k < score.top.size(); ++k) {
      EXPECT_EQ(score.top[k].token, event.top_logprobs[k].token) << "generated token " << i;
      EXPECT_EQ(score.top[k].logprob, event.top_logprobs[k].logprob) << "generated token " << i;
    }
  }
  // The last generated token continues the scored prompt, greedily the most likely one.
  EXPECT_EQ(scored.events.size(), 3u);
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(PromptLogprobsTest, ChunkingNeighboursAndAWarmCacheChangeNothing) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 90, 2);
  auto alone_engine = testing::MakeTestEngine(model_, 512, /*caching=*/false);
  ASSERT_NE(alone_engine, nullptr);
  const Events alone = Submit(*alone_engine, ScoreRequest(prompt, 2));
  ASSERT_EQ(alone.first().prompt_logprobs.size(), prompt.size() - 1);

  // Chunks of 16 rows, beside other requests, after the same prompt left its blocks in the prefix cache.
  auto engine = testing::MakeTestEngine(model_, 16);
  ASSERT_NE(engine, nullptr);
  Request plain = ScoreRequest(prompt, -1);
  const Events warm = Submit(*engine, plain);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < 3; ++i) {
    Request neighbour = ScoreRequest(testing::RandomTokenIds(n_vocab_, 30 + 7 * i, 10 + uint64_t(i)), -1);
    neighbour.max_tokens = 20;
    handles.push_back(*engine->Submit(neighbour));
  }
  auto handle = engine->Submit(ScoreRequest(prompt, 2));
  ASSERT_TRUE(handle.ok());
  const Events busy = Drain(**handle);
  for (auto& h : handles) testing::Collect(*h);
  ExpectSameScores(busy.first().prompt_logprobs, alone.first().prompt_logprobs, "chunked, with neighbours");
  EXPECT_EQ(busy.events.back().timing.cached_tokens, 0);  // the cache held the whole prompt: not read
  // The tokens are those of the same request without prompt logprobs (which did read the cache: run again).
  const Events cached = Submit(*engine, plain);
  EXPECT_GT(cached.events.back().timing.cached_tokens, 0);
  ASSERT_EQ(busy.events.size(), cached.events.size());
  for (size_t i = 0; i < busy.events.size(); ++i) EXPECT_EQ(busy.events[i].token, cached.events[i].token);
  ASSERT_EQ(warm.events.size(), cached.events.size());
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(PromptLogprobsTest, GroupsDoNotForkAndEachScoresItsOwnPrompt) {
  auto engine = testing::MakeTestEngine(model_, 24);
  ASSERT_NE(engine, nullptr);
  std::vector<int32_t> a = testing::RandomTokenIds(n_vocab_, 40, 3);
  std::vector<int32_t> b = a;
  b.back() = (b.back() + 1) % n_vocab_;
  const Events want_a = Submit(*engine, ScoreRequest(a, 1));
  const Events want_b = Submit(*engine, ScoreRequest(b, 1));
  auto group = engine->SubmitGroup({ScoreRequest(a, 1), ScoreRequest(b, 1)});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const Events got_a = Drain(*(*group)[0]);
  const Events got_b = Drain(*(*group)[1]);
  ExpectSameScores(got_a.first().prompt_logprobs, want_a.first().prompt_logprobs, "group, first");
  ExpectSameScores(got_b.first().prompt_logprobs, want_b.first().prompt_logprobs, "group, second");
  EXPECT_EQ(got_b.events.back().timing.cached_tokens, 0);
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(PromptLogprobsTest, PreemptedRequestsScoreEachPositionOnce) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 40, 4);
  auto roomy = testing::MakeTestEngine(model_, 512, /*caching=*/false);
  ASSERT_NE(roomy, nullptr);
  Request request = ScoreRequest(prompt, 1);
  request.max_tokens = 40;
  const Events want = Submit(*roomy, request);
  // Four of them in a cache of 112 tokens (7 blocks; each needs 5): two are admitted, and their decodes run
  // out of blocks and preempt the newer one.
  auto tight = testing::MakeTestEngine(model_, 32, /*caching=*/true, /*kv_tokens=*/112);
  ASSERT_NE(tight, nullptr);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < 4; ++i) handles.push_back(*tight->Submit(request));
  for (auto& handle : handles) {
    const Events got = Drain(*handle);
    ExpectSameScores(got.first().prompt_logprobs, want.first().prompt_logprobs, "preempted");
    ASSERT_EQ(got.events.size(), want.events.size());
    for (size_t i = 0; i < got.events.size(); ++i) EXPECT_EQ(got.events[i].token, want.events[i].token);
  }
  EXPECT_GT(tight->Stats().preemptions_total, 0);
  testing::ExpectAllBlocksFree(*tight);
}

TEST_F(PromptLogprobsTest, OneTokenPromptsAndBadCountsAreHandled) {
  auto engine = testing::MakeTestEngine(model_, 64);
  ASSERT_NE(engine, nullptr);
  const Events one = Submit(*engine, ScoreRequest({5}, 3));
  ASSERT_FALSE(one.events.empty());
  EXPECT_TRUE(one.first().prompt_logprobs.empty());
  for (int32_t bad : {-2, kMaxTopLogprobs + 1}) {
    auto refused = engine->Submit(ScoreRequest({1, 2, 3}, bad));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("prompt_logprobs"), std::string::npos);
  }
  const Events zero = Submit(*engine, ScoreRequest({1, 2, 3}, 0));
  ASSERT_EQ(zero.first().prompt_logprobs.size(), 2u);
  EXPECT_TRUE(zero.first().prompt_logprobs[0].top.empty());
}

TEST_F(PromptLogprobsTest, MaxTokensZeroScoresThePromptAlone) {
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 50, 6);
  auto engine = testing::MakeTestEngine(model_, 16);
  ASSERT_NE(engine, nullptr);
  const Events want = Submit(*engine, ScoreRequest(prompt, 3));
  Request score = ScoreRequest(prompt, 3);
  score.max_tokens = 0;
  const Events got = Submit(*engine, score);
  ASSERT_EQ(got.events.size(), 1u);
  const TokenEvent& event = got.events[0];
  EXPECT_EQ(event.token, kNoToken);
  EXPECT_EQ(event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(event.timing.generated_tokens, 0);
  ExpectSameScores(event.prompt_logprobs, want.first().prompt_logprobs, "max_tokens 0");
  Request plain = ScoreRequest(prompt, -1);
  plain.max_tokens = 0;
  EXPECT_FALSE(engine->Submit(plain).ok());  // nothing to do without prompt logprobs
  score.prompt_ids = {7};
  const Events single = Submit(*engine, score);
  ASSERT_EQ(single.events.size(), 1u);
  EXPECT_TRUE(single.events[0].prompt_logprobs.empty());
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(PromptLogprobsTest, ScoringAloneCountsNoGeneratedToken) {
  auto engine = testing::MakeTestEngine(model_, 16);
  ASSERT_NE(engine, nullptr);
  Request score = ScoreRequest(testing::RandomTokenIds(n_vocab_, 40, 7), 0);
  score.max_tokens = 0;
  Submit(*engine, score);
  Submit(*engine, ScoreRequest(testing::RandomTokenIds(n_vocab_, 5, 8), -1));  // 3 tokens
  // Stats are published after each step's events: wait for the count (it never exceeds 3 when right).
  for (int i = 0; i < 400 && engine->Stats().generation_tokens_total < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(engine->Stats().generation_tokens_total, 3);
}

}  // namespace
}  // namespace lockstep
