// KvCacheManager::ReleaseBefore (sliding windows): the released blocks go back to the pool, their entries
// stay as kNoBlock / null addresses at their indices, published ones remain findable by a new prompt, and
// Free, Publish and a fork's Share cope with the holes.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/kv_cache_manager.h"

namespace lockstep {
namespace {

constexpr int32_t kWindowBlock = 4;

std::unique_ptr<BlockPool> Pool(int64_t blocks) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_kv_head = 1;
  layout.head_dim = 2;
  layout.block_tokens = kWindowBlock;
  layout.dtype = KvDtype::kF32;
  return std::move(*BlockPool::Create(layout, blocks));
}

std::vector<int32_t> Tokens(int count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), 100);
  return t;
}

TEST(WindowRelease, ReleasedBlocksReturnAndStayCached) {
  auto pool = Pool(16);
  KvCacheManager kv(*pool, KvCacheOptions{true, 0});
  const std::vector<int32_t> tokens = Tokens(22);
  kv.Add(1);
  ASSERT_TRUE(kv.Admit(1, tokens, kv.Match(1, tokens), 22));
  ASSERT_TRUE(kv.PrepareWrite(1, 0, 22));
  kv.Publish(1, tokens, 22);
  EXPECT_EQ(pool->num_free(), 16 - 6);
  kv.ReleaseBefore(1, 13);  // blocks 0..2 hold positions 0..11, wholly below 13; block 3 stays
  EXPECT_EQ(pool->num_free(), 16 - 3);
  EXPECT_EQ(kv.table(1).num_blocks(), 6);  // positions keep their block indices
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(kv.table(1).block(b), kNoBlock);
    EXPECT_EQ(kv.addresses(1)[size_t(b)], nullptr);
  }
  EXPECT_NE(kv.table(1).block(3), kNoBlock);
  kv.ReleaseBefore(1, 13);  // again: nothing more
  EXPECT_EQ(pool->num_free(), 16 - 3);
  kv.Publish(1, tokens, 22);  // skips the holes

  // A new prompt with the same start still finds the released (idle, cached) blocks.
  kv.Add(2);
  const PrefixMatch match = kv.Match(2, tokens);
  EXPECT_EQ(match.tokens, 20);
  EXPECT_EQ(match.idle_blocks, 3);

  // A fork of the released sequence gets the holes too, and shares the rest.
  kv.Add(3);
  ASSERT_TRUE(kv.Admit(3, tokens, PrefixMatch{}, 24));
  kv.Share(3, 1, 20);
  for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(kv.table(3).block(b), kNoBlock);
  EXPECT_EQ(kv.table(3).block(3), kv.table(1).block(3));

  kv.Remove(1);
  kv.Remove(2);
  kv.Remove(3);
  EXPECT_EQ(pool->num_free(), 16);
}

}  // namespace
}  // namespace lockstep
