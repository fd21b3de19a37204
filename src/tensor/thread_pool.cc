#include "tensor/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "base/large_allocation.h"
#include "base/status.h"

// A spin-wait hint: a pause instruction where there is one, not a system call per spin (on AArch64 this was
// sched_yield, so a waiting worker made kSpinIterations system calls before it parked: ~17 ms of them on an
// x86 VM, where the same loop of sched_yield was timed).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LOCKSTEP_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LOCKSTEP_PAUSE() asm volatile("yield" ::: "memory")
#else
#define LOCKSTEP_PAUSE() std::this_thread::yield()
#endif

namespace lockstep {
namespace {

// Spin iterations (pause instructions) before a worker parks / the caller starts yielding. A decode step
// issues a few hundred loops back to back, so a short spin avoids a futex round trip per loop.
constexpr int kSpinIterations = 1 << 14;
// Chunks per thread a loop is cut into (at most; chunks shrink near a share's end): small enough that a slow
// or descheduled thread leaves most of its share to the others, large enough that claiming (one atomic
// operation per chunk) costs little.
constexpr int64_t kChunksPerThread = 8;

// A claim word: the generation in the high 32 bits, a task index (or count) in the low 32.
constexpr uint64_t Pack(uint64_t generation, uint64_t next) { return generation << 32 | next; }
constexpr uint64_t GenerationOf(uint64_t word) { return word >> 32; }
constexpr uint64_t NextOf(uint64_t word) { return word & 0xffffffffu; }

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { FreeLarge(data_); }

  std::byte* Get(size_t bytes) {
    if (bytes > size_) {
      FreeLarge(data_);
      size_ = 0;
      data_ = static_cast<std::byte*>(AllocateLarge(bytes));
      if (data_ == nullptr) throw std::bad_alloc();
      size_ = bytes;
    }
    return data_;
  }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

// One per thread, on its own cache line: the thread claims chunks of its own share here without contention;
// others touch it only to take what is left once their own share is done.
struct alignas(64) Lane {
  std::atomic<uint64_t> claim{0};  // Pack(generation, next unclaimed task of this lane's share)
  std::atomic<int64_t> done{0};    // tasks this thread has finished in the current loop
};

struct ThreadPool::Impl {
  int size = 1;
  std::vector<std::thread> threads;
  std::unique_ptr<Lane[]> lanes;
  alignas(64) std::atomic<uint64_t> generation{0};  // bumped once per loop; workers wait on it
  // Pack(generation, tasks) of the current loop. A thread runs tasks only after claiming them for the loop it
  // read, so a late worker never touches a finished loop.
  alignas(64) std::atomic<uint64_t> limit{0};
  // Tasks per claim in the current loop. Atomic (relaxed) because a late worker of the previous loop may read
  // it in Claim() while Run() writes the next loop's: it then fails its claim and discards the value.
  std::atomic<int64_t> chunk{1};
  const std::function<void(int64_t, int)>* fn = nullptr;  // valid while the loop has unfinished tasks
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // guarded by mu
  ScratchBuffer caller_scratch;
  std::vector<ScratchBuffer> worker_scratch;

  // Lane w's share of a loop of `tasks` is [tasks * w / size, tasks * (w + 1) / size).
  uint64_t ShareBegin(int lane, uint64_t tasks) const { return tasks * uint64_t(lane) / uint64_t(size); }

  // Claims the next chunk of `lane`'s share in loop `current`; false when none is left.
  bool Claim(int lane, uint64_t current, uint64_t tasks, uint64_t* begin, uint64_t* end) {
    const uint64_t share_end = ShareBegin(lane + 1, tasks);
    uint64_t word = lanes[lane].claim.load(std::memory_order_acquire);
    for (;;) {
      if (GenerationOf(word) != current || NextOf(word) >= share_end) return false;
      *begin = NextOf(word);
      // Chunks shrink to single tasks as the share runs out, so the loop's last claims are small and no
      // thread waits long at the end for another's chunk (heavy tasks, e.g. GEMM tiles, make that visible).
      const uint64_t left = share_end - *begin;
      *end = *begin + std::max<uint64_t>(
                          1, std::min<uint64_t>(uint64_t(chunk.load(std::memory_order_relaxed)), left / 4));
      if (lanes[lane].claim.compare_exchange_weak(word, Pack(current, *end), std::memory_order_acq_rel,
                                                  std::memory_order_acquire)) {
        return true;
      }
    }
  }

  // Runs chunks of loop `current` as `worker`: its own share first, then what the others have left.
  void RunChunks(uint64_t current, int worker) {
    const uint64_t limit_word = limit.load(std::memory_order_acquire);
    if (GenerationOf(limit_word) != current) return;
    const uint64_t tasks = NextOf(limit_word);
    int64_t ran = 0;
    for (int i = 0; i < size; ++i) {
      const int lane = (worker + i) % size;
      uint64_t begin, end;
      while (Claim(lane, current, tasks, &begin, &end)) {
        for (uint64_t t = begin; t < end; ++t) (*fn)(int64_t(t), worker);
        ran += int64_t(end - begin);
        lanes[worker].done.store(ran, std::memory_order_release);
      }
    }
  }

  int64_t Done() const {
    int64_t sum = 0;
    for (int w = 0; w < size; ++w) sum += lanes[w].done.load(std::memory_order_acquire);
    return sum;
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
      RunChunks(current, worker);
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>()) {
  LOCKSTEP_CHECK(threads >= 1);
  impl_->size = threads;
  impl_->worker_scratch = std::vector<ScratchBuffer>(threads);
  impl_->lanes = std::make_unique<Lane[]>(threads);
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

int ThreadsOrHardware(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int ThreadPool::size() const { return impl_->size; }

void ThreadPool::Run(int64_t tasks, const std::function<void(int64_t task, int worker)>& fn) {
  if (tasks <= 0) return;
  Impl& p = *impl_;
  if (p.size == 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  LOCKSTEP_CHECK(tasks < (int64_t(1) << 32));
  const uint64_t current = p.generation.load(std::memory_order_relaxed) + 1;
  p.fn = &fn;
  p.chunk.store(std::max<int64_t>(1, tasks / (kChunksPerThread * p.size)), std::memory_order_relaxed);
  for (int w = 0; w < p.size; ++w) {
    p.lanes[w].done.store(0, std::memory_order_relaxed);
    p.lanes[w].claim.store(Pack(current, p.ShareBegin(w, uint64_t(tasks))), std::memory_order_release);
  }
  p.limit.store(Pack(current, uint64_t(tasks)), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.generation.store(current, std::memory_order_release);
  }
  p.cv.notify_all();
  p.RunChunks(current, 0);
  for (int spin = 0; p.Done() != tasks; ++spin) {
    if (spin < kSpinIterations) {
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
