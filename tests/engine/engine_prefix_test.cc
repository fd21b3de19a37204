// Prefix caching end to end on a real forward pass: a request's greedy and seeded tokens are bit-identical
// whether its prefix's KV came from the cache, from a neighbour computing it at the same time, from a fork
// parent, or was computed from scratch — over block boundaries (16-token blocks), with f16 and f32 KV.
#include <gtest/gtest.h>

#include <random>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Collected;
using testing::TestModel;

std::vector<int32_t> RandomTokens(std::mt19937_64& rng, int32_t n_vocab, int count) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i) tokens.push_back(int32_t(rng() % uint64_t(n_vocab)));
  return tokens;
}

// Requests sharing a `prefix`-token prefix, each with its own suffix (lengths 1, 4, 16 and 0 — the last one
// repeats the shared prefix alone); greedy and seeded sampling alternate.
std::vector<Request> SharedPrefixRequests(int32_t n_vocab, int prefix, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<int32_t> shared = RandomTokens(rng, n_vocab, prefix);
  std::vector<Request> requests;
  for (int suffix : {1, 4, 16, 0}) {
    Request r;
    r.prompt_ids = shared;
    const std::vector<int32_t> own = RandomTokens(rng, n_vocab, suffix);
    r.prompt_ids.insert(r.prompt_ids.end(), own.begin(), own.end());
    r.max_tokens = 6;
    r.ignore_eos = true;
    if (requests.size() % 2 == 0) {
      r.sampling.temperature = 0;
    } else {
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 20;
      r.sampling.seed = 99 + requests.size();
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

std::unique_ptr<Engine> MakeEngine(const TestModel& m, KvDtype dtype, bool caching) {
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 16;
  options.max_batch_tokens = 40;  // prompts are chunked across steps, mid-block too
  options.kv_dtype = dtype;
  options.prefix_caching = caching;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

std::vector<Collected> RunEach(Engine& engine, const std::vector<Request>& requests) {
  std::vector<Collected> out;
  for (const Request& r : requests) {
    auto handle = engine.Submit(r);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    out.push_back(testing::Collect(**handle));
  }
  return out;
}

// All at once: one by one (neighbours), or as one group (the later ones fork from the first).
std::vector<Collected> RunTogether(Engine& engine, const std::vector<Request>& requests, bool fork) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  if (fork) {
    auto group = engine.SubmitGroup(requests);
    EXPECT_TRUE(group.ok()) << group.status().ToString();
    if (!group.ok()) return {};
    handles = std::move(group).value();
  }
  for (size_t i = 0; !fork && i < requests.size(); ++i) {
    auto handle = engine.Submit(requests[i]);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    handles.push_back(std::move(handle).value());
  }
  std::vector<Collected> out;
  for (auto& handle : handles) out.push_back(testing::Collect(*handle));
  return out;
}

void ExpectSameTokens(const std::vector<Collected>& got, const std::vector<Collected>& want,
                      const std::string& how) {
  ASSERT_EQ(got.size(), want.size()) << how;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << how << ", request " << i;
    EXPECT_EQ(got[i].last.finish_reason, FinishReason::kLength) << how << ", request " << i;
  }
}

void ExpectCachedEqualsScratch(KvDtype dtype, const std::string& shape = "tiny",
                               const std::vector<int>& prefixes = {15, 16, 17, 31, 32, 33, 47, 48, 49}) {
  TestModel m = testing::MakeRandomTestModel(shape, "f32");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  std::unique_ptr<Engine> scratch = MakeEngine(m, dtype, /*caching=*/false);
  ASSERT_NE(scratch, nullptr);
  for (int prefix : prefixes) {
    SCOPED_TRACE("prefix " + std::to_string(prefix));
    const std::vector<Request> requests = SharedPrefixRequests(n_vocab, prefix, uint64_t(prefix));
    const std::vector<Collected> want = RunEach(*scratch, requests);

    // From the cache: a first request leaves the prefix's blocks; the others find them.
    std::unique_ptr<Engine> cached = MakeEngine(m, dtype, true);
    ASSERT_NE(cached, nullptr);
    const std::vector<Collected> from_cache = RunEach(*cached, requests);
    ExpectSameTokens(from_cache, want, "from the cache");
    const int32_t full_blocks = (prefix / 16) * 16;
    for (size_t i = 1; i < requests.size(); ++i) {
      const int32_t reusable = int32_t((requests[i].prompt_ids.size() - 1) / 16 * 16);
      EXPECT_EQ(from_cache[i].last.timing.cached_tokens, std::min(full_blocks, reusable)) << "request " << i;
    }
    // Again, every prompt now cached whole (up to its last block).
    ExpectSameTokens(RunEach(*cached, requests), want, "second round");
    testing::ExpectAllBlocksFree(*cached);

    // From neighbours: all submitted at once to a fresh engine; and as forks of the first.
    for (bool fork : {false, true}) {
      std::unique_ptr<Engine> together = MakeEngine(m, dtype, true);
      ASSERT_NE(together, nullptr);
      ExpectSameTokens(RunTogether(*together, requests, fork), want, fork ? "forked" : "together");
      if (prefix >= 17) {
        EXPECT_GT(together->Stats().prefix_cache_hits_total, 0);
      }
      testing::ExpectAllBlocksFree(*together);
    }
    std::unique_ptr<Engine> forks_uncached = MakeEngine(m, dtype, false);
    ExpectSameTokens(RunTogether(*forks_uncached, requests, true), want, "forked without the cache");
    testing::ExpectAllBlocksFree(*forks_uncached);
  }
  EXPECT_EQ(scratch->Stats().prefix_cache_hits_total, 0);
  testing::ExpectAllBlocksFree(*scratch);
}

TEST(EnginePrefixTest, CachedNeighbourAndForkedPrefixesEqualScratchF32Kv) {
  ExpectCachedEqualsScratch(KvDtype::kF32);
}

TEST(EnginePrefixTest, CachedNeighbourAndForkedPrefixesEqualScratchF16Kv) {
  ExpectCachedEqualsScratch(KvDtype::kF16);
}

// q8_0 blocks hold each position's quants and scales, computed from that position alone: shared as they are.
TEST(EnginePrefixTest, CachedNeighbourAndForkedPrefixesEqualScratchQ8Kv) {
  ExpectCachedEqualsScratch(KvDtype::kQ8_0);
}

// Every architecture (model/architectures.h); prompts of up to 65 tokens run past the 40-position windows,
// whose blocks the windowed shapes release as they go (tests/engine/engine_window_test.cc).
TEST(EnginePrefixTest, EveryArchitectureCachedNeighbourAndForkedEqualScratch) {
  for (const char* shape :
       {"tiny-qwen3", "tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-phi4-mini", "tiny-nemo",
        "tiny-mistral-swa", "tiny-qwen3moe", "tiny-mixtral", "tiny-qwen2moe", "tiny-deepseek2"}) {
    SCOPED_TRACE(shape);
    ExpectCachedEqualsScratch(KvDtype::kF16, shape, {17, 49});
  }
}

// Batch invariance with the cache on: requests whose prefixes come from the cache or from running neighbours,
// arriving while unrelated requests of other lengths decode beside them (and, with a pool too small for all,
// preempted and recomputed), give the tokens each gives alone on an engine without the cache.
void ExpectCachedAmongOthersEqualsSoloUncached(KvDtype dtype, int64_t kv_tokens) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  std::mt19937_64 rng(11);
  std::vector<testing::Arrival> arrivals;
  const std::vector<Request> shared = SharedPrefixRequests(n_vocab, 33, 3);
  const std::vector<Request> shared_again = SharedPrefixRequests(n_vocab, 33, 3);  // the same prompts again
  const bool tight = kv_tokens > 0;
  for (size_t i = 0; i < shared.size(); ++i) {
    Request other;  // an unrelated prompt of its own length, decoding longer
    other.prompt_ids = RandomTokens(rng, n_vocab, int(5 + 15 * i));
    // In the tight pool each grows to 60-95 % of it, so two side by side must preempt one.
    other.max_tokens = tight ? 70 : int32_t(20 + 6 * i);
    other.ignore_eos = true;
    other.sampling.temperature = i % 2 ? 0.9f : 0.0f;
    other.sampling.seed = 7 + i;
    arrivals.push_back({other, i == 0 || tight ? 0 : 2});  // joins while the previous request decodes
    arrivals.push_back({shared[i], tight ? 0 : int(i % 2)});
  }
  for (size_t i = 0; i < shared_again.size(); ++i) arrivals.push_back({shared_again[i], i == 0 ? 3 : 0});

  EngineOptions solo_options;
  solo_options.threads = 1;
  solo_options.kv_dtype = dtype;
  solo_options.prefix_caching = false;
  auto solo = Engine::Create(m.model, m.tokenizer, solo_options);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  const std::vector<Collected> want = testing::RunSolo(**solo, arrivals);

  EngineOptions options = solo_options;
  options.prefix_caching = true;
  options.max_batch_tokens = 40;
  options.kv_tokens = kv_tokens;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const std::vector<Collected> got = testing::RunConcurrently(**engine, arrivals);
  ExpectSameTokens(got, want, "among others, cache on");
  EXPECT_GT((*engine)->Stats().prefix_cache_hits_total, 0);
  if (kv_tokens > 0) {
    EXPECT_GT((*engine)->Stats().preemptions_total, 0);
  }
  testing::ExpectAllBlocksFree(**engine);
}

TEST(EnginePrefixTest, CachedPrefixesAmongUnrelatedRequestsEqualSoloUncachedF16Kv) {
  ExpectCachedAmongOthersEqualsSoloUncached(KvDtype::kF16, 0);
}

TEST(EnginePrefixTest, CachedPrefixesAmongUnrelatedRequestsEqualSoloUncachedF32KvTightPool) {
  ExpectCachedAmongOthersEqualsSoloUncached(KvDtype::kF32, 128);  // 8 blocks: preemption and eviction
}

TEST(EnginePrefixTest, ForksOfOneRequestPrefillItsPromptOnce) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  for (bool caching : {true, false}) {
    std::unique_ptr<Engine> engine = MakeEngine(m, KvDtype::kF16, caching);
    ASSERT_NE(engine, nullptr);
    std::mt19937_64 rng(5);
    Request r;
    r.prompt_ids = RandomTokens(rng, int32_t(m.model->config().n_vocab), 90);
    r.max_tokens = 5;
    r.ignore_eos = true;
    r.sampling.temperature = 0.7f;
    std::vector<Request> three;
    for (uint64_t seed : {1, 2, 3}) {
      r.sampling.seed = seed;
      three.push_back(r);
    }
    const std::vector<Collected> out = RunTogether(*engine, three, /*fork=*/true);
    ASSERT_EQ(out.size(), 3u);
    const EngineStats stats = engine->Stats();
    EXPECT_EQ(stats.prefill_tokens_total, 90 + 1 + 1);  // the children compute only the last prompt token
    EXPECT_EQ(stats.prefix_cache_hits_total, 2 * 89);
    EXPECT_EQ(out[1].last.timing.cached_tokens, 89);
    testing::ExpectAllBlocksFree(*engine);
  }
}

}  // namespace
}  // namespace lockstep
