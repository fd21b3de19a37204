#include "engine/request_queue.h"

#include <algorithm>
#include <string>
#include <utility>

namespace lockstep {

void EventChannel::Push(TokenEvent event) {
  const bool last = event.last();
  if (callback_) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) return;
      finished_ = last;
    }
    callback_(std::move(event));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = last;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

std::optional<TokenEvent> EventChannel::Next(std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this] { return !events_.empty() || finished_; };
  if (timeout) {
    if (!cv_.wait_for(lock, *timeout, ready)) return std::nullopt;
  } else {
    cv_.wait(lock, ready);
  }
  if (events_.empty()) return std::nullopt;  // the stream has ended
  TokenEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

std::optional<TokenEvent> EventChannel::TryNext() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.empty()) return std::nullopt;
  TokenEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

bool EventChannel::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

Status Inbox::PushGroup(std::vector<PendingRequest> group) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return Unavailable("the engine is shutting down and accepts no new requests");
    // The rule of the header: the requests that would start at once (as many as there are free slots, first
    // come first) never count as waiting; the rest, this group's included, may be at most max_queue.
    const int64_t not_started = int64_t(requests_.size()) + engine_waiting_;
    const int64_t free_slots = std::max<int64_t>(0, max_seqs_ - engine_slots_);
    const int64_t size = int64_t(group.size());
    if (not_started + size > max_queue_ + free_slots) {
      const int64_t waiting = std::max<int64_t>(0, not_started - free_slots);
      return ResourceExhausted("the waiting queue is full (" + std::to_string(waiting) + " requests waiting" +
                               (size > 1 ? ", " + std::to_string(size) + " in this group" : std::string()) +
                               ", max_queue " + std::to_string(max_queue_) + ")");
    }
    for (PendingRequest& pending : group) requests_.push_back(std::move(pending));
  }
  cv_.notify_all();
  return Status::Ok();
}

void Inbox::Cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(id);
  }
  cv_.notify_all();
}

Status Inbox::PushTask(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return Unavailable("the engine is shutting down");
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
  return Status::Ok();
}

void Inbox::Close(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_)
      drain_ = drain;
    else if (!drain)
      drain_ = false;  // a later non-draining close cancels what is left
    closed_ = true;
  }
  cv_.notify_all();
}

Inbox::Taken Inbox::Take(bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wait) {
    cv_.wait(lock, [this] { return !requests_.empty() || !cancels_.empty() || !tasks_.empty() || closed_; });
  }
  Taken taken;
  taken.requests = std::move(requests_);
  taken.cancels = std::move(cancels_);
  taken.tasks = std::move(tasks_);
  requests_.clear();
  cancels_.clear();
  tasks_.clear();
  taken.closed = closed_;
  taken.drain = drain_;
  // Requests move to the engine's own waiting list; count them there until SetEngineWaiting updates it.
  engine_waiting_ += int64_t(taken.requests.size());
  return taken;
}

void Inbox::SetEngineLoad(int64_t not_started, int64_t holding_slots) {
  std::lock_guard<std::mutex> lock(mutex_);
  engine_waiting_ = not_started;
  engine_slots_ = holding_slots;
}

}  // namespace lockstep
