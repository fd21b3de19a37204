// DashboardFeed: what the dashboard's event stream (GET /dashboard/events, docs/server.md) carries — the
// engine's recent steps (rows split into prefill and decode, the requests in each, step time), where every
// held request stands (tokens so far / max, TTFT, tokens/s), finished requests with their finish reasons,
// and per-second throughput / TTFT / inter-token latency over the last minutes. It also feeds each step into
// the latency advisor's StepTimeModel.
//
// OnStepRecord / OnRequestFinished run on the engine thread and only copy into bounded buffers under a mutex
// (no I/O, no JSON); Update() runs on any thread. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "server/step_time_model.h"

namespace lockstep::server {

class DashboardFeed {
 public:
  static constexpr size_t kMaxSteps = 4096;     // steps kept for new subscribers
  static constexpr size_t kMaxFinished = 256;   // finished requests kept
  static constexpr int kHistorySeconds = 600;   // per-second series kept
  static constexpr size_t kMaxIdsPerStep = 64;  // waiting / preempted ids listed per step

  // `model` may be null; it must outlive the feed.
  explicit DashboardFeed(StepTimeModel* model);

  void OnStepRecord(const StepRecord& record, const EngineStats& stats);
  void OnRequestFinished(RequestId id, FinishReason reason, const RequestTiming& timing);

  // What a subscriber has seen so far.
  struct Cursor {
    int64_t step = 0;      // last step number sent
    int64_t finished = 0;  // finished requests sent (a running count)
    int64_t second = -1;   // last complete second of the series sent
  };
  // One event's JSON (see docs/server.md, "Dashboard feed"): what is newer than `cursor` — at most
  // `max_steps` of the newest steps (the count of those left out in "steps_skipped") — and `stats`' gauges;
  // moves the cursor.
  nlohmann::json Update(Cursor& cursor, const EngineStats& stats, size_t max_steps) const;
  // Seconds since the feed was made (the time base of "t" fields).
  double Now() const;

 private:
  struct Step {
    int64_t step = 0;
    double t = 0, duration_s = 0;
    int32_t prefill_rows = 0, decode_rows = 0;
    int64_t attended = 0;
    std::vector<StepRecord::Chunk> chunks;
    std::vector<RequestId> waiting, preempted_waiting, preempted_now;
  };
  struct Finished {
    RequestId id = 0;
    std::string label;
    FinishReason reason = FinishReason::kNone;
    RequestTiming timing;
    double t = 0;
  };
  struct Second {  // one second of the series
    int64_t tokens = 0, steps = 0, finished = 0, ttft_count = 0, itl_count = 0;
    double busy_s = 0, ttft_sum = 0, itl_sum = 0;
  };
  double Since(std::chrono::steady_clock::time_point t) const;
  Second& SecondAt(double t);

  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  StepTimeModel* model_;
  mutable std::mutex mu_;
  std::deque<Step> steps_;
  std::vector<StepRecord::Progress> requests_;  // as of the last step
  std::unordered_map<RequestId, std::string> labels_;
  std::deque<Finished> finished_;
  int64_t finished_count_ = 0;
  std::deque<std::pair<int64_t, Second>> seconds_;  // (second index, data), oldest first
  int64_t last_generation_total_ = 0;
};

}  // namespace lockstep::server
