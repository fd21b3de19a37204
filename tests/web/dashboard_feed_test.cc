// Unit tests of the dashboard's event feed: what an update carries and how the cursor moves.
#include "server/dashboard_feed.h"

#include <gtest/gtest.h>

namespace lockstep::server {
namespace {

StepRecord Record(int64_t step, std::vector<StepRecord::Chunk> chunks,
                  std::vector<StepRecord::Progress> held) {
  StepRecord r;
  r.step = step;
  r.start = std::chrono::steady_clock::now();
  r.duration_s = 0.002;
  for (const auto& c : chunks) (c.decode ? r.decode_rows : r.prefill_rows) += c.rows;
  r.attended_positions = 100;
  r.chunks = std::move(chunks);
  r.requests = std::move(held);
  return r;
}

StepRecord::Progress Held(RequestId id, StepRecord::State state, int generated) {
  StepRecord::Progress p;
  p.id = id;
  p.label = "req-" + std::to_string(id);
  p.state = state;
  p.prompt_tokens = 10;
  p.generated = generated;
  p.max_tokens = 20;
  p.submitted = std::chrono::steady_clock::now() - std::chrono::milliseconds(500);
  if (generated > 0) p.first_token = p.submitted + std::chrono::milliseconds(100);
  return p;
}

TEST(DashboardFeedTest, UpdatesCarryNewStepsRequestsAndFinishes) {
  StepTimeModel model;
  DashboardFeed feed(&model);
  EngineStats stats;
  stats.kv_blocks_total = 100;
  stats.kv_blocks_used = 7;
  stats.recurrent_slots_total = 4;
  stats.recurrent_slots_used = 3;
  stats.recurrent_cache_slots_total = 8;
  stats.recurrent_cache_slots_used = 2;
  stats.recurrent_snapshot_hits_total = 5;
  stats.generation_tokens_total = 2;
  feed.OnStepRecord(Record(1, {{1, 10, false}, {2, 10, false}},
                           {Held(1, StepRecord::State::kDecode, 1), Held(2, StepRecord::State::kDecode, 1),
                            Held(3, StepRecord::State::kWaiting, 0)}),
                    stats);
  stats.generation_tokens_total = 4;
  feed.OnStepRecord(Record(2, {{1, 1, true}, {2, 1, true}},
                           {Held(1, StepRecord::State::kDecode, 2), Held(2, StepRecord::State::kDecode, 2),
                            Held(3, StepRecord::State::kPreempted, 0)}),
                    stats);
  EXPECT_EQ(model.Fit().samples, 2);

  DashboardFeed::Cursor cursor;
  nlohmann::json u = feed.Update(cursor, stats, 100);
  ASSERT_EQ(u["steps"].size(), 2u);
  EXPECT_EQ(u["steps"][0]["prefill"], 20);
  EXPECT_EQ(u["steps"][1]["decode"], 2);
  EXPECT_EQ(u["steps"][1]["chunks"][1], nlohmann::json({2, 1, "d"}));
  EXPECT_EQ(u["steps"][0]["waiting"], nlohmann::json({3}));
  EXPECT_EQ(u["steps"][1]["preempted_waiting"], nlohmann::json({3}));
  EXPECT_EQ(u["steps_skipped"], 0);
  ASSERT_EQ(u["requests"].size(), 3u);
  EXPECT_EQ(u["requests"][0]["label"], "req-1");
  EXPECT_EQ(u["requests"][0]["generated"], 2);
  EXPECT_NEAR(u["requests"][0]["ttft_s"].get<double>(), 0.1, 1e-3);
  EXPECT_TRUE(u["requests"][0]["tokens_per_s"].is_number());
  EXPECT_TRUE(u["requests"][2]["ttft_s"].is_null());
  EXPECT_EQ(u["requests"][2]["state"], "preempted");
  EXPECT_EQ(u["engine"]["kv_blocks_used"], 7);
  EXPECT_EQ(u["engine"]["recurrent_slots_total"], 4);
  EXPECT_EQ(u["engine"]["recurrent_cache_slots_total"], 8);
  EXPECT_EQ(u["engine"]["recurrent_cache_slots_used"], 2);
  EXPECT_EQ(u["engine"]["recurrent_snapshot_hits_total"], 5);
  EXPECT_EQ(u["engine"]["recurrent_slots_used"], 3);
  EXPECT_TRUE(u["engine"]["prefix_cache_hit_ratio"].is_null());  // no prefix cache lookups yet
  EXPECT_EQ(cursor.step, 2);

  // Nothing new: no steps again; a finish shows up once, with its label, and leaves the request list.
  RequestTiming timing;
  timing.generated_tokens = 3;
  timing.ttft_s = 0.1;
  timing.tpot_s = 0.01;
  feed.OnRequestFinished(1, FinishReason::kLength, timing);
  u = feed.Update(cursor, stats, 100);
  EXPECT_EQ(u["steps"].size(), 0u);
  ASSERT_EQ(u["finished"].size(), 1u);
  EXPECT_EQ(u["finished"][0]["label"], "req-1");
  EXPECT_EQ(u["finished"][0]["finish_reason"], "length");
  EXPECT_EQ(u["requests"].size(), 2u);
  EXPECT_EQ(feed.Update(cursor, stats, 100)["finished"].size(), 0u);

  stats.prefix_cache_queries_total = 40;
  stats.prefix_cache_hits_total = 10;
  EXPECT_DOUBLE_EQ(feed.Update(cursor, stats, 100)["engine"]["prefix_cache_hit_ratio"].get<double>(), 0.25);
}

TEST(DashboardFeedTest, ThrottledUpdatesSendTheNewestStepsAndCountTheRest) {
  DashboardFeed feed(nullptr);
  EngineStats stats;
  for (int64_t s = 1; s <= 50; ++s) feed.OnStepRecord(Record(s, {{1, 1, true}}, {}), stats);
  DashboardFeed::Cursor cursor;
  nlohmann::json u = feed.Update(cursor, stats, 8);
  ASSERT_EQ(u["steps"].size(), 8u);
  EXPECT_EQ(u["steps"][0]["step"], 43);
  EXPECT_EQ(u["steps_skipped"], 42);
  // More steps than the buffer keeps arrive between two updates: the lost ones count as skipped too.
  for (int64_t s = 51; s <= 50 + int64_t(DashboardFeed::kMaxSteps) + 10; ++s) {
    feed.OnStepRecord(Record(s, {{1, 1, true}}, {}), stats);
  }
  u = feed.Update(cursor, stats, 8);
  EXPECT_EQ(u["steps"].back()["step"], 50 + int64_t(DashboardFeed::kMaxSteps) + 10);
  EXPECT_EQ(u["steps_skipped"].get<int64_t>() + 8, int64_t(DashboardFeed::kMaxSteps) + 10);
}

}  // namespace
}  // namespace lockstep::server
