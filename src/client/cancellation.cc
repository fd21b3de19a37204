#include "client/cancellation.h"

#include <utility>

namespace lockstep::client {

void CancellationToken::Cancel() {
  std::map<uint64_t, std::function<void()>> to_run;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
    to_run.swap(callbacks_);
    running_ = std::this_thread::get_id();
  }
  for (auto& [id, fn] : to_run) fn();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = std::thread::id();
  }
  done_cv_.notify_all();
}

uint64_t CancellationToken::Register(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cancelled_.load(std::memory_order_acquire)) {
      const uint64_t id = next_id_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();
  return 0;
}

void CancellationToken::Unregister(uint64_t id) {
  if (id == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (callbacks_.erase(id) > 0) return;
  done_cv_.wait(lock,
                [this] { return running_ == std::thread::id() || running_ == std::this_thread::get_id(); });
}

CancellationRegistration::CancellationRegistration(CancellationToken* token, std::function<void()> fn)
    : token_(token) {
  if (token_ != nullptr) id_ = token_->Register(std::move(fn));
}

CancellationRegistration::~CancellationRegistration() {
  if (token_ != nullptr) token_->Unregister(id_);
}

}  // namespace lockstep::client
