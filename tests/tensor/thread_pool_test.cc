#include "tensor/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace lockstep {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceWithValidWorkerIds) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t tasks : {0, 1, 2, 3, 7, 100, 1001}) {
      std::vector<std::atomic<int>> count(tasks);
      std::atomic<bool> bad_worker{false};
      pool.Run(tasks, [&](int64_t task, int worker) {
        count[task].fetch_add(1);
        if (worker < 0 || worker >= threads) bad_worker = true;
      });
      for (int64_t t = 0; t < tasks; ++t)
        ASSERT_EQ(count[t].load(), 1) << threads << " " << tasks << " " << t;
      EXPECT_FALSE(bad_worker);
    }
  }
}

// A worker stuck in a task does not hold up the rest of the loop: the other threads claim what is left.
TEST(ThreadPool, AStuckWorkerLeavesTheRestOfTheLoopToTheOthers) {
  ThreadPool pool(3);
  for (int repeat = 0; repeat < 20; ++repeat) {
    constexpr int64_t kTasks = 64;
    std::vector<std::atomic<int>> count(kTasks);
    std::atomic<int64_t> others_done{0};
    std::atomic<bool> timed_out{false};
    pool.Run(kTasks, [&](int64_t task, int worker) {
      if (worker == 1) {  // blocks until the others have run most of the loop
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (others_done.load() < kTasks * 3 / 4) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            break;
          }
          std::this_thread::yield();
        }
      } else {
        others_done.fetch_add(1);
      }
      count[task].fetch_add(1);
    });
    EXPECT_FALSE(timed_out) << repeat;
    for (int64_t t = 0; t < kTasks; ++t) ASSERT_EQ(count[t].load(), 1) << repeat << " " << t;
  }
}

// Loops of different sizes back to back: a worker that wakes late never runs a task of a finished loop.
TEST(ThreadPool, BackToBackLoopsRunEachTaskOfEachLoopOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> count(64);
  for (int loop = 0; loop < 3000; ++loop) {
    const int64_t tasks = loop % 3 == 0 ? 2 : loop % 3 == 1 ? 17 : 64;
    for (auto& c : count) c.store(0);
    pool.Run(tasks, [&, loop](int64_t task, int) { count[task].fetch_add(loop + 1); });
    for (int64_t t = 0; t < 64; ++t) ASSERT_EQ(count[t].load(), t < tasks ? loop + 1 : 0) << loop << " " << t;
  }
}

TEST(ThreadPool, ManyShortLoopsAndParkedWorkersWakeUp) {
  ThreadPool pool(2);
  int64_t total = 0;
  std::vector<int64_t> partial(2);
  for (int step = 0; step < 2000; ++step) {
    partial = {0, 0};
    pool.Run(2, [&](int64_t task, int) { partial[task] += task + 1; });
    total += partial[0] + partial[1];
  }
  EXPECT_EQ(total, 2000 * 3);
}

TEST(ThreadPool, ScratchIsAlignedAndGrows) {
  ThreadPool pool(2);
  std::byte* a = pool.CallerScratch(10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  a[9] = std::byte{1};
  EXPECT_EQ(pool.CallerScratch(5), a);  // no reallocation for a smaller request
  std::byte* b = pool.CallerScratch(1 << 20);
  b[(1 << 20) - 1] = std::byte{2};
  pool.Run(2, [&](int64_t, int worker) {
    std::byte* s = pool.WorkerScratch(worker, 4096);
    s[4095] = std::byte{3};
  });
}

TEST(ThreadPool, ThreadsOrHardwareKeepsAPositiveCountAndDefaultsToTheMachine) {
  EXPECT_EQ(ThreadsOrHardware(3), 3);
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(ThreadsOrHardware(0), machine);
  EXPECT_EQ(ThreadsOrHardware(-2), machine);
}

}  // namespace
}  // namespace lockstep
