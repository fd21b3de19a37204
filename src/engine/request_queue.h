// The engine's only cross-thread queues, each guarded by its own mutex:
// - Inbox: submitters → engine thread. New requests, cancellations, tasks (work on the engine's own state:
//   a saved prefix's KV copied out or in), and the shutdown flag. The engine thread takes everything between
//   steps, and sleeps on it when it has no work. Admission: a request is accepted
//   while the requests not yet started (in the inbox or the engine's waiting list) are fewer than max_queue
//   plus the sequence slots still free (max_seqs less the sequences running or preempted). So a request that
//   will start at once never counts as waiting, whether or not the engine thread has taken it yet, and
//   max_queue 0 means "no waiting: only as many requests as can run". A group (n > 1, best_of, fan-out)
//   follows the same rule with all its members counted: accepted whole when, with it, at most max_queue
//   requests would wait (those that fit in the free slots start at once), refused whole otherwise.
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
  Inbox(int max_queue, int max_seqs) : max_queue_(max_queue), max_seqs_(max_seqs) {}

  // Submitter side: pushes a group of one or more requests at once (the engine takes it in one Take): all,
  // or none (ResourceExhausted) when more than max_queue requests would then wait (see above); Unavailable
  // after Close().
  Status PushGroup(std::vector<PendingRequest> group);
  void Cancel(RequestId id);
  // A task for the engine thread, run between steps (after that Take's requests and cancellations).
  // Unavailable after Close(); a task accepted before it still runs.
  Status PushTask(std::function<void()> task);
  // Stops accepting; `drain` says whether queued/running requests should finish (true) or be cancelled.
  void Close(bool drain);

  struct Taken {
    std::vector<PendingRequest> requests;
    std::vector<RequestId> cancels;
    std::vector<std::function<void()>> tasks;
    bool closed = false;
    bool drain = false;
  };
  // Engine side: takes everything queued. When `wait` is set, first sleeps until something arrives or the
  // inbox is closed.
  Taken Take(bool wait);
  // Engine side, after taking requests and after each step: how many accepted requests have not started yet,
  // and how many sequences hold a slot (running, or preempted and due to resume).
  void SetEngineLoad(int64_t not_started, int64_t holding_slots);

 private:
  const int max_queue_;
  const int max_seqs_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PendingRequest> requests_;
  std::vector<RequestId> cancels_;
  std::vector<std::function<void()>> tasks_;
  int64_t engine_waiting_ = 0;  // accepted, taken by the engine, not started
  int64_t engine_slots_ = 0;    // sequences running or preempted
  bool closed_ = false;
  bool drain_ = false;
};

}  // namespace lockstep
