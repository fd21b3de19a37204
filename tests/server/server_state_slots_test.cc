// The recurrent state slots of a model with recurrent layers (tiny-qwen35) through `lockstep serve
// --recurrent-slots`: /metrics reports the slots asked for and those in use (none once requests finished),
// and requests beyond the slots still complete (they wait for one); and the prefix cache's state snapshots.
#include <gtest/gtest.h>

#include <thread>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class ServerStateSlotsTest : public SharedServerTest<ServerStateSlotsTest> {
 public:
  static std::string Model() { return RecurrentModel(); }
  static std::vector<std::string> Args() { return {"-t", "1", "--max-seqs", "4", "--recurrent-slots", "2"}; }
};

TEST_F(ServerStateSlotsTest, MetricsShowTheSlotsAndTheirUse) {
  auto m = Request(port(), "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* name : {"lockstep_recurrent_state_slots_used", "lockstep_recurrent_state_slots_total"}) {
    EXPECT_NE(m.body.find(std::string("# TYPE ") + name + " gauge"), std::string::npos) << name;
  }
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_slots_total"), 2);
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_slots_used"), 0);
  std::vector<std::thread> clients;
  std::vector<int> statuses(3, 0);
  for (size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back([&, i] {
      statuses[i] = Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 8}}).status;
    });
  }
  for (std::thread& t : clients) t.join();
  for (int status : statuses) EXPECT_EQ(status, 200);
  ASSERT_TRUE(WaitForIdleEngine(port()));
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_slots_used"), 0);
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_slots_total"), 2);
}

// The prefix cache's state snapshots (--recurrent-cache-slots, default on): a prompt of several KV blocks
// sent twice is computed once up to its last block boundary; the second request's hit shows in /metrics.
TEST_F(ServerStateSlotsTest, MetricsShowStateSnapshotsAndTheirHits) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "w" + std::to_string(i) + " ";
  const double hits_before = Metric(port(), "lockstep_recurrent_state_snapshot_hits_total");
  const double prefix_hits_before = Metric(port(), "lockstep_prefix_cache_hits_total");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Post(port(), "/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}}).status, 200);
    ASSERT_TRUE(WaitForIdleEngine(port()));
  }
  EXPECT_GT(Metric(port(), "lockstep_recurrent_state_cache_slots_total"), 0);
  EXPECT_GE(Metric(port(), "lockstep_recurrent_state_cache_slots_used"), 1);
  EXPECT_GE(Metric(port(), "lockstep_recurrent_state_snapshots_total"), 1);
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_snapshot_hits_total"), hits_before + 1);
  EXPECT_GT(Metric(port(), "lockstep_prefix_cache_hits_total"), prefix_hits_before);
  EXPECT_EQ(Metric(port(), "lockstep_recurrent_state_snapshot_evictions_total"), 0);
}

// Conversations with one system message (server/shared_prefix_hint.h): the second, sent after the first
// finished, starts from the state snapshot taken where the system message ends (no other request shared that
// prefix while the first ran, so without the hint there was none: cached_tokens 0).
TEST_F(ServerStateSlotsTest, ConversationsSharingASystemMessageStartAfterIt) {
  std::string system;
  for (int i = 0; i < 40; ++i) system += "s" + std::to_string(i) + " ";
  auto chat = [&](const std::string& user) {
    const nlohmann::json messages = {{{"role", "system"}, {"content", system}},
                                     {{"role", "user"}, {"content", user}}};
    return Post(port(), "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 2}});
  };
  auto first = chat("the first question");
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_TRUE(WaitForIdleEngine(port()));
  auto second = chat("another one");
  ASSERT_EQ(second.status, 200) << second.body;
  const nlohmann::json usage = second.Json()["usage"];
  const int cached = usage["prompt_tokens_details"]["cached_tokens"].get<int>();
  EXPECT_GE(cached, 16) << usage.dump();
  EXPECT_LT(cached, usage["prompt_tokens"].get<int>());
}

}  // namespace
}  // namespace lockstep::server::testing
