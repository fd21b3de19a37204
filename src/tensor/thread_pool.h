// ThreadPool: a fixed set of persistent workers that run one parallel loop at a time for the calling thread.
// Run(n, fn) calls fn(task, worker) for every task in [0, n) spread over the workers (the caller is worker 0)
// and returns when all are done. Each thread claims small chunks of its own contiguous share (uncontended),
// then takes chunks left in the others' shares, so a slow or descheduled worker leaves its share to the
// others; fn must make each task's result independent of which worker runs it (the worker index is for
// choosing scratch, never for results). One caller at a time (the engine thread); not reentrant (fn must not
// call Run). Workers spin briefly after a loop, then park on a condition variable. The pool also owns scratch
// arenas for kernels (no per-call heap allocation in steady state): one for the caller, one per worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace lockstep {

// `requested` if positive, else the machine's hardware concurrency (at least 1): what "-t 0" means
// everywhere.
int ThreadsOrHardware(int requested);

class ThreadPool {
 public:
  // `threads` >= 1 workers in all, the calling thread included.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Runs fn(task, worker) for task in [0, tasks); worker in [0, size()).
  void Run(int64_t tasks, const std::function<void(int64_t task, int worker)>& fn);

  // A 64-byte-aligned buffer of at least `bytes`, owned by the pool, for the calling thread (outside Run, or
  // read-only inside it). Valid until the next CallerScratch call; grows, never shrinks; contents
  // unspecified.
  std::byte* CallerScratch(size_t bytes);
  // The same for `worker`, to be called by that worker inside Run (workers never share one).
  std::byte* WorkerScratch(int worker, size_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
