// Saved prefixes through the engine (Engine::ExportPrefix / ImportPrefix / ForgetPrefix): a prompt's cached
// KV copied out of one engine and into another makes the second engine's request find it cached and
// generate exactly the tokens it generates from scratch (a model with recurrent layers: with the state at
// the run's end); what cannot be imported is refused.
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

std::unique_ptr<Engine> RecurrentEngine(const TestModel& m, bool prefix_caching, int cache_slots) {
  EngineOptions options;
  options.threads = 2;
  options.max_batch_tokens = 32;
  options.prefix_caching = prefix_caching;
  options.recurrent_cache_slots = cache_slots;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// A model with recurrent layers: the file carries the state snapshot at the run's end, and the next turn
// resumes from it in another engine with exactly the tokens it computes from scratch.
TEST(EngineSavedPrefixRecurrentTest, TheStateAtTheRunsEndTravelsWithTheKv) {
  const TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  const std::vector<int32_t> document = testing::RandomTokenIds(n_vocab, 60, /*seed=*/11);
  auto first = RecurrentEngine(m, true, EngineOptions::kAutomaticCacheSlots);
  ASSERT_NE(first, nullptr);
  const Collected reply = RunOne(*first, GreedyRequest(document));
  std::vector<int32_t> next_turn = document;
  next_turn.insert(next_turn.end(), reply.tokens.begin(), reply.tokens.end());
  Result<SavedPrefix> saved = first->ExportPrefix(next_turn);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  // Snapshots at the prompt's last full block (48 of 60) and at the reply's (64 of 68).
  ASSERT_EQ(saved->tokens.size(), 64u);
  EXPECT_EQ(int64_t(saved->state_floats), m.model->config().RecurrentStateFloats());
  ASSERT_EQ(saved->states.size(), 2u);
  EXPECT_EQ(saved->states[0].after_blocks, 3);
  EXPECT_EQ(saved->states[1].after_blocks, 4);
  first.reset();
  for (int32_t t : testing::RandomTokenIds(n_vocab, 5, /*seed=*/12)) next_turn.push_back(t);

  auto uncached = RecurrentEngine(m, false, 0);
  ASSERT_NE(uncached, nullptr);
  const Collected scratch = RunOne(*uncached, GreedyRequest(next_turn));
  uncached.reset();

  auto second = RecurrentEngine(m, true, EngineOptions::kAutomaticCacheSlots);
  ASSERT_NE(second, nullptr);
  const auto prefix = std::make_shared<const SavedPrefix>(std::move(saved).value());
  ASSERT_EQ(*second->ImportPrefix(prefix), 64);
  const Collected resumed = RunOne(*second, GreedyRequest(next_turn));
  EXPECT_EQ(resumed.last.timing.cached_tokens, 64);
  EXPECT_EQ(resumed.tokens, scratch.tokens);

  // A state of another size is refused; so is a model that keeps no snapshots.
  SavedPrefix short_state = *prefix;
  short_state.state_floats -= 1;
  for (SavedState& s : short_state.states) s.state.pop_back();
  Result<int32_t> refused = second->ImportPrefix(std::make_shared<const SavedPrefix>(short_state));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("recurrent states of"), std::string::npos);
  SavedPrefix stateless = *prefix;
  stateless.states.clear();
  EXPECT_FALSE(second->ImportPrefix(std::make_shared<const SavedPrefix>(stateless)).ok());
  // The document alone resumes from the first state (the prompt's): imported into a third engine.
  auto third = RecurrentEngine(m, true, EngineOptions::kAutomaticCacheSlots);
  ASSERT_NE(third, nullptr);
  ASSERT_EQ(*third->ImportPrefix(prefix), 64);
  EXPECT_EQ(RunOne(*third, GreedyRequest(document)).last.timing.cached_tokens, 48);
  auto no_snapshots = RecurrentEngine(m, true, 0);
  ASSERT_NE(no_snapshots, nullptr);
  Result<SavedPrefix> unsupported = no_snapshots->ExportPrefix(document);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(unsupported.status().message().find("--recurrent-cache-slots 0"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
