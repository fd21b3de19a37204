#include "server/dashboard_feed.h"

#include <algorithm>
#include <cmath>

namespace lockstep::server {

using nlohmann::json;

namespace {

json Ids(const std::vector<RequestId>& ids) {
  json out = json::array();
  for (RequestId id : ids) out.push_back(id);
  return out;
}

// v rounded to `digits` decimals (dividing by a power of ten prints as the short decimal in JSON).
double Round(double v, int digits) {
  const double p = std::pow(10.0, digits);
  return std::round(v * p) / p;
}

}  // namespace

DashboardFeed::DashboardFeed(StepTimeModel* model) : model_(model) {}

double DashboardFeed::Since(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double>(t - origin_).count();
}

double DashboardFeed::Now() const { return Since(std::chrono::steady_clock::now()); }

DashboardFeed::Second& DashboardFeed::SecondAt(double t) {
  const int64_t index = int64_t(std::floor(std::max(0.0, t)));
  if (seconds_.empty() || seconds_.back().first < index) seconds_.emplace_back(index, Second{});
  while (seconds_.size() > size_t(kHistorySeconds) + 1) seconds_.pop_front();
  // Steps and finishes arrive in time order, so the slot is the last one (or, at a second's edge, close).
  for (auto it = seconds_.rbegin(); it != seconds_.rend(); ++it) {
    if (it->first <= index) return it->second;
  }
  return seconds_.front().second;
}

void DashboardFeed::OnStepRecord(const StepRecord& record, const EngineStats& stats) {
  if (model_ != nullptr) {
    model_->Add({double(record.decode_rows), double(record.prefill_rows), double(record.attended_positions)},
                record.duration_s);
  }
  Step step;
  step.step = record.step;
  step.t = Since(record.start);
  step.duration_s = record.duration_s;
  step.prefill_rows = record.prefill_rows;
  step.decode_rows = record.decode_rows;
  step.attended = record.attended_positions;
  step.chunks = record.chunks;
  step.preempted_now = record.preempted;
  for (const StepRecord::Progress& p : record.requests) {
    std::vector<RequestId>* list = p.state == StepRecord::State::kWaiting     ? &step.waiting
                                   : p.state == StepRecord::State::kPreempted ? &step.preempted_waiting
                                                                              : nullptr;
    if (list != nullptr && list->size() < kMaxIdsPerStep) list->push_back(p.id);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Second& second = SecondAt(step.t);
  second.steps += 1;
  second.busy_s += record.duration_s;
  second.tokens += std::max<int64_t>(0, stats.generation_tokens_total - last_generation_total_);
  last_generation_total_ = stats.generation_tokens_total;
  for (const StepRecord::Progress& p : record.requests) {
    if (!labels_.count(p.id)) labels_.emplace(p.id, p.label);
  }
  requests_ = record.requests;
  steps_.push_back(std::move(step));
  while (steps_.size() > kMaxSteps) steps_.pop_front();
}

void DashboardFeed::OnRequestFinished(RequestId id, FinishReason reason, const RequestTiming& timing) {
  std::lock_guard<std::mutex> lock(mu_);
  Finished f;
  f.id = id;
  f.reason = reason;
  f.timing = timing;
  f.t = Now();
  if (auto it = labels_.find(id); it != labels_.end()) {
    f.label = std::move(it->second);
    labels_.erase(it);
  }
  requests_.erase(std::remove_if(requests_.begin(), requests_.end(),
                                 [id](const StepRecord::Progress& p) { return p.id == id; }),
                  requests_.end());
  Second& second = SecondAt(f.t);
  second.finished += 1;
  if (timing.generated_tokens > 0) {
    second.ttft_sum += timing.ttft_s;
    second.ttft_count += 1;
  }
  if (timing.generated_tokens >= 2) {
    second.itl_sum += timing.tpot_s;
    second.itl_count += 1;
  }
  finished_.push_back(std::move(f));
  ++finished_count_;
  while (finished_.size() > kMaxFinished) finished_.pop_front();
}

json DashboardFeed::Update(Cursor& cursor, const EngineStats& stats, size_t max_steps) const {
  const auto now_tp = std::chrono::steady_clock::now();
  const double now = Since(now_tp);
  std::lock_guard<std::mutex> lock(mu_);
  json out;
  out["t"] = Round(now, 4);
  // Steps newer than the cursor, the newest max_steps of them.
  auto first = std::upper_bound(steps_.begin(), steps_.end(), cursor.step,
                                [](int64_t s, const Step& step) { return s < step.step; });
  const size_t fresh = size_t(steps_.end() - first);
  const size_t skip = fresh > max_steps ? fresh - max_steps : 0;
  json steps = json::array();
  for (auto it = first + std::ptrdiff_t(skip); it != steps_.end(); ++it) {
    json chunks = json::array();
    for (const StepRecord::Chunk& c : it->chunks) chunks.push_back({c.id, c.rows, c.decode ? "d" : "p"});
    steps.push_back({{"step", it->step},
                     {"t", Round(it->t, 6)},
                     {"ms", Round(it->duration_s * 1e3, 4)},
                     {"prefill", it->prefill_rows},
                     {"decode", it->decode_rows},
                     {"attended", it->attended},
                     {"chunks", std::move(chunks)},
                     {"waiting", Ids(it->waiting)},
                     {"preempted_waiting", Ids(it->preempted_waiting)},
                     {"preempted", Ids(it->preempted_now)}});
  }
  // A step that has left the buffer unseen counts as skipped too.
  const int64_t oldest_unsent = first == steps_.end() ? cursor.step : first->step - 1;
  out["steps_skipped"] = int64_t(skip) + std::max<int64_t>(0, oldest_unsent - cursor.step);
  if (!steps_.empty()) cursor.step = std::max(cursor.step, steps_.back().step);
  out["steps"] = std::move(steps);

  json requests = json::array();
  for (const StepRecord::Progress& p : requests_) {
    json r = {{"id", p.id},
              {"label", p.label},
              {"state", StepStateName(p.state)},
              {"prompt_tokens", p.prompt_tokens},
              {"generated", p.generated},
              {"max_tokens", p.max_tokens},
              {"preemptions", p.preemptions},
              {"age_s", Round(std::chrono::duration<double>(now_tp - p.submitted).count(), 4)},
              {"ttft_s", nullptr},
              {"tokens_per_s", nullptr}};
    if (p.first_token) {
      r["ttft_s"] = Round(std::chrono::duration<double>(*p.first_token - p.submitted).count(), 5);
      const double decoding = std::chrono::duration<double>(now_tp - *p.first_token).count();
      if (p.generated >= 2 && decoding > 0) r["tokens_per_s"] = Round((p.generated - 1) / decoding, 3);
    }
    requests.push_back(std::move(r));
  }
  out["requests"] = std::move(requests);

  json finished = json::array();
  const int64_t available = int64_t(finished_.size());
  const int64_t unsent = std::min<int64_t>(available, finished_count_ - cursor.finished);
  for (int64_t i = available - unsent; i < available; ++i) {
    const Finished& f = finished_[size_t(i)];
    const RequestTiming& t = f.timing;
    finished.push_back({{"id", f.id},
                        {"label", f.label},
                        {"finish_reason", FinishReasonName(f.reason)},
                        {"t", Round(f.t, 4)},
                        {"prompt_tokens", t.prompt_tokens},
                        {"generated", t.generated_tokens},
                        {"queue_s", Round(t.queue_s, 5)},
                        {"ttft_s", Round(t.ttft_s, 5)},
                        {"tpot_s", Round(t.tpot_s, 6)},
                        {"e2e_s", Round(t.e2e_s, 5)},
                        {"preemptions", t.preemptions}});
  }
  cursor.finished = finished_count_;
  out["finished"] = std::move(finished);

  // Complete seconds of the series not sent yet (the current second is still filling).
  json series = json::array();
  const int64_t current = int64_t(std::floor(now));
  int64_t last_sent = cursor.second;
  for (const auto& [index, s] : seconds_) {
    if (index <= cursor.second || index >= current) continue;
    series.push_back({{"second", index},
                      {"tokens", s.tokens},
                      {"steps", s.steps},
                      {"busy_s", Round(s.busy_s, 5)},
                      {"finished", s.finished},
                      {"ttft_s", s.ttft_count ? json(Round(s.ttft_sum / double(s.ttft_count), 5)) : json()},
                      {"itl_s", s.itl_count ? json(Round(s.itl_sum / double(s.itl_count), 6)) : json()}});
    last_sent = index;
  }
  cursor.second = std::max(last_sent, current - 1);  // seconds absent from the series had no activity
  out["series"] = std::move(series);

  out["engine"] = {{"running", stats.running},
                   {"waiting", stats.waiting},
                   {"kv_blocks_total", stats.kv_blocks_total},
                   {"kv_blocks_used", stats.kv_blocks_used},
                   {"kv_blocks_cached", stats.kv_blocks_cached},
                   {"kv_blocks_free", stats.kv_blocks_free},
                   {"block_tokens", stats.block_tokens},
                   {"recurrent_slots_total", stats.recurrent_slots_total},
                   {"recurrent_slots_used", stats.recurrent_slots_used},
                   {"recurrent_cache_slots_total", stats.recurrent_cache_slots_total},
                   {"recurrent_cache_slots_used", stats.recurrent_cache_slots_used},
                   {"recurrent_snapshot_hits_total", stats.recurrent_snapshot_hits_total},
                   {"prefix_caching", stats.prefix_caching},
                   {"prefix_cache_query_tokens", stats.prefix_cache_queries_total},
                   {"prefix_cache_hit_tokens", stats.prefix_cache_hits_total},
                   {"prefix_cache_hit_ratio",
                    stats.prefix_cache_queries_total > 0 ? json(stats.prefix_cache_hit_ratio()) : json()},
                   {"kv_block_evictions_total", stats.kv_block_evictions_total},
                   {"steps", stats.steps},
                   {"prompt_tokens_total", stats.prompt_tokens_total},
                   {"generation_tokens_total", stats.generation_tokens_total},
                   {"preemptions_total", stats.preemptions_total},
                   {"requests_submitted", stats.requests_submitted},
                   {"requests_rejected", stats.requests_rejected},
                   {"finished",
                    {{"stop", stats.requests_finished_stop},
                     {"length", stats.requests_finished_length},
                     {"cancelled", stats.requests_cancelled},
                     {"error", stats.requests_failed}}}};
  return out;
}

}  // namespace lockstep::server
