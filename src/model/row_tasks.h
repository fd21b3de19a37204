// Loops of the forward pass over the thread pool (per row, per task) and scratch growth, shared by the
// transformer's blocks (model/transformer*.cc), latent attention, DeltaNet and the experts. Header-only;
// the loops are as thread-safe as ThreadPool::Run (one caller at a time), `fn` runs on the pool's workers.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "tensor/thread_pool.h"

namespace lockstep {

// Below this many rows, per-row element-wise work runs on the calling thread (a pool round trip costs more).
inline constexpr int64_t kParallelRows = 8;

// pool.Run through a closure holding one reference, which fits std::function's small buffer: no heap
// allocation per call. fn(task, worker).
template <typename Fn>
void RunTasks(ThreadPool& pool, int64_t tasks, const Fn& fn) {
  pool.Run(tasks, [&fn](int64_t task, int worker) { fn(task, worker); });
}

// fn(row, worker) or fn(row) for every row in [0, rows): on the pool from `parallel_rows` rows, else on this
// thread.
template <typename Fn>
void ForEachRow(ThreadPool& pool, int64_t rows, const Fn& fn, int64_t parallel_rows = kParallelRows) {
  auto call = [&fn](int64_t r, int worker) {
    if constexpr (std::is_invocable_v<const Fn&, int64_t, int>) {
      fn(r, worker);
    } else {
      fn(r);
    }
  };
  if (rows < parallel_rows || pool.size() == 1) {
    for (int64_t r = 0; r < rows; ++r) call(r, 0);
    return;
  }
  RunTasks(pool, rows, call);
}

// Scratch that only grows: resized to n elements when smaller.
template <typename T>
void GrowTo(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace lockstep
