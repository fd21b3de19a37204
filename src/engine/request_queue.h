// The engine's only cross-thread queues, each guarded by its own mutex:
// - Inbox: submitters → engine thread. New requests (bounded by max_queue together with the engine's own
//   not-yet-started count), cancellations, and the shutdown flag. The engine thread takes everything between
//   steps, and sleeps on it when it has no work.
// - EventChannel: engine thread → one request's reader. Either a queue that RequestHandle reads (blocking
// with a
//   timeout, or non-blocking), or a callback that receives each event on the engine thread.
// Shared by shared_ptr so handles may outlive the engine (then Cancel is a no-op and the stream has ended).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/status.h"
#include "engine/request.h"

namespace lockstep {

class EventChannel {
 public:
  explicit EventChannel(std::function<void(TokenEvent)> callback = nullptr)
      : callback_(std::move(callback)) {}

  // Engine thread. After an event with last() true, further pushes are ignored.
  void Push(TokenEvent event);
  std::optional<TokenEvent> Next(std::optional<std::chrono::milliseconds> timeout);
  std::optional<TokenEvent> TryNext();
  bool finished() const;

 private:
  std::function<void(TokenEvent)> callback_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool finished_ = false;  // the last event was pushed
};

struct PendingRequest {
  RequestId id = 0;
  Request request;
  std::shared_ptr<EventChannel> channel;
  std::chrono::steady_clock::time_point submit_time;
};

class Inbox {
 public:
  explicit Inbox(int max_queue) : max_queue_(max_queue) {}

  // Submitter side. ResourceExhausted when max_queue requests are already waiting; Unavailable after Close().
  Status Push(PendingRequest pending);
  // Pushes a group at once (the engine takes it in one Take): all, or none when the queue has no room for
  // all of them.
  Status PushGroup(std::vector<PendingRequest> group);
  void Cancel(RequestId id);
  // Stops accepting; `drain` says whether queued/running requests should finish (true) or be cancelled.
  void Close(bool drain);

  struct Taken {
    std::vector<PendingRequest> requests;
    std::vector<RequestId> cancels;
    bool closed = false;
    bool drain = false;
  };
  // Engine side: takes everything queued. When `wait` is set, first sleeps until something arrives or the
  // inbox is closed.
  Taken Take(bool wait);
  // Engine side: how many accepted requests have not started yet (counted against max_queue with the queue).
  void SetEngineWaiting(int64_t waiting);

 private:
  const int max_queue_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PendingRequest> requests_;
  std::vector<RequestId> cancels_;
  int64_t engine_waiting_ = 0;
  bool closed_ = false;
  bool drain_ = false;
};

}  // namespace lockstep
