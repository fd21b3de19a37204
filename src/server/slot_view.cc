#include "server/slot_view.h"

#include <algorithm>

#include "base/status.h"

namespace lockstep::server {
namespace {

std::string JobOf(const std::string& label) { return label.substr(0, label.rfind('#')); }

}  // namespace

SlotView::SlotView(int seats) : seats_(static_cast<size_t>(std::max(seats, 1))) {}

void SlotView::OnStepRecord(const StepRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  // Seats of requests no longer running (finished, preempted, cancelled) are freed first, so a request that
  // starts in the same step may take one.
  for (Seat& seat : seats_) {
    if (!seat.busy) continue;
    const auto it = std::lower_bound(record.requests.begin(), record.requests.end(), seat.id,
                                     [](const StepRecord::Progress& p, RequestId id) { return p.id < id; });
    const bool running =
        it != record.requests.end() && it->id == seat.id &&
        (it->state == StepRecord::State::kPrefill || it->state == StepRecord::State::kDecode);
    if (!running) seat = Seat{};
  }
  for (const StepRecord::Progress& p : record.requests) {
    if (p.state != StepRecord::State::kPrefill && p.state != StepRecord::State::kDecode) continue;
    Seat* seat = nullptr;
    for (Seat& s : seats_) {
      if (s.busy && s.id == p.id) seat = &s;
    }
    if (seat == nullptr) {
      const auto free = std::find_if(seats_.begin(), seats_.end(), [](const Seat& s) { return !s.busy; });
      if (free == seats_.end()) continue;  // more running than seats: not expected (max_seqs bounds both)
      seat = &*free;
      seat->busy = true;
      seat->id = p.id;
      seat->job = JobOf(p.label);
    }
    seat->prompt_tokens = p.prompt_tokens;
    seat->generated = p.generated;
    seat->max_tokens = p.max_tokens;
  }
}

void SlotView::OnRequestFinished(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Seat& seat : seats_) {
    if (seat.busy && seat.id == id) seat = Seat{};
  }
}

void SlotView::Register(const std::string& label, const Request& base) {
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = jobs_[label];
  if (job.registrations++ == 0) {
    job.base = base;
    job.base.prompt_ids.clear();
  }
}

void SlotView::Unregister(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = jobs_.find(label);
  LOCKSTEP_CHECK(it != jobs_.end());
  if (--it->second.registrations == 0) jobs_.erase(it);
}

int SlotView::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(seats_.begin(), seats_.end(), [](const Seat& s) { return !s.busy; }));
}

}  // namespace lockstep::server
