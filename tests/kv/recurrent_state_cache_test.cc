// RecurrentStateCache: snapshots come back bit for bit under their key, a stored key is only refreshed, and a
// full cache evicts the least recently stored or loaded snapshot, low-priority ones first (and only those for
// a low-priority store).
#include "kv/recurrent_state_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace lockstep {
namespace {

std::vector<float> State(float seed, int64_t floats) {
  std::vector<float> s(static_cast<size_t>(floats));
  for (size_t i = 0; i < s.size(); ++i) s[i] = seed + float(i) * 0.25f;
  return s;
}

TEST(RecurrentStateCache, LoadsWhatWasStored) {
  auto cache = RecurrentStateCache::Create(/*state_floats=*/37, /*num_slots=*/2);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  RecurrentStateCache& c = **cache;
  const std::vector<float> a = State(1, 37), b = State(-7, 37);
  std::vector<float> out(37, 0.0f);
  EXPECT_FALSE(c.Load(11, out.data()));
  EXPECT_EQ(out, std::vector<float>(37, 0.0f));  // untouched
  c.Store(11, a.data());
  c.Store(22, b.data());
  EXPECT_EQ(c.num_used(), 2);
  EXPECT_TRUE(c.Contains(11) && c.Contains(22) && !c.Contains(33));
  ASSERT_TRUE(c.Load(22, out.data()));
  EXPECT_EQ(out, b);
  ASSERT_TRUE(c.Load(11, out.data()));
  EXPECT_EQ(out, a);
  // A key already held names the same prefix: storing it again copies nothing.
  c.Store(11, b.data());
  ASSERT_TRUE(c.Load(11, out.data()));
  EXPECT_EQ(out, a);
  EXPECT_EQ(c.stores(), 2);
  EXPECT_EQ(c.loads(), 3);
  EXPECT_EQ(c.evictions(), 0);
}

TEST(RecurrentStateCache, EvictsTheLeastRecentlyUsed) {
  auto cache = RecurrentStateCache::Create(5, 2);
  ASSERT_TRUE(cache.ok());
  RecurrentStateCache& c = **cache;
  const std::vector<float> s1 = State(1, 5), s2 = State(2, 5), s3 = State(3, 5), s4 = State(4, 5);
  std::vector<float> out(5);
  c.Store(1, s1.data());
  c.Store(2, s2.data());
  ASSERT_TRUE(c.Load(1, out.data()));  // 2 is now the least recently used
  c.Store(3, s3.data());
  EXPECT_TRUE(c.Contains(1) && !c.Contains(2) && c.Contains(3));
  c.Store(1, s1.data());  // refreshed by a store too: 3 goes next
  c.Store(4, s4.data());
  EXPECT_TRUE(c.Contains(1) && !c.Contains(3) && c.Contains(4));
  EXPECT_EQ(c.evictions(), 2);
  EXPECT_EQ(c.num_used(), 2);
  ASSERT_TRUE(c.Load(4, out.data()));
  EXPECT_EQ(out, s4);  // the evicted snapshot's slot holds the new one whole
  ASSERT_TRUE(c.Load(1, out.data()));
  EXPECT_EQ(out, s1);
}

TEST(RecurrentStateCache, LowPrioritySnapshotsGoFirstAndEvictOnlyEachOther) {
  auto cache = RecurrentStateCache::Create(5, 3);
  ASSERT_TRUE(cache.ok());
  RecurrentStateCache& c = **cache;
  const std::vector<float> s = State(1, 5);
  std::vector<float> out(5);
  EXPECT_TRUE(c.Store(1, s.data()));
  EXPECT_TRUE(c.Store(2, s.data(), /*low_priority=*/true));
  EXPECT_TRUE(c.Store(3, s.data()));
  ASSERT_TRUE(c.Load(2, out.data()));  // most recently used, but low priority: evicted first
  EXPECT_TRUE(c.Store(4, s.data()));
  EXPECT_TRUE(c.Contains(1) && !c.Contains(2) && c.Contains(3) && c.Contains(4));
  EXPECT_FALSE(c.Store(5, s.data(), /*low_priority=*/true));  // every slot holds a normal one
  EXPECT_FALSE(c.Contains(5));
  EXPECT_EQ(c.evictions(), 1);
  // DropLowPriority leaves normal ones.
  c.DropLowPriority(4);
  EXPECT_TRUE(c.Contains(4));
  EXPECT_TRUE(c.Store(5, s.data()));  // evicts 1, the least recently used
  EXPECT_TRUE(!c.Contains(1) && c.Contains(5));
  c.DropLowPriority(3);
  EXPECT_EQ(c.num_used(), 3);
  EXPECT_FALSE(c.Store(6, s.data(), /*low_priority=*/true));
  EXPECT_FALSE(c.Contains(6));
}

TEST(RecurrentStateCache, DropLowPriorityFreesItsSlot) {
  auto cache = RecurrentStateCache::Create(5, 2);
  ASSERT_TRUE(cache.ok());
  RecurrentStateCache& c = **cache;
  const std::vector<float> s = State(1, 5);
  c.Store(1, s.data());
  c.Store(2, s.data(), /*low_priority=*/true);
  EXPECT_TRUE(c.Store(2, s.data(), /*low_priority=*/true));  // held: only marked used, still low priority
  c.DropLowPriority(2);
  EXPECT_FALSE(c.Contains(2));
  EXPECT_EQ(c.num_used(), 1);
  EXPECT_TRUE(c.Store(3, s.data(), /*low_priority=*/true));  // the freed slot, no eviction
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_TRUE(c.Store(3, s.data()));  // now normal
  EXPECT_FALSE(c.Store(4, s.data(), /*low_priority=*/true));
  EXPECT_TRUE(c.Store(1, s.data(), /*low_priority=*/true));  // a normal one stays normal
  c.DropLowPriority(1);
  EXPECT_TRUE(c.Contains(1));
}

TEST(RecurrentStateCache, RefusesEmptyShapes) {
  EXPECT_FALSE(RecurrentStateCache::Create(0, 4).ok());
  EXPECT_FALSE(RecurrentStateCache::Create(16, 0).ok());
  auto cache = RecurrentStateCache::Create(3, 4);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->bytes(), 4u * 64u);  // each slot aligned to 64 bytes
}

}  // namespace
}  // namespace lockstep
