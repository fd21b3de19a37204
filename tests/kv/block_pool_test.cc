#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "kv/block_table.h"

namespace lockstep {
namespace {

KvLayout TinyLayout() {
  KvLayout layout;
  layout.n_layer = 2;
  layout.n_kv_head = 2;
  layout.head_dim = 4;
  layout.block_tokens = 4;
  layout.dtype = KvDtype::kF32;
  return layout;
}

TEST(BlockPoolTest, LayoutBytes) {
  KvLayout layout = TinyLayout();
  EXPECT_EQ(layout.HeadBytes(), 4u * 4u * 4u);
  EXPECT_EQ(layout.BlockBytes(), 2u * 2u * 2u * 64u);
  layout.dtype = KvDtype::kF16;
  EXPECT_EQ(layout.BlockBytes(), 2u * 2u * 2u * 32u);
}

// Values of another width than keys (deepseek2): each layer holds every head's keys, then every head's
// values.
TEST(BlockPoolTest, ValuesNarrowerThanKeys) {
  KvLayout layout = TinyLayout();
  layout.value_dim = 2;
  EXPECT_EQ(layout.ValueDim(), 2);
  EXPECT_EQ(layout.HeadBytes(), 4u * 4u * 4u);
  EXPECT_EQ(layout.ValueHeadBytes(), 4u * 2u * 4u);
  EXPECT_EQ(layout.LayerBytes(), 2u * (64u + 32u));
  EXPECT_EQ(layout.BlockBytes(), 2u * 2u * (64u + 32u));
  EXPECT_EQ(layout.ValueOffset(1, 0), 192u + 2u * 64u);
  EXPECT_EQ(layout.ValueOffset(1, 1), 192u + 2u * 64u + 32u);
  EXPECT_EQ(layout.KeyOffset(1, 1), 192u + 64u);
  auto pool = BlockPool::Create(layout, 3);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  layout.value_dim = -1;
  EXPECT_FALSE(BlockPool::Create(layout, 3).ok());
}

TEST(BlockPoolTest, AllocatesEveryBlockOnceThenRunsOut) {
  auto pool = BlockPool::Create(TinyLayout(), 8);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  BlockPool& p = **pool;
  EXPECT_EQ(p.num_blocks(), 8);
  EXPECT_EQ(p.num_free(), 8);
  std::set<BlockId> ids;
  for (int i = 0; i < 8; ++i) {
    BlockId id = p.Allocate();
    ASSERT_NE(id, kNoBlock);
    EXPECT_TRUE(ids.insert(id).second);
    EXPECT_EQ(p.ref_count(id), 1);
  }
  EXPECT_EQ(p.Allocate(), kNoBlock);
  EXPECT_EQ(p.num_used(), 8);
  for (BlockId id : ids) p.Release(id);
  EXPECT_EQ(p.num_free(), 8);
}

TEST(BlockPoolTest, BlocksAreDistinctAndWritable) {
  auto pool = BlockPool::Create(TinyLayout(), 4);
  ASSERT_TRUE(pool.ok());
  BlockPool& p = **pool;
  const size_t bytes = p.layout().BlockBytes();
  BlockId a = p.Allocate(), b = p.Allocate();
  EXPECT_EQ(size_t(std::abs(p.data(a) - p.data(b))), bytes);
  std::fill(p.data(a), p.data(a) + bytes, std::byte{1});
  std::fill(p.data(b), p.data(b) + bytes, std::byte{2});
  EXPECT_EQ(p.data(a)[bytes - 1], std::byte{1});
  p.Release(a);
  p.Release(b);
}

TEST(BlockPoolTest, RefCountsShareBlocks) {
  auto pool = BlockPool::Create(TinyLayout(), 2);
  ASSERT_TRUE(pool.ok());
  BlockPool& p = **pool;
  BlockId id = p.Allocate();
  p.Retain(id);
  EXPECT_EQ(p.ref_count(id), 2);
  p.Release(id);
  EXPECT_EQ(p.num_free(), 1);  // still held once
  p.Release(id);
  EXPECT_EQ(p.num_free(), 2);
  EXPECT_EQ(p.ref_count(id), 0);
}

TEST(BlockPoolTest, RejectsBadSizes) {
  EXPECT_FALSE(BlockPool::Create(TinyLayout(), 0).ok());
  KvLayout empty = TinyLayout();
  empty.n_layer = 0;
  auto bad = BlockPool::Create(empty, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layers 0"), std::string::npos);
  EXPECT_EQ(BlockPool::BlocksForBytes(TinyLayout(), int64_t(TinyLayout().BlockBytes()) * 3 + 5), 3);
}

TEST(BlockTableTest, GrowsByWholeBlocksAndReleases) {
  auto pool = BlockPool::Create(TinyLayout(), 5);
  ASSERT_TRUE(pool.ok());
  BlockPool& p = **pool;
  BlockTable table;
  EXPECT_TRUE(table.EnsureCapacity(p, 1));
  EXPECT_EQ(table.num_blocks(), 1);
  EXPECT_TRUE(table.EnsureCapacity(p, 4));
  EXPECT_EQ(table.num_blocks(), 1);
  EXPECT_TRUE(table.EnsureCapacity(p, 9));
  EXPECT_EQ(table.num_blocks(), 3);
  EXPECT_EQ(table.capacity_tokens(p.block_tokens()), 12);
  ASSERT_EQ(table.addresses().size(), 3u);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(table.addresses()[size_t(i)], p.data(table.block(i)));
  EXPECT_FALSE(table.EnsureCapacity(p, 24));  // needs 6, pool has 5
  EXPECT_EQ(table.num_blocks(), 3);           // unchanged
  EXPECT_EQ(p.num_free(), 2);
  table.Clear(p);
  EXPECT_EQ(p.num_free(), 5);
  EXPECT_TRUE(table.ids().empty());
}

}  // namespace
}  // namespace lockstep
