#include "server/slot_view.h"

#include <algorithm>

#include "base/status.h"

namespace lockstep::server {
namespace {

std::string JobOf(const std::string& label) { return label.substr(0, label.rfind('#')); }

}  // namespace

SlotView::SlotView(int seats, bool keep_tokens)
    : seats_(static_cast<size_t>(std::max(seats, 1))), keep_tokens_(keep_tokens) {}

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
    if (!running) Vacate(seat);
  }
  for (const StepRecord::Progress& p : record.requests) {
    if (p.state != StepRecord::State::kPrefill && p.state != StepRecord::State::kDecode) continue;
    Seat* seat = nullptr;
    for (Seat& s : seats_) {
      if (s.busy && s.id == p.id) seat = &s;
    }
    if (seat == nullptr) seat = TakeSeat(p.id, JobOf(p.label));
    if (seat == nullptr) continue;  // more running than seats: not expected (max_seqs bounds both)
    seat->prompt_tokens = p.prompt_tokens;
    seat->generated = p.generated;
    seat->max_tokens = p.max_tokens;
  }
}

void SlotView::Vacate(Seat& seat) {
  Seat vacated;
  vacated.last_id = seat.id;
  vacated.tokens = std::move(seat.tokens);
  seat = std::move(vacated);
}

void SlotView::OnRequestFinished(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Seat& seat : seats_) {
    if (seat.busy && seat.id == id) Vacate(seat);
  }
}

SlotView::Seat* SlotView::TakeSeat(RequestId id, const std::string& job) {
  const auto it = jobs_.find(job);
  Seat* seat = FreeSeat(it != jobs_.end() ? it->second.preferred_seat : -1);
  if (seat == nullptr) return nullptr;
  seat->busy = true;
  seat->id = id;
  seat->job = job;
  return seat;
}

SlotView::Seat* SlotView::FreeSeat(int preferred) {
  if (preferred >= 0 && preferred < static_cast<int>(seats_.size()) &&
      !seats_[static_cast<size_t>(preferred)].busy) {
    return &seats_[static_cast<size_t>(preferred)];
  }
  const auto free = std::find_if(seats_.begin(), seats_.end(), [](const Seat& s) { return !s.busy; });
  return free != seats_.end() ? &*free : nullptr;
}

int SlotView::FindSeat(RequestId id) const {
  for (size_t i = 0; i < seats_.size(); ++i) {
    if (seats_[i].busy && seats_[i].id == id) return static_cast<int>(i);
  }
  // A request preempted and resumed elsewhere left its old seat earlier: the one it holds comes first.
  for (size_t i = 0; i < seats_.size(); ++i) {
    if (!seats_[i].busy && seats_[i].last_id == id) return static_cast<int>(i);
  }
  return -1;
}

void SlotView::RecordTokens(RequestId id, std::vector<int32_t> tokens, int preferred_seat) {
  if (!keep_tokens_) tokens.clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (const int known = FindSeat(id); known >= 0) {
    seats_[static_cast<size_t>(known)].tokens = std::move(tokens);
    return;
  }
  // It ended before a step reported it running: the preferred seat stands for it when idle, else the lowest.
  Seat* idle = FreeSeat(preferred_seat);
  if (idle == nullptr) return;
  *idle = Seat{};
  idle->last_id = id;
  idle->tokens = std::move(tokens);
}

std::vector<int32_t> SlotView::SeatTokens(int seat) const {
  std::lock_guard<std::mutex> lock(mu_);
  LOCKSTEP_CHECK(seat >= 0 && seat < static_cast<int>(seats_.size()));
  return seats_[static_cast<size_t>(seat)].tokens;
}

void SlotView::SetSeatTokens(int seat, std::vector<int32_t> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  LOCKSTEP_CHECK(seat >= 0 && seat < static_cast<int>(seats_.size()));
  seats_[static_cast<size_t>(seat)].tokens = std::move(tokens);
}

void SlotView::Register(const std::string& label, const Request& base, int preferred_seat) {
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = jobs_[label];
  if (job.registrations++ == 0) {
    job.base = base;
    job.base.prompt_ids.clear();
    job.preferred_seat = preferred_seat;
  }
}

int SlotView::SeatOf(RequestId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return FindSeat(id);
}

int SlotView::SeatOfRunning(RequestId id, const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int known = FindSeat(id); known >= 0) return known;
  const Seat* seat = TakeSeat(id, job);  // OnStepRecord finds it by id and keeps it there
  return seat != nullptr ? static_cast<int>(seat - seats_.data()) : -1;
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
