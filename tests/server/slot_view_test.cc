// SlotView's seats without a server: which seat a request takes (the lowest free one, or its job's
// preferred one), what a seat remembers after its request (the tokens for slot files, kept only when
// asked), and where a preempted request's tokens go.
#include "server/slot_view.h"

#include <gtest/gtest.h>

namespace lockstep::server {
namespace {

StepRecord::Progress Running(RequestId id, const std::string& label) {
  StepRecord::Progress p;
  p.id = id;
  p.label = label;
  p.state = StepRecord::State::kDecode;
  return p;
}

StepRecord Step(std::vector<StepRecord::Progress> requests) {
  StepRecord record;
  record.requests = std::move(requests);  // by id, as the engine lists them
  return record;
}

TEST(SlotViewTest, RequestsTakeTheLowestFreeSeatOrTheirPreferredOne) {
  SlotView view(3);
  view.Register("a", Request{});
  view.Register("b", Request{}, /*preferred_seat=*/2);
  view.Register("c", Request{}, /*preferred_seat=*/2);  // taken by b: the lowest free instead
  view.Register("d", Request{}, /*preferred_seat=*/7);  // no such seat: the lowest free
  view.OnStepRecord(Step({Running(1, "a#0"), Running(2, "b#0"), Running(3, "c#0")}));
  EXPECT_EQ(view.SeatOf(1), 0);
  EXPECT_EQ(view.SeatOf(2), 2);
  EXPECT_EQ(view.SeatOf(3), 1);
  EXPECT_EQ(view.idle(), 0);
  view.OnRequestFinished(1);
  view.OnStepRecord(Step({Running(2, "b#0"), Running(3, "c#0"), Running(4, "d#0")}));
  EXPECT_EQ(view.SeatOf(4), 0);
  EXPECT_EQ(view.SeatOf(99), -1);
}

TEST(SlotViewTest, ASeatKeepsItsLastRequestsTokens) {
  SlotView view(2, /*keep_tokens=*/true);
  view.Register("a", Request{});
  view.OnStepRecord(Step({Running(1, "a#0")}));
  view.RecordTokens(1, {5, 6, 7});  // its last event may come before the engine says it finished
  view.OnRequestFinished(1);
  view.OnStepRecord(Step({}));
  EXPECT_EQ(view.SeatTokens(0), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(view.SeatOf(1), 0);  // until another request takes the seat
  EXPECT_EQ(view.idle(), 2);
  // The next request in that seat replaces them once it has finished.
  view.OnStepRecord(Step({Running(2, "a#1")}));
  EXPECT_EQ(view.SeatTokens(0), (std::vector<int32_t>{5, 6, 7}));
  view.OnRequestFinished(2);
  view.RecordTokens(2, {8});
  EXPECT_EQ(view.SeatTokens(0), (std::vector<int32_t>{8}));
  view.SetSeatTokens(1, {9, 9});
  EXPECT_EQ(view.SeatTokens(1), (std::vector<int32_t>{9, 9}));
  view.Unregister("a");
}

TEST(SlotViewTest, APreemptedRequestsTokensGoToTheSeatItFinishedIn) {
  SlotView view(2, /*keep_tokens=*/true);
  view.Register("x", Request{}, /*preferred_seat=*/1);
  view.Register("a", Request{}, /*preferred_seat=*/1);
  view.OnStepRecord(Step({Running(1, "x#0"), Running(2, "a#0")}));  // x: seat 1; a: seat 0
  ASSERT_EQ(view.SeatOf(2), 0);
  StepRecord::Progress preempted = Running(2, "a#0");
  preempted.state = StepRecord::State::kPreempted;
  view.OnStepRecord(Step({Running(1, "x#0"), preempted}));  // seat 0 left, remembering a
  view.OnRequestFinished(1);
  view.OnStepRecord(Step({Running(2, "a#0")}));  // a resumes in its preferred seat 1, free now
  EXPECT_EQ(view.SeatOf(2), 1);
  view.RecordTokens(2, {4});
  EXPECT_EQ(view.SeatTokens(1), (std::vector<int32_t>{4}));
  EXPECT_TRUE(view.SeatTokens(0).empty());
}

TEST(SlotViewTest, ARequestThatEndedUnseenTakesItsPreferredIdleSeat) {
  SlotView view(3, /*keep_tokens=*/true);
  view.RecordTokens(7, {1, 2}, /*preferred_seat=*/2);  // ended within its first step
  EXPECT_EQ(view.SeatOf(7), 2);
  EXPECT_EQ(view.SeatTokens(2), (std::vector<int32_t>{1, 2}));
  view.RecordTokens(8, {3});  // no preference: the lowest idle seat
  EXPECT_EQ(view.SeatOf(8), 0);
}

// The engine hands a step's tokens out before its step record: a stream's first chunk seats its request.
TEST(SlotViewTest, ARequestThatRanBeforeItsStepRecordTakesItsSeatAtOnce) {
  SlotView view(3);
  view.Register("a", Request{}, /*preferred_seat=*/1);
  view.Register("b", Request{});
  EXPECT_EQ(view.SeatOf(1), -1);
  EXPECT_EQ(view.SeatOfRunning(1, "a"), 1);
  EXPECT_EQ(view.SeatOfRunning(1, "a"), 1);
  view.OnStepRecord(Step({Running(1, "a#0"), Running(2, "b#0")}));  // the record keeps a where it is
  EXPECT_EQ(view.SeatOf(1), 1);
  EXPECT_EQ(view.SeatOf(2), 0);
  EXPECT_EQ(view.idle(), 1);
  view.OnRequestFinished(1);
  view.OnStepRecord(Step({Running(2, "b#0")}));
  EXPECT_EQ(view.SeatOfRunning(1, "a"), 1);  // finished: the seat it held, not a new one
  EXPECT_EQ(view.idle(), 2);
}

// A server without --slot-save-path: seats still say which request held them, but keep no tokens.
TEST(SlotViewTest, WithoutSlotFilesSeatsKeepNoTokens) {
  SlotView view(2);
  EXPECT_FALSE(view.keeps_tokens());
  view.Register("a", Request{});
  view.OnStepRecord(Step({Running(1, "a#0")}));
  view.RecordTokens(1, {5, 6, 7});
  view.OnRequestFinished(1);
  EXPECT_EQ(view.SeatOf(1), 0);
  EXPECT_TRUE(view.SeatTokens(0).empty());
  view.RecordTokens(2, {8}, /*preferred_seat=*/1);
  EXPECT_EQ(view.SeatOf(2), 1);
  EXPECT_TRUE(view.SeatTokens(1).empty());
}

}  // namespace
}  // namespace lockstep::server
