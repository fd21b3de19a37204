// End-to-end prefix caching through `lockstep serve`: usage.prompt_tokens_details.cached_tokens (whole and
// streamed), n > 1 prefilled once, the prefix-cache metrics, caching shown in /health and /info, and
// --no-prefix-cache giving the same text with nothing cached.
#include <gtest/gtest.h>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class ServerPrefixTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cached_ = new ServerProcess(TinyModel(), {"-t", "1"});
    uncached_ = new ServerProcess(TinyModel(), {"-t", "1", "--no-prefix-cache"});
  }
  static void TearDownTestSuite() {
    delete cached_;
    delete uncached_;
    cached_ = uncached_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(cached_->ok()) << cached_->log();
    ASSERT_TRUE(uncached_->ok()) << uncached_->log();
  }
  static ServerProcess* cached_;
  static ServerProcess* uncached_;
};
ServerProcess* ServerPrefixTest::cached_ = nullptr;
ServerProcess* ServerPrefixTest::uncached_ = nullptr;

// A token-id prompt of `len` ids from `seed` (exact lengths, no template).
nlohmann::json Ids(int seed, int len) {
  nlohmann::json ids = nlohmann::json::array();
  for (int i = 0; i < len; ++i) ids.push_back(3 + (seed * 37 + i * 11) % 200);
  return ids;
}

int Cached(const HttpResponse& r) { return r.Json()["usage"]["prompt_tokens_details"]["cached_tokens"]; }

TEST_F(ServerPrefixTest, ARepeatedPromptIsServedFromTheCacheWithTheSameText) {
  const nlohmann::json body = {{"prompt", Ids(1, 70)}, {"max_tokens", 6}, {"temperature", 0}};
  auto first = Post(cached_->port(), "/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Cached(first), 0);
  auto second = Post(cached_->port(), "/v1/completions", body);
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(Cached(second), 64);  // every full 16-token block before the last token
  EXPECT_EQ(second.Json()["usage"]["prompt_tokens"], 70);
  auto scratch = Post(uncached_->port(), "/v1/completions", body);
  ASSERT_EQ(scratch.status, 200) << scratch.body;
  EXPECT_EQ(Cached(scratch), 0);
  EXPECT_EQ(first.Json()["choices"][0]["text"], second.Json()["choices"][0]["text"]);
  EXPECT_EQ(first.Json()["choices"][0]["text"], scratch.Json()["choices"][0]["text"]);
  EXPECT_EQ(Cached(Post(uncached_->port(), "/v1/completions", body)), 0);
}

TEST_F(ServerPrefixTest, StreamedUsageReportsCachedTokens) {
  const nlohmann::json messages = {
      {{"role", "user"}, {"content", "Tell me about the harbour light. " + std::string(60, 'a')}}};
  const nlohmann::json body = {{"messages", messages},
                               {"max_tokens", 4},
                               {"temperature", 0},
                               {"stream", true},
                               {"stream_options", {{"include_usage", true}}}};
  for (int round = 0; round < 2; ++round) {
    int status = 0;
    auto events = Stream(cached_->port(), "/v1/chat/completions", body, nullptr, &status);
    ASSERT_EQ(status, 200);
    ASSERT_GE(events.size(), 2u);
    const auto usage = nlohmann::json::parse(events[events.size() - 2])["usage"];
    const int prompt = usage["prompt_tokens"];
    const int cached = usage["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(cached, round == 0 ? 0 : (prompt - 1) / 16 * 16) << "round " << round;
  }
}

TEST_F(ServerPrefixTest, NChoicesPrefillThePromptOnce) {
  ASSERT_TRUE(WaitForIdleEngine(cached_->port()));
  const double prefill_before = Metric(cached_->port(), "lockstep_prefix_cache_queries_total");
  const double hits_before = Metric(cached_->port(), "lockstep_prefix_cache_hits_total");
  auto r = Post(cached_->port(), "/v1/completions",
                {{"prompt", Ids(2, 90)}, {"n", 3}, {"max_tokens", 5}, {"temperature", 0.9}, {"seed", 4}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.Json()["choices"].size(), 3u);
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"], 90);  // counted once, as OpenAI does
  EXPECT_EQ(r.Json()["usage"]["completion_tokens"], 15);
  ASSERT_TRUE(WaitForIdleEngine(cached_->port()));
  EXPECT_EQ(Metric(cached_->port(), "lockstep_prefix_cache_queries_total") - prefill_before, 3 * 90);
  // Choices 2 and 3 fork from the first: they take its first 89 positions and compute only the last one.
  EXPECT_EQ(Metric(cached_->port(), "lockstep_prefix_cache_hits_total") - hits_before, 2 * 89);
  // Without the cache the choices still fork.
  const double uncached_hits = Metric(uncached_->port(), "lockstep_prefix_cache_hits_total");
  auto u = Post(uncached_->port(), "/v1/completions",
                {{"prompt", Ids(2, 90)}, {"n", 3}, {"max_tokens", 5}, {"temperature", 0.9}, {"seed", 4}});
  ASSERT_EQ(u.status, 200) << u.body;
  ASSERT_TRUE(WaitForIdleEngine(uncached_->port()));
  EXPECT_EQ(Metric(uncached_->port(), "lockstep_prefix_cache_hits_total") - uncached_hits, 2 * 89);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.Json()["choices"][i]["text"], u.Json()["choices"][i]["text"]);
}

TEST_F(ServerPrefixTest, TgiBestOfForksAndReturnsTheMostLikelySequence) {
  ASSERT_TRUE(WaitForIdleEngine(uncached_->port()));
  const double hits_before = Metric(uncached_->port(), "lockstep_prefix_cache_hits_total");
  const nlohmann::json body = {
      {"inputs", "The keeper climbed the stairs"},
      {"parameters",
       {{"best_of", 3}, {"do_sample", true}, {"seed", 7}, {"max_new_tokens", 6}, {"details", true}}}};
  auto r = Post(uncached_->port(), "/generate", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.Json();
  ASSERT_EQ(j["details"]["best_of_sequences"].size(), 2u);
  double best = 0;
  for (const auto& t : j["details"]["tokens"]) best += t["logprob"].get<double>();
  // The same three seeds one by one: the returned text is the most likely of them (with this model and prompt
  // that is seed 9, the third sequence, so returning the first would fail).
  double most_likely = -1e300;
  std::string most_likely_text;
  for (int seed = 7; seed < 10; ++seed) {
    nlohmann::json one = body;
    one["parameters"].erase("best_of");
    one["parameters"]["seed"] = seed;
    auto o = Post(uncached_->port(), "/generate", one);
    ASSERT_EQ(o.status, 200) << o.body;
    const nlohmann::json oj = o.Json();  // (a range-for over a temporary's member would dangle)
    double sum = 0;
    for (const auto& t : oj["details"]["tokens"]) sum += t["logprob"].get<double>();
    if (sum > most_likely) most_likely = sum, most_likely_text = oj["generated_text"];
  }
  EXPECT_EQ(j["generated_text"], most_likely_text);
  EXPECT_NEAR(best, most_likely, 1e-4);
  ASSERT_TRUE(WaitForIdleEngine(uncached_->port()));
  // The three sequences forked from one prefill (this server has no prefix cache; single runs share nothing).
  const int prompt = std::stoi(r.headers["x-prompt-tokens"]);
  EXPECT_EQ(Metric(uncached_->port(), "lockstep_prefix_cache_hits_total") - hits_before, 2 * (prompt - 1));
  EXPECT_EQ(Request(uncached_->port(), "GET", "/info").Json()["max_best_of"], 8);
  auto streamed = Post(uncached_->port(), "/generate_stream", body);
  EXPECT_EQ(streamed.status, 422) << streamed.body;
  nlohmann::json greedy = body;
  greedy["parameters"].erase("do_sample");
  EXPECT_EQ(Post(uncached_->port(), "/generate", greedy).status, 422);
}

TEST_F(ServerPrefixTest, MetricsHealthAndInfoShowTheCache) {
  Post(cached_->port(), "/v1/completions", {{"prompt", Ids(3, 40)}, {"max_tokens", 2}});
  Post(cached_->port(), "/v1/completions", {{"prompt", Ids(3, 40)}, {"max_tokens", 2}});
  auto m = Request(cached_->port(), "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* name : {"lockstep_prefix_cache_queries_total", "lockstep_prefix_cache_hits_total"}) {
    EXPECT_NE(m.body.find(std::string("# TYPE ") + name + " counter"), std::string::npos) << name;
  }
  for (const char* name : {"lockstep_prefix_cache_hit_ratio", "lockstep_kv_cache_cached_blocks",
                           "lockstep_prefix_cache_enabled"}) {
    EXPECT_NE(m.body.find(std::string("# TYPE ") + name + " gauge"), std::string::npos) << name;
  }
  const double ratio = Metric(cached_->port(), "lockstep_prefix_cache_hit_ratio");
  EXPECT_GT(ratio, 0);
  EXPECT_LT(ratio, 1);
  EXPECT_GE(Metric(cached_->port(), "lockstep_kv_cache_cached_blocks"), 2);
  EXPECT_EQ(Metric(cached_->port(), "lockstep_prefix_cache_enabled"), 1);
  EXPECT_EQ(Metric(uncached_->port(), "lockstep_prefix_cache_enabled"), 0);
  EXPECT_EQ(Metric(uncached_->port(), "lockstep_kv_cache_cached_blocks"), 0);
  // The KV cache's configuration, as vLLM's cache_config_info: f16 blocks of 16 positions here.
  EXPECT_NE(m.body.find("# TYPE lockstep_cache_config_info gauge"), std::string::npos);
  EXPECT_NE(m.body.find("lockstep_cache_config_info{block_size=\"16\",cache_dtype=\"f16\",num_blocks=\""),
            std::string::npos)
      << m.body;
  EXPECT_EQ(Request(cached_->port(), "GET", "/health").Json()["prefix_caching"], true);
  EXPECT_EQ(Request(uncached_->port(), "GET", "/health").Json()["prefix_caching"], false);
  EXPECT_EQ(Request(cached_->port(), "GET", "/info").Json()["prefix_caching"], true);
  EXPECT_EQ(Request(uncached_->port(), "GET", "/info").Json()["prefix_caching"], false);
}

}  // namespace
}  // namespace lockstep::server::testing
