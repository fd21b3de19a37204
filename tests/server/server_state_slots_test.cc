// The recurrent state slots of a model with recurrent layers (tiny-qwen35) through `lockstep serve
// --recurrent-slots`: /metrics reports the slots asked for and those in use (none once requests finished),
// and requests beyond the slots still complete (they wait for one).
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

}  // namespace
}  // namespace lockstep::server::testing
