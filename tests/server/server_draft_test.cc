// Speculative decoding through `lockstep serve --draft-max N`: the same completions (greedy and seeded,
// streamed and not, several at once) as a server without drafts, the drafted and confirmed tokens counted in
// /metrics, and the drafting said in the start-up line.
#include <gtest/gtest.h>

#include <thread>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class ServerDraftTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    plain_ = new ServerProcess(TinyModel(), {"-t", "1"});
    drafted_ = new ServerProcess(TinyModel(), {"-t", "1", "--draft-max", "6", "--draft-max-seqs", "3"});
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete drafted_;
    plain_ = drafted_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(plain_->ok()) << plain_->log();
    ASSERT_TRUE(drafted_->ok()) << drafted_->log();
  }
  static nlohmann::json Body(int seed, bool sampled) {
    nlohmann::json ids = nlohmann::json::array();
    for (int i = 0; i < 12; ++i) ids.push_back(3 + (seed * 37 + i * 11) % 200);
    nlohmann::json body = {{"prompt", ids}, {"max_tokens", 64}, {"ignore_eos", true}};
    body["temperature"] = sampled ? 0.8 : 0.0;
    if (sampled) body["seed"] = seed;
    return body;
  }
  static std::string Text(int port, const nlohmann::json& body) {
    auto r = Post(port, "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["choices"][0]["text"].get<std::string>() : "";
  }
  static ServerProcess* plain_;
  static ServerProcess* drafted_;
};
ServerProcess* ServerDraftTest::plain_ = nullptr;
ServerProcess* ServerDraftTest::drafted_ = nullptr;

TEST_F(ServerDraftTest, CompletionsAreTheUndraftedOnes) {
  for (int seed = 1; seed <= 6; ++seed) {
    for (bool sampled : {false, true}) {
      const nlohmann::json body = Body(seed, sampled);
      EXPECT_EQ(Text(drafted_->port(), body), Text(plain_->port(), body)) << body.dump();
    }
  }
  EXPECT_GT(Metric(drafted_->port(), "lockstep_spec_decode_num_accepted_tokens_total"), 0);
  EXPECT_GE(Metric(drafted_->port(), "lockstep_spec_decode_num_draft_tokens_total"),
            Metric(drafted_->port(), "lockstep_spec_decode_num_accepted_tokens_total"));
  EXPECT_EQ(Metric(plain_->port(), "lockstep_spec_decode_num_draft_tokens_total"), 0);
  EXPECT_NE(drafted_->log().find("n-gram drafts of up to 6 tokens while at most 3 requests run"),
            std::string::npos)
      << drafted_->log();
}

TEST_F(ServerDraftTest, StreamedAndConcurrentCompletionsAreTheUndraftedOnes) {
  std::vector<std::string> expected;
  for (int seed = 1; seed <= 4; ++seed) expected.push_back(Text(plain_->port(), Body(seed, seed % 2 == 0)));
  std::vector<std::string> got(expected.size());
  std::vector<std::thread> clients;
  for (int seed = 1; seed <= 4; ++seed) {
    clients.emplace_back([&, seed] {
      nlohmann::json body = Body(seed, seed % 2 == 0);
      body["stream"] = true;
      auto events = Stream(drafted_->port(), "/v1/completions", body);
      bool done = false;
      got[size_t(seed - 1)] = CollectOpenAiText(events, /*chat=*/false, &done)[0];
      EXPECT_TRUE(done);
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace lockstep::server::testing
