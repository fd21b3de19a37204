// RecurrentStatePool: slots handed out once each, given back, refused when exhausted; each slot's memory is
// its own and aligned.
#include "kv/recurrent_state_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

namespace lockstep {
namespace {

TEST(RecurrentStatePool, HandsOutEachSlotOnceUntilGivenBack) {
  auto pool = RecurrentStatePool::Create(/*state_floats=*/37, /*num_slots=*/3);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  RecurrentStatePool& p = **pool;
  EXPECT_EQ(p.num_free(), 3);
  const StateSlot a = p.Acquire(), b = p.Acquire(), c = p.Acquire();
  EXPECT_EQ(std::set<StateSlot>({a, b, c}).size(), 3u);
  EXPECT_EQ(p.Acquire(), kNoStateSlot);  // exhausted
  EXPECT_EQ(p.num_free(), 0);
  EXPECT_TRUE(p.taken(b));
  p.Release(b);
  EXPECT_FALSE(p.taken(b));
  EXPECT_EQ(p.num_free(), 1);
  EXPECT_EQ(p.Acquire(), b);
  // Disjoint, 64-byte aligned states: writing one leaves the others.
  for (StateSlot s : {a, b, c}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.data(s)) % 64, 0u);
    for (int i = 0; i < 37; ++i) p.data(s)[i] = float(s);
  }
  for (StateSlot s : {a, b, c}) {
    for (int i = 0; i < 37; ++i) EXPECT_EQ(p.data(s)[i], float(s));
  }
}

TEST(RecurrentStatePool, RefusesAnEmptyPool) {
  EXPECT_FALSE(RecurrentStatePool::Create(0, 4).ok());
  EXPECT_FALSE(RecurrentStatePool::Create(16, 0).ok());
}

}  // namespace
}  // namespace lockstep
