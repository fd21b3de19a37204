#include "tensor/thread_pool.h"

#include <gtest/gtest.h>

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

TEST(ThreadPool, StaticSplitAssignsTasksByIndex) {
  ThreadPool pool(3);
  for (int repeat = 0; repeat < 50; ++repeat) {
    std::vector<int> owner(9, -1);
    pool.Run(9, [&](int64_t task, int worker) { owner[task] = worker; });
    EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  }
}

// Shares whose worker is slow to start may be run by the caller, but always with the owner's worker id.
TEST(ThreadPool, WorkerIdsFollowTheStaticSplitEvenWhenWorkersAreSlow) {
  ThreadPool pool(3);
  for (int repeat = 0; repeat < 200; ++repeat) {
    std::vector<int> owner(7, -1);
    pool.Run(7, [&](int64_t task, int worker) {
      if (repeat % 2 == 0 && worker == 2) std::this_thread::sleep_for(std::chrono::microseconds(50));
      owner[task] = worker;
    });
    ASSERT_EQ(owner, (std::vector<int>{0, 0, 1, 1, 2, 2, 2})) << repeat;
  }
}

TEST(ThreadPool, ManyShortLoopsAndParkedWorkersWakeUp) {
  ThreadPool pool(2);
  int64_t total = 0;
  std::vector<int64_t> partial(2);
  for (int step = 0; step < 2000; ++step) {
    partial = {0, 0};
    pool.Run(2, [&](int64_t task, int worker) { partial[worker] += task + 1; });
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

}  // namespace
}  // namespace lockstep
