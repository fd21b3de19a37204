// Saved prefixes through the engine (Engine::ExportPrefix / ImportPrefix / ForgetPrefix): a prompt's cached
// KV copied out of one engine and into another makes the second engine's request find it cached and
// generate exactly the tokens it generates from scratch; what cannot be imported is refused.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Collected;
using testing::TestModel;

Request GreedyRequest(std::vector<int32_t> prompt) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = 8;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  return r;
}

Collected RunOne(Engine& engine, const Request& request) {
  auto handle = engine.Submit(request);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? testing::Collect(**handle) : Collected{};
}

class EngineSavedPrefixTest : public testing::RandomTinyModelTest {};

TEST_F(EngineSavedPrefixTest, ImportedKvIsFoundAndGivesTheSameTokens) {
  const std::vector<int32_t> document = testing::RandomTokenIds(n_vocab_, 70, /*seed=*/5);
  std::vector<int32_t> question = document;
  for (int32_t t : testing::RandomTokenIds(n_vocab_, 9, /*seed=*/6)) question.push_back(t);

  auto first = testing::MakeTestEngine(model_, /*max_batch_tokens=*/32);
  ASSERT_NE(first, nullptr);
  const Collected original = RunOne(*first, GreedyRequest(document));
  std::vector<int32_t> conversation = document;  // what the request left cached: prompt and reply
  conversation.insert(conversation.end(), original.tokens.begin(), original.tokens.end());
  Result<SavedPrefix> saved = first->ExportPrefix(conversation);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->tokens.size(), 64u);  // 4 full blocks of 16: the 78 tokens' KV ends at 77
  EXPECT_EQ(saved->data.size(), size_t(saved->blocks()) * saved->block_bytes);
  first.reset();
  auto uncached = testing::MakeTestEngine(model_, /*max_batch_tokens=*/32, /*prefix_caching=*/false);
  ASSERT_NE(uncached, nullptr);
  const Collected scratch = RunOne(*uncached, GreedyRequest(question));
  uncached.reset();

  auto second = testing::MakeTestEngine(model_, /*max_batch_tokens=*/32);
  ASSERT_NE(second, nullptr);
  const auto prefix = std::make_shared<const SavedPrefix>(std::move(saved).value());
  Result<int32_t> restored = second->ImportPrefix(prefix);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, 64);
  EXPECT_EQ(second->Stats().kv_blocks_cached, 4);
  EXPECT_EQ(*second->ImportPrefix(prefix), 64);  // again: every block is cached already
  const Collected resumed = RunOne(*second, GreedyRequest(question));
  EXPECT_EQ(resumed.last.timing.cached_tokens, 64);
  EXPECT_EQ(resumed.tokens, scratch.tokens);
  // Exported again, it is the same bytes.
  Result<SavedPrefix> again = second->ExportPrefix(prefix->tokens);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->data == prefix->data);
  // Forgotten, the next request computes everything again.
  EXPECT_EQ(*second->ForgetPrefix(question), 4);
  EXPECT_EQ(*second->ForgetPrefix(question), 0);
  EXPECT_EQ(RunOne(*second, GreedyRequest(question)).last.timing.cached_tokens, 0);
  testing::ExpectAllBlocksFree(*second);
}

TEST_F(EngineSavedPrefixTest, RefusesAnotherLayoutForeignTokensAndNoCache) {
  auto engine = testing::MakeTestEngine(model_, /*max_batch_tokens=*/32);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = testing::RandomTokenIds(n_vocab_, 40, /*seed=*/8);
  RunOne(*engine, GreedyRequest(prompt));
  Result<SavedPrefix> saved = engine->ExportPrefix(prompt);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(saved->blocks(), 2);

  auto f32 = testing::MakeTestEngine(model_, 32, true, 0, KvDtype::kF32);
  ASSERT_NE(f32, nullptr);
  const auto prefix = std::make_shared<const SavedPrefix>(*saved);
  Result<int32_t> layout = f32->ImportPrefix(prefix);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find("another KV layout"), std::string::npos);

  SavedPrefix foreign = *saved;
  foreign.tokens[17] = n_vocab_;
  Result<int32_t> token = engine->ImportPrefix(std::make_shared<const SavedPrefix>(foreign));
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("token 17 (id " + std::to_string(n_vocab_) + ") is outside"),
            std::string::npos);

  auto uncached = testing::MakeTestEngine(model_, 32, /*prefix_caching=*/false);
  ASSERT_NE(uncached, nullptr);
  EXPECT_EQ(uncached->ImportPrefix(prefix).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(uncached->ExportPrefix(prompt).status().code(), StatusCode::kUnimplemented);
  uncached->Shutdown(/*drain=*/false);
  EXPECT_EQ(uncached->ForgetPrefix(prompt).status().code(), StatusCode::kUnavailable);
}

TEST(EngineSavedPrefixRecurrentTest, RecurrentModelsAreRefused) {
  const TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  auto engine = testing::MakeTestEngine(m, /*max_batch_tokens=*/32);
  ASSERT_NE(engine, nullptr);
  Result<SavedPrefix> saved = engine->ExportPrefix({1, 2, 3});
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(saved.status().message().find("recurrent layers"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
