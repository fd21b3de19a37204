// CancellationToken: callbacks run once, late registrations run at once, unregistered ones never run, and
// Cancel() from several threads at once is safe.
#include "client/cancellation.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace lockstep::client {
namespace {

TEST(CancellationTest, RunsCallbacksOnceAndLateOnesAtOnce) {
  CancellationToken token;
  int a = 0, b = 0, c = 0;
  token.Register([&] { ++a; });
  const uint64_t id = token.Register([&] { ++b; });
  token.Unregister(id);
  EXPECT_FALSE(token.cancelled());
  token.Cancel();
  token.Cancel();
  EXPECT_TRUE(token.cancelled());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(token.Register([&] { ++c; }), 0u);
  EXPECT_EQ(c, 1);
  {
    CancellationRegistration reg(nullptr, [] {});
  }  // a null token is allowed
}

TEST(CancellationTest, ConcurrentCancelAndUnregister) {
  for (int round = 0; round < 50; ++round) {
    CancellationToken token;
    std::atomic<int> runs{0};
    std::vector<std::unique_ptr<CancellationRegistration>> regs;
    for (int i = 0; i < 8; ++i)
      regs.push_back(std::make_unique<CancellationRegistration>(&token, [&] { ++runs; }));
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back([&] { token.Cancel(); });
    regs.clear();  // unregistering while Cancel() may be running callbacks
    for (auto& t : threads) t.join();
    EXPECT_LE(runs.load(), 8);
  }
}

}  // namespace
}  // namespace lockstep::client
