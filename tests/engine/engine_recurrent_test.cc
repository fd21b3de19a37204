// Recurrent state in the engine (tiny-qwen35: Gated DeltaNet layers, kv/recurrent_state_pool.h): every
// request's greedy tokens are those it produces alone, whatever it is batched with, however its prompt is
// chunked (max_batch_tokens), when state slots run out (requests wait for one) and when requests are
// preempted (their state is recomputed); every state slot and block comes back. Prefix caching with state
// snapshots (kv/recurrent_state_cache.h): requests sharing a document, and a next turn (cached into the reply
// it extends), get the same tokens and logprobs (bit for bit) from a hit as when computing everything.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Arrival;
using testing::Collected;
using testing::TestModel;

std::vector<Arrival> Requests(int n, int32_t n_vocab, int total) {
  std::mt19937_64 rng(23);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < n; ++i) {
    Arrival a;
    for (int k = 0; k < 5 + 9 * i; ++k) a.request.prompt_ids.push_back(int32_t(rng() % uint64_t(n_vocab)));
    a.request.max_tokens = total - int32_t(a.request.prompt_ids.size());
    a.request.ignore_eos = true;
    a.request.sampling.temperature = 0;
    a.after_tokens = i % 2 == 0 ? 0 : 3;  // some arrive while others decode
    arrivals.push_back(std::move(a));
  }
  return arrivals;
}

class EngineRecurrentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
    ASSERT_NE(m_.model, nullptr);
    ASSERT_GT(m_.model->config().RecurrentLayers(), 0);
    arrivals_ = Requests(4, int32_t(m_.model->config().n_vocab), 56);
    EngineOptions solo;
    solo.threads = 1;
    solo.max_seqs = 1;
    solo.max_batch_tokens = 512;
    auto engine = Engine::Create(m_.model, m_.tokenizer, solo);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    solo_ = testing::RunSolo(**engine, arrivals_);
  }

  // Runs the requests together under `options`; expects each one's tokens to be its solo run's.
  EngineStats RunTogether(const EngineOptions& options, const std::string& what) {
    auto engine = Engine::Create(m_.model, m_.tokenizer, options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return {};
    const std::vector<Collected> together = testing::RunConcurrently(**engine, arrivals_);
    EXPECT_EQ(together.size(), solo_.size());
    for (size_t i = 0; i < together.size() && i < solo_.size(); ++i) {
      EXPECT_EQ(together[i].tokens, solo_[i].tokens) << what << ": request " << i;
    }
    testing::ExpectAllBlocksFree(**engine);
    return (*engine)->Stats();
  }

  TestModel m_;
  std::vector<Arrival> arrivals_;
  std::vector<Collected> solo_;
};

TEST_F(EngineRecurrentTest, TokensDoNotDependOnBatchOrChunking) {
  for (int max_batch_tokens : {5, 16, 512}) {
    EngineOptions options;
    options.threads = 2;
    options.max_seqs = 4;
    options.max_batch_tokens = max_batch_tokens;
    options.draft_tokens = 4;  // asked for, but a recurrent model runs without draft rows
    const EngineStats stats = RunTogether(options, "max_batch_tokens " + std::to_string(max_batch_tokens));
    EXPECT_EQ(stats.draft_tokens_total, 0);
    EXPECT_TRUE(stats.prefix_caching);  // with state snapshots
    EXPECT_GE(stats.recurrent_cache_slots_total, EngineOptions::kMinAutomaticCacheSlots);
  }
}

TEST_F(EngineRecurrentTest, RequestsWaitForAStateSlot) {
  EngineOptions options;
  options.threads = 2;
  options.max_seqs = 4;
  options.recurrent_slots = 1;  // one at a time, whatever max_seqs says
  options.max_batch_tokens = 32;
  RunTogether(options, "one state slot");
}

TEST_F(EngineRecurrentTest, PreemptedRequestsRecomputeTheirState) {
  EngineOptions options;
  options.threads = 2;
  options.max_seqs = 4;
  options.max_batch_tokens = 32;
  options.block_tokens = 16;
  options.kv_tokens = 112;  // 7 blocks: four requests of 56 tokens (4 blocks each) cannot all fit
  const EngineStats stats = RunTogether(options, "tight KV pool");
  // How often depends on timing; scheduler_recurrent_test.cc counts it deterministically.
  std::printf("[ recurrent] preemptions: %lld\n", static_cast<long long>(stats.preemptions_total));
}

// Four questions over one 34-token document arrive together; then the first one's next turn (its prompt, its
// answer and more). Block 16: every prompt's last block boundary is 32, the document's too, so the hits do
// not depend on when the engine takes the requests. (Not the fixture: no solo runs needed.)
TEST(EngineRecurrentCacheTest, SharedPrefixHitsGiveTheSameTokens) {
  const TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  const std::vector<int32_t> doc = testing::RandomTokenIds(n_vocab, 34, 5);
  std::vector<Arrival> fan_out;
  for (int i = 0; i < 4; ++i) {
    Arrival a;
    a.request.prompt_ids = doc;
    for (int32_t t : testing::RandomTokenIds(n_vocab, 3 + i, 40 + uint64_t(i)))
      a.request.prompt_ids.push_back(t);
    a.request.max_tokens = 12;  // the reply reaches the block boundary at 48
    a.request.ignore_eos = true;
    a.request.sampling.temperature = 0;
    a.request.sampling.logprobs = true;
    fan_out.push_back(std::move(a));
  }
  struct Run {
    std::vector<Collected> fan_out, turn;
    EngineStats stats;
  };
  auto run = [&](int cache_slots) {
    EngineOptions options;
    options.threads = 2;
    options.max_seqs = 4;
    options.max_batch_tokens = 64;
    options.recurrent_cache_slots = cache_slots;
    Run r;
    auto engine = Engine::Create(m.model, m.tokenizer, options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return r;
    r.fan_out = testing::RunConcurrently(**engine, fan_out);
    if (r.fan_out.size() != fan_out.size()) return r;
    Arrival next = fan_out[0];
    for (int32_t t : r.fan_out[0].tokens) next.request.prompt_ids.push_back(t);
    for (int32_t t : testing::RandomTokenIds(n_vocab, 4, 99)) next.request.prompt_ids.push_back(t);
    r.turn = testing::RunConcurrently(**engine, {next});
    testing::ExpectAllBlocksFree(**engine);
    r.stats = (*engine)->Stats();
    return r;
  };
  const Run off = run(0), on = run(8);
  EXPECT_FALSE(off.stats.prefix_caching);
  EXPECT_EQ(off.stats.prefix_cache_hits_total, 0);
  EXPECT_TRUE(on.stats.prefix_caching);
  ASSERT_EQ(on.fan_out.size(), off.fan_out.size());
  ASSERT_EQ(on.turn.size(), 1u);
  ASSERT_EQ(off.turn.size(), 1u);
  for (size_t i = 0; i < on.fan_out.size(); ++i) {
    EXPECT_EQ(on.fan_out[i].tokens, off.fan_out[i].tokens) << "request " << i;
    EXPECT_EQ(on.fan_out[i].last.logprob, off.fan_out[i].last.logprob) << "request " << i;
  }
  EXPECT_EQ(on.turn[0].tokens, off.turn[0].tokens);
  EXPECT_EQ(on.turn[0].last.logprob, off.turn[0].last.logprob);
  // Three of the four took the document's 32 tokens; the next turn its first 48 (the first turn's prompt and
  // reply, from the snapshot taken while decoding).
  EXPECT_EQ(on.stats.recurrent_snapshot_hits_total, 4);
  EXPECT_EQ(on.turn[0].last.timing.cached_tokens, 48);
  EXPECT_EQ(on.stats.prefix_cache_hits_total, 3 * 32 + 48);
  EXPECT_GE(on.stats.recurrent_cache_slots_used, 1);
}

// The automatic snapshot count (EngineOptions::kAutomaticCacheSlots, the default): as many states as fit in
// the KV pool's bytes, at least kMinAutomaticCacheSlots, at most one per KV block. tiny-qwen35's state
// (420 KiB) is 420 KV tokens' worth (1 KiB each): 112 tokens give the minimum, 4096 and 65536 the states that
// fit (9, 156), and 65536 in blocks of 1024 tokens (64 blocks of 1 MiB) one per block.
TEST(EngineRecurrentCacheTest, AutomaticSlotsFollowTheKvPool) {
  const TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  ASSERT_NE(m.model, nullptr);
  const int64_t state_bytes = m.model->config().RecurrentStateFloats() * int64_t(sizeof(float));
  struct Pool {
    int64_t kv_tokens;
    int block_tokens;
    int64_t slots;
  };
  for (const Pool& pool :
       {Pool{112, 16, 8}, Pool{4096, 16, 9}, Pool{65536, 16, 156}, Pool{65536, 1024, 64}}) {
    EngineOptions options;
    options.kv_tokens = pool.kv_tokens;
    options.block_tokens = pool.block_tokens;
    auto engine = Engine::Create(m.model, m.tokenizer, options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    const EngineOptions& resolved = (*engine)->options();
    const int64_t blocks = resolved.kv_tokens / resolved.block_tokens;
    const int64_t expected = std::max<int64_t>(EngineOptions::kMinAutomaticCacheSlots,
                                               std::min(resolved.kv_memory_bytes / state_bytes, blocks));
    EXPECT_EQ(expected, pool.slots) << pool.kv_tokens << " KV tokens in blocks of " << pool.block_tokens;
    EXPECT_EQ(resolved.recurrent_cache_slots, expected) << pool.kv_tokens << " KV tokens";
    EXPECT_EQ((*engine)->Stats().recurrent_cache_slots_total, expected) << pool.kv_tokens << " KV tokens";
  }
}

// Twelve conversations at once, each one's reply passing a block boundary, then every one's next turn: with
// the automatic count each next turn resumes from its own reply's snapshot (cached up to 32 of its tokens),
// where 8 slots, all held by the prompts' snapshots, keep none of the replies'. Same tokens as without cache.
TEST(EngineRecurrentCacheTest, AutomaticSlotsKeepEveryConversationsReply) {
  const TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  constexpr int kConversations = 12;
  std::vector<Arrival> first;
  for (int i = 0; i < kConversations; ++i) {
    Arrival a;
    a.request.prompt_ids = testing::RandomTokenIds(n_vocab, 20, 300 + uint64_t(i));
    a.request.max_tokens = 14;  // prompt and reply pass the block boundary at 32
    a.request.ignore_eos = true;
    a.request.sampling.temperature = 0;
    first.push_back(std::move(a));
  }
  auto run = [&](int cache_slots, std::vector<Collected>* turns) {
    EngineOptions options;
    options.threads = 2;
    options.max_seqs = kConversations;
    options.max_batch_tokens = 512;
    options.recurrent_cache_slots = cache_slots;
    auto engine = Engine::Create(m.model, m.tokenizer, options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return;
    const std::vector<Collected> replies = testing::RunConcurrently(**engine, first);
    ASSERT_EQ(replies.size(), first.size());
    std::vector<Arrival> next = first;
    for (int i = 0; i < kConversations; ++i) {
      for (int32_t t : replies[size_t(i)].tokens) next[size_t(i)].request.prompt_ids.push_back(t);
      for (int32_t t : testing::RandomTokenIds(n_vocab, 4, 400 + uint64_t(i)))
        next[size_t(i)].request.prompt_ids.push_back(t);
    }
    *turns = testing::RunConcurrently(**engine, next);
    testing::ExpectAllBlocksFree(**engine);
  };
  std::vector<Collected> off, on;
  run(0, &off);
  run(EngineOptions::kAutomaticCacheSlots, &on);
  ASSERT_EQ(on.size(), size_t(kConversations));
  ASSERT_EQ(off.size(), size_t(kConversations));
  for (int i = 0; i < kConversations; ++i) {
    EXPECT_EQ(on[size_t(i)].tokens, off[size_t(i)].tokens) << "conversation " << i;
    EXPECT_EQ(on[size_t(i)].last.timing.cached_tokens, 32) << "conversation " << i;
  }
}

}  // namespace
}  // namespace lockstep
