// Engine end-to-end: continuous batching on stories260K and on random models must reproduce every request's
// solo output exactly (greedy and seeded sampling), whatever the neighbours, arrival times, chunking and
// preemption.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine_testing.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

using testing::Arrival;
using testing::Collected;
using testing::TestModel;

struct GoldenCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
};

std::vector<GoldenCase> LoadGolden() {
  std::ifstream in(testing::TestDataPath("models/stories260K.golden.json"));
  EXPECT_TRUE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<GoldenCase> cases;
  for (const auto& c : doc["cases"]) {
    cases.push_back({c["prompt"].get<std::vector<int32_t>>(), c["greedy"].get<std::vector<int32_t>>()});
  }
  return cases;
}

// (With an f16 KV cache the long first case drifts from the float32 reference after ~30 tokens, as expected
// from the rounding; f16 is covered by the solo-vs-concurrent tests below.)
// The reference runs positions 0..128 and stops (exclusive) at token 1.
Request GoldenRequest(const GoldenCase& c) {
  Request r;
  r.prompt_ids = c.prompt;
  r.max_tokens = 130 - int32_t(c.prompt.size());
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.stop_token_ids = {1};
  return r;
}

std::vector<int32_t> WithoutStopToken(const Collected& c) {
  std::vector<int32_t> ids = c.tokens;
  if (c.last.stop_kind == StopKind::kStopToken && !ids.empty()) ids.pop_back();
  return ids;
}

void ExpectGoldenReplicated(KvDtype dtype) {
  TestModel m = testing::LoadTestModel(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_NE(m.model, nullptr);
  const std::vector<GoldenCase> golden = LoadGolden();
  ASSERT_EQ(golden.size(), 4u);
  EngineOptions options;
  options.threads = 1;  // CI runs test binaries side by side on 2 cores
  options.kv_dtype = dtype;
  options.max_seqs = 64;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<Arrival> arrivals;
  for (int copy = 0; copy < 8; ++copy) {
    for (const GoldenCase& c : golden) arrivals.push_back({GoldenRequest(c), 0});
  }
  std::vector<Collected> results = testing::RunConcurrently(**engine, arrivals);
  ASSERT_EQ(results.size(), 32u);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(WithoutStopToken(results[i]), golden[i % 4].greedy) << "request " << i;
  }
  testing::ExpectAllBlocksFree(**engine);
}

TEST(EngineGoldenTest, Stories260KReplicated8TimesF32Kv) {
  LOCKSTEP_REQUIRE_TESTDATA();
  ExpectGoldenReplicated(KvDtype::kF32);
}

// A mix of prompts, lengths, greedy and seeded sampling; every 3rd request arrives after a few tokens of the
// previous one.
std::vector<Arrival> MixedRequests(int n, int32_t n_vocab, int max_prompt, int max_new, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < n; ++i) {
    Arrival a;
    const int prompt_len = 1 + int(rng() % uint64_t(max_prompt));
    for (int k = 0; k < prompt_len; ++k) a.request.prompt_ids.push_back(int32_t(rng() % uint64_t(n_vocab)));
    a.request.max_tokens = 4 + int32_t(rng() % uint64_t(max_new - 3));
    a.request.ignore_eos = true;
    if (i % 2 == 0) {
      a.request.sampling.temperature = 0;
    } else {
      a.request.sampling.temperature = 0.9f;
      a.request.sampling.top_k = 40;
      a.request.sampling.top_p = 0.95f;
      a.request.sampling.seed = 1000 + uint64_t(i);
      a.request.sampling.logprobs = true;
    }
    a.after_tokens = i % 3 == 2 ? 3 : 0;
    arrivals.push_back(std::move(a));
  }
  return arrivals;
}

// Requests that cannot all fit a pool of `pool_tokens` once they grow: short prompts, each growing to ~60% of
// the pool, all submitted at once — two running side by side must preempt one.
std::vector<Arrival> PreemptingRequests(int n, int32_t n_vocab, int pool_tokens, uint64_t seed) {
  std::vector<Arrival> arrivals = MixedRequests(n, n_vocab, 4, 8, seed);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    arrivals[i].request.max_tokens = pool_tokens * 6 / 10 - int32_t(i % 5);
    arrivals[i].after_tokens = 0;
  }
  return arrivals;
}

void ExpectSameAsSolo(const TestModel& m, const std::vector<Arrival>& arrivals, EngineOptions options,
                      bool expect_preemption) {
  EngineOptions roomy = options;
  roomy.kv_tokens = 0;
  roomy.max_seqs = 1;
  auto solo_engine = Engine::Create(m.model, m.tokenizer, roomy);
  ASSERT_TRUE(solo_engine.ok()) << solo_engine.status().ToString();
  const std::vector<Collected> solo = testing::RunSolo(**solo_engine, arrivals);
  ASSERT_EQ(solo.size(), arrivals.size());
  EXPECT_EQ((*solo_engine)->Stats().preemptions_total, 0);

  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const std::vector<Collected> together = testing::RunConcurrently(**engine, arrivals);
  ASSERT_EQ(together.size(), arrivals.size());
  for (size_t i = 0; i < arrivals.size(); ++i) {
    EXPECT_EQ(together[i].tokens, solo[i].tokens) << "request " << i;
    EXPECT_EQ(together[i].text, solo[i].text) << "request " << i;
    EXPECT_EQ(together[i].last.finish_reason, FinishReason::kLength);
    EXPECT_EQ(int32_t(together[i].tokens.size()), arrivals[i].request.max_tokens);
  }
  const EngineStats stats = (*engine)->Stats();
  if (expect_preemption) {
    EXPECT_GT(stats.preemptions_total, 0);
  }
  testing::ExpectAllBlocksFree(**engine);
  testing::ExpectAllBlocksFree(**solo_engine);
}

TEST(EngineInvarianceTest, Stories260KConcurrentEqualsSolo) {
  LOCKSTEP_REQUIRE_TESTDATA();
  TestModel m = testing::LoadTestModel(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_NE(m.model, nullptr);
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 64;
  options.max_batch_tokens = 64;  // long prompts are chunked
  ExpectSameAsSolo(m, MixedRequests(32, int32_t(m.model->config().n_vocab), 100, 50, 1), options, false);
}

TEST(EngineInvarianceTest, Stories260KSmallKvPoolPreemptsAndStillMatches) {
  LOCKSTEP_REQUIRE_TESTDATA();
  TestModel m = testing::LoadTestModel(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 32;
  options.max_batch_tokens = 48;
  options.kv_tokens = 160;  // 10 blocks: far less than the requests need at once
  ExpectSameAsSolo(m, MixedRequests(24, n_vocab, 40, 60, 2), options, false);
  ExpectSameAsSolo(m, PreemptingRequests(12, n_vocab, 160, 5), options, true);
}

TEST(EngineInvarianceTest, RandomLlamaModelConcurrentAndPreemptedEqualsSolo) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 64;
  options.max_batch_tokens = 96;
  options.kv_dtype = KvDtype::kF32;
  ExpectSameAsSolo(m, MixedRequests(64, n_vocab, 30, 40, 3), options, false);  // 64 at once, staggered
  options.kv_tokens = 128;
  ExpectSameAsSolo(m, PreemptingRequests(16, n_vocab, 128, 6), options, true);
}

TEST(EngineInvarianceTest, RandomQwen2Q8ModelConcurrentAndPreemptedEqualsSolo) {
  TestModel m = testing::MakeRandomTestModel("tiny-qwen2", "q8_0");
  ASSERT_NE(m.model, nullptr);
  const int32_t n_vocab = int32_t(m.model->config().n_vocab);
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 16;
  options.max_batch_tokens = 24;
  options.kv_tokens = 128;
  ExpectSameAsSolo(m, MixedRequests(16, n_vocab, 30, 40, 4), options, false);
  ExpectSameAsSolo(m, PreemptingRequests(16, n_vocab, 128, 7), options, true);
}

// Every architecture (model/architectures.h): mixed greedy and sampled requests, staggered, past the
// 40-position windows, then a pool too small for them at once. The all-windowed shapes release their old
// blocks (docs/models.md), so their tight pool need not preempt; the others must.
TEST(EngineInvarianceTest, EveryArchitectureConcurrentAndPreemptedEqualsSolo) {
  for (const char* shape :
       {"tiny-qwen3", "tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-phi3.5", "tiny-phi4-mini", "tiny-nemo",
        "tiny-mistral-swa", "tiny-qwen3moe", "tiny-mixtral", "tiny-qwen2moe"}) {
    SCOPED_TRACE(shape);
    TestModel m = testing::MakeRandomTestModel(shape, "q8_0");
    ASSERT_NE(m.model, nullptr);
    const int32_t n_vocab = int32_t(m.model->config().n_vocab);
    EngineOptions options;
    options.threads = 2;
    options.max_seqs = 16;
    options.max_batch_tokens = 24;
    ExpectSameAsSolo(m, MixedRequests(12, n_vocab, 40, 40, 5), options, false);
    options.kv_tokens = 128;
    ExpectSameAsSolo(m, PreemptingRequests(6, n_vocab, 128, 8), options,
                     m.model->config().WidestWindow() == 0);
  }
}

}  // namespace
}  // namespace lockstep
