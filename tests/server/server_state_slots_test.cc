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

}  // namespace
}  // namespace lockstep::server::testing
