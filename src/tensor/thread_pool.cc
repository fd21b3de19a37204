#include "tensor/thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "base/status.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LOCKSTEP_PAUSE() _mm_pause()
#else
#define LOCKSTEP_PAUSE() std::this_thread::yield()
#endif

namespace lockstep {
namespace {

// Spin iterations (pause instructions) before a worker parks / the caller starts yielding. A decode step
// issues a few hundred loops back to back, so a short spin avoids a futex round trip per loop.
constexpr int kSpinIterations = 1 << 14;
// Pause instructions the caller waits, after its own share, before running the shares that workers have not
// started yet (a worker descheduled on a busy machine would otherwise stall the whole loop for a time slice).
constexpr int kStealAfterSpins = 1 << 10;

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  std::byte* Get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      size_ = (bytes + 63) / 64 * 64;
      data_ = static_cast<std::byte*>(std::aligned_alloc(64, size_));
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

struct ThreadPool::Impl {
  int size = 1;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  // claimed[w] == generation once share w of the current loop has been taken (by worker w or by the caller).
  std::unique_ptr<std::atomic<uint64_t>[]> claimed;
  int64_t tasks = 0;
  const std::function<void(int64_t, int)>* fn = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // guarded by mu
  ScratchBuffer caller_scratch;
  std::vector<ScratchBuffer> worker_scratch;

  // Share w is the contiguous task range [w * tasks / size, (w + 1) * tasks / size), always run as
  // fn(task, w) whichever thread executes it, so results and per-worker scratch use never depend on timing.
  // Runs it if this thread is the first to claim it for loop `current`.
  void TryRunShare(int worker, uint64_t current) {
    uint64_t expected = current - 1;
    if (!claimed[worker].compare_exchange_strong(expected, current, std::memory_order_acq_rel)) return;
    const int64_t begin = tasks * worker / size, end = tasks * (worker + 1) / size;
    for (int64_t t = begin; t < end; ++t) (*fn)(t, worker);
    pending.fetch_sub(1, std::memory_order_acq_rel);
  }

  void WorkerLoop(int worker) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t current = generation.load(std::memory_order_acquire);
      for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
        LOCKSTEP_PAUSE();
        current = generation.load(std::memory_order_acquire);
      }
      if (current == seen) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || generation.load(std::memory_order_acquire) != seen; });
        if (stop) return;
        current = generation.load(std::memory_order_acquire);
      }
      seen = current;
      TryRunShare(worker, current);
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>()) {
  LOCKSTEP_CHECK(threads >= 1);
  impl_->size = threads;
  impl_->worker_scratch = std::vector<ScratchBuffer>(threads);
  impl_->claimed = std::make_unique<std::atomic<uint64_t>[]>(threads);
  for (int w = 0; w < threads; ++w) impl_->claimed[w].store(0);
  for (int w = 1; w < threads; ++w) impl_->threads.emplace_back([this, w] { impl_->WorkerLoop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

int ThreadPool::size() const { return impl_->size; }

void ThreadPool::Run(int64_t tasks, const std::function<void(int64_t task, int worker)>& fn) {
  if (tasks <= 0) return;
  Impl& p = *impl_;
  if (p.size == 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  p.tasks = tasks;
  p.fn = &fn;
  p.pending.store(p.size - 1, std::memory_order_relaxed);
  uint64_t current;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    current = p.generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  p.cv.notify_all();
  for (int64_t t = 0; t < tasks / p.size; ++t) fn(t, 0);  // share 0
  for (int spin = 0; p.pending.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin == kStealAfterSpins) {
      for (int w = 1; w < p.size; ++w) p.TryRunShare(w, current);
    } else if (spin < kSpinIterations) {
      LOCKSTEP_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
  p.fn = nullptr;
}

std::byte* ThreadPool::CallerScratch(size_t bytes) { return impl_->caller_scratch.Get(bytes); }

std::byte* ThreadPool::WorkerScratch(int worker, size_t bytes) {
  LOCKSTEP_CHECK(worker >= 0 && worker < impl_->size);
  return impl_->worker_scratch[worker].Get(bytes);
}

}  // namespace lockstep
