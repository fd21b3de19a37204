// Recurrent state in the engine (tiny-qwen35: Gated DeltaNet layers, kv/recurrent_state_pool.h): every
// request's greedy tokens are those it produces alone, whatever it is batched with, however its prompt is
// chunked (max_batch_tokens), when state slots run out (requests wait for one) and when requests are
// preempted (their state is recomputed from position 0); every state slot and block comes back.
#include <gtest/gtest.h>

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
    EXPECT_FALSE(stats.prefix_caching);
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

}  // namespace
}  // namespace lockstep
