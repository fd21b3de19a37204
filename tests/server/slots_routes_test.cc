// GET /slots and POST /slots/{id} (llama.cpp's; server/slot_view.h): seats numbered 0..--max-seqs-1, a
// running request's seat showing its settings and progress, ?fail_on_no_slot answering 503 while every seat
// is taken, and the slot actions refused with 501 without --slot-save-path (server/slot_files.h; their
// files: slot_files_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "e2e_util.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

class SlotsRoutesTest : public SharedServerTest<SlotsRoutesTest> {
 public:
  static std::string Model() { return SlowModel(); }
  static std::vector<std::string> Args() { return {"-t", "1", "--max-seqs", "2"}; }
};

nlohmann::json GetSlots(int port) {
  const HttpResponse r = Request(port, "GET", "/slots", "");
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : nlohmann::json::array();
}

int BusySeats(const nlohmann::json& slots) {
  int busy = 0;
  for (const nlohmann::json& slot : slots) busy += slot["is_processing"].get<bool>() ? 1 : 0;
  return busy;
}

// Polls /slots until `busy` seats are taken; the last list seen (empty after ~10 s without).
nlohmann::json WaitForBusySeats(int port, int busy) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    nlohmann::json slots = GetSlots(port);
    if (BusySeats(slots) == busy) return slots;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ADD_FAILURE() << "never saw " << busy << " busy seats";
  return nlohmann::json::array();
}

nlohmann::json LongCompletion(double temperature) {
  return {
      {"prompt", "Once upon a time"}, {"n_predict", 200}, {"temperature", temperature}, {"ignore_eos", true}};
}

TEST_F(SlotsRoutesTest, IdleSeatsShowTheDefaults) {
  const nlohmann::json slots = GetSlots(port());
  ASSERT_EQ(slots.size(), 2u) << slots;
  const HttpResponse props = Request(port(), "GET", "/props", "");
  ASSERT_EQ(props.status, 200);
  const nlohmann::json defaults = props.Json()["default_generation_settings"];
  for (size_t i = 0; i < slots.size(); ++i) {
    const nlohmann::json& slot = slots[i];
    EXPECT_EQ(slot["id"], i);
    EXPECT_EQ(slot["id_task"], -1);
    EXPECT_FALSE(slot["is_processing"].get<bool>());
    EXPECT_EQ(slot["n_ctx"], defaults["n_ctx"]);
    EXPECT_EQ(slot["params"], defaults["params"]);
    EXPECT_FALSE(slot["next_token"]["has_next_token"].get<bool>());
  }
  EXPECT_EQ(Request(port(), "GET", "/slots?fail_on_no_slot=1", "").status, 200);
}

TEST_F(SlotsRoutesTest, RunningRequestsTakeSeatsAndGiveThemBack) {
  const int first = SendAndLeaveOpen(port(), "/completion", LongCompletion(0.37));
  ASSERT_GE(first, 0);
  const nlohmann::json one = WaitForBusySeats(port(), 1);
  ASSERT_EQ(one.size(), 2u);
  const nlohmann::json& seat = one[0]["is_processing"].get<bool>() ? one[0] : one[1];
  EXPECT_EQ(seat["id"], 0) << one;  // the lowest free seat
  EXPECT_GE(seat["id_task"].get<int64_t>(), 0);
  EXPECT_NEAR(seat["params"]["temperature"].get<double>(), 0.37, 1e-6) << seat;
  EXPECT_EQ(seat["params"]["n_predict"], 200) << seat;
  EXPECT_TRUE(seat["params"]["ignore_eos"].get<bool>()) << seat;
  EXPECT_GT(seat["n_prompt_tokens"].get<int>(), 0) << seat;
  const nlohmann::json& next = seat["next_token"];
  EXPECT_TRUE(next["has_next_token"].get<bool>());
  EXPECT_EQ(next["n_decoded"].get<int>() + next["n_remain"].get<int>(), 200) << seat;
  EXPECT_EQ(Request(port(), "GET", "/slots?fail_on_no_slot=1", "").status, 200);  // one seat is free

  const int second = SendAndLeaveOpen(port(), "/completion", LongCompletion(0.5));
  ASSERT_GE(second, 0);
  const nlohmann::json two = WaitForBusySeats(port(), 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NE(two[0]["id_task"], two[1]["id_task"]);
  EXPECT_NEAR(two[1]["params"]["temperature"].get<double>(), 0.5, 1e-6) << two;
  const HttpResponse full = Request(port(), "GET", "/slots?fail_on_no_slot=1", "");
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_EQ(full.Json()["error"]["type"], "unavailable_error") << full.body;

  // The clients go away: their requests are cancelled and the seats are free again.
  close(first);
  close(second);
  WaitForBusySeats(port(), 0);
  EXPECT_EQ(Request(port(), "GET", "/slots?fail_on_no_slot=1", "").status, 200);
}

TEST_F(SlotsRoutesTest, SlotActionsNeedASavePath) {
  // llama.cpp's answer to every slot action of a server started without --slot-save-path.
  const HttpResponse save = Request(port(), "POST", "/slots/0?action=save", R"({"filename": "a.bin"})");
  EXPECT_EQ(save.status, 501) << save.body;
  EXPECT_EQ(save.Json()["error"]["type"], "not_supported_error") << save.body;
  EXPECT_NE(save.body.find("--slot-save-path"), std::string::npos) << save.body;
  EXPECT_EQ(Request(port(), "POST", "/slots/1?action=erase", "").status, 501);
  EXPECT_EQ(Request(port(), "POST", "/slots/0?action=delete", "").status, 501);
}

}  // namespace
}  // namespace lockstep::server::testing
