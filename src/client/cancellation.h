// CancellationToken: a one-shot flag that aborts work registered with it. Cancel() is safe from any thread
// (not from a POSIX signal handler: the CLI turns SIGINT into Cancel() through asio::signal_set). Callbacks
// run once, on the thread calling Cancel() (or at once in Register if already cancelled), outside the lock,
// so they must be short and thread-safe — typically asio::post() to the I/O executor. The token must outlive
// every CancellationRegistration made on it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace lockstep::client {

class CancellationToken {
 public:
  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Runs `fn` on Cancel(); if already cancelled, runs it now and returns 0. Otherwise returns a non-zero id.
  uint64_t Register(std::function<void()> fn);
  // Removes a callback; a no-op for 0, an unknown id or one that already ran. If Cancel() is running the
  // callbacks on another thread, waits for it to finish, so nothing the callback uses may go away under it.
  void Unregister(uint64_t id);

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::function<void()>> callbacks_;  // guarded by mutex_
  std::condition_variable done_cv_;
  std::thread::id running_;  // the thread running callbacks in Cancel(); guarded by mutex_
};

// RAII: registers on construction (token may be null: then nothing), unregisters on destruction.
class CancellationRegistration {
 public:
  CancellationRegistration(CancellationToken* token, std::function<void()> fn);
  ~CancellationRegistration();
  CancellationRegistration(const CancellationRegistration&) = delete;
  CancellationRegistration& operator=(const CancellationRegistration&) = delete;

 private:
  CancellationToken* token_;
  uint64_t id_ = 0;
};

}  // namespace lockstep::client
