// KvCacheManager and the prefix-cache side of BlockPool, without kernels: block hashes, sharing, the fork
// copy, LRU eviction order, claims, and that no block is freed while a table reads it or lost to the cache.
#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <set>

namespace lockstep {
namespace {

constexpr int32_t kBlock = 4;

KvLayout Layout(KvDtype dtype = KvDtype::kF32) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_kv_head = 1;
  layout.head_dim = 2;
  layout.block_tokens = kBlock;
  layout.dtype = dtype;
  return layout;
}

std::vector<int32_t> Tokens(int first, int count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Admits `id` for `tokens` (its cached prefix attached) and "computes" the rest: stamps every position's
// slot with its token, then publishes. Returns the tokens that were found cached.
int32_t AdmitAndCompute(KvCacheManager& kv, BlockPool& pool, SequenceId id,
                        const std::vector<int32_t>& tokens, uint64_t salt = 0) {
  kv.Add(id, salt);
  const PrefixMatch match = kv.Match(id, tokens);
  EXPECT_TRUE(kv.Admit(id, tokens, match, int64_t(tokens.size())));
  EXPECT_TRUE(kv.PrepareWrite(id, match.tokens, int32_t(tokens.size())));
  for (size_t p = size_t(match.tokens); p < tokens.size(); ++p) {
    float* slot = reinterpret_cast<float*>(pool.data(kv.table(id).block(int64_t(p) / kBlock)));
    slot[p % kBlock] = float(tokens[p]);
  }
  kv.Publish(id, tokens, int32_t(tokens.size()));
  return match.tokens;
}

float SlotValue(const BlockPool& pool, const KvCacheManager& kv, SequenceId id, int32_t position) {
  return reinterpret_cast<const float*>(pool.data(kv.table(id).block(position / kBlock)))[position % kBlock];
}

struct Fixture {
  explicit Fixture(int64_t blocks, bool caching = true) {
    pool = std::move(*BlockPool::Create(Layout(), blocks));
    kv = std::make_unique<KvCacheManager>(*pool, KvCacheOptions{caching, 0});
  }
  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<KvCacheManager> kv;
};

TEST(BlockHashTest, ChainsOverTheParentTheTokensAndTheLayout) {
  const BlockHash root = RootBlockHash(Layout(), 0);
  const std::vector<int32_t> a = Tokens(0, 10), b = Concat(Tokens(0, 8), Tokens(50, 2));
  std::vector<BlockHash> ha, hb;
  ExtendBlockHashes(root, a, kBlock, ha);
  ExtendBlockHashes(root, b, kBlock, hb);
  ASSERT_EQ(ha.size(), 2u);  // full blocks only
  EXPECT_EQ(ha, hb);         // the differing tokens are in the partial block
  EXPECT_EQ(ha[1], NextBlockHash(ha[0], std::span(a).subspan(4, 4)));
  // The same tokens after a different parent, or under another dtype or salt, hash differently.
  EXPECT_NE(NextBlockHash(ha[0], std::span(a).subspan(0, 4)), ha[0]);
  EXPECT_NE(RootBlockHash(Layout(KvDtype::kF16), 0), root);
  EXPECT_NE(RootBlockHash(Layout(), 1), root);
  KvLayout wider = Layout();
  wider.block_tokens = 8;
  EXPECT_NE(RootBlockHash(wider, 0), root);
  // Values of another width: another layout; values as wide as keys: the hash of before value_dim.
  KvLayout narrow_values = Layout();
  narrow_values.value_dim = narrow_values.head_dim / 2;
  EXPECT_NE(RootBlockHash(narrow_values, 0), root);
  narrow_values.value_dim = narrow_values.head_dim;
  EXPECT_EQ(RootBlockHash(narrow_values, 0), root);
  // Extending is incremental: more tokens add hashes, the old ones stay.
  std::vector<BlockHash> grown = ha;
  ExtendBlockHashes(root, Concat(a, Tokens(10, 6)), kBlock, grown);
  ASSERT_EQ(grown.size(), 4u);
  EXPECT_EQ(grown[1], ha[1]);
}

TEST(KvCacheManagerTest, SharesFullBlocksOfACommonPrefixReadOnly) {
  Fixture f(16);
  const std::vector<int32_t> a = Concat(Tokens(0, 12), Tokens(100, 3));  // 3 full blocks + 3
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 1, a), 0);
  EXPECT_EQ(f.pool->num_cached(), 3);
  const std::vector<int32_t> b = Concat(Tokens(0, 12), Tokens(200, 2));
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 2, b), 12);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(f.kv->table(1).block(i), f.kv->table(2).block(i));
    EXPECT_EQ(f.pool->ref_count(f.kv->table(1).block(i)), 2);
  }
  EXPECT_NE(f.kv->table(1).block(3), f.kv->table(2).block(3));  // partial blocks are private
  for (int32_t p = 0; p < 14; ++p) EXPECT_EQ(SlotValue(*f.pool, *f.kv, 2, p), float(b[size_t(p)]));
  EXPECT_EQ(f.pool->num_used(), 5);
}

// A sequence's salt (LoRA scales: LoraCacheSalt) keeps its blocks apart from other salts' blocks.
TEST(KvCacheManagerTest, SequenceSaltsSeparateCachedBlocks) {
  const float one[] = {1.0f}, one_zero[] = {1.0f, 0.0f}, half[] = {0.5f}, zeros[] = {0.0f, -0.0f};
  EXPECT_EQ(LoraCacheSalt({}), 0u);
  EXPECT_EQ(LoraCacheSalt(zeros), 0u);  // every scale 0: the base model's KV
  EXPECT_EQ(LoraCacheSalt(one), LoraCacheSalt(one_zero));
  EXPECT_NE(LoraCacheSalt(one), LoraCacheSalt(half));
  EXPECT_NE(LoraCacheSalt(one), 0u);
  const BlockHash root = RootBlockHash(Layout(), 0);
  EXPECT_EQ(SaltedRoot(root, 0), root);
  EXPECT_NE(SaltedRoot(root, LoraCacheSalt(one)), root);

  Fixture f(32);
  const std::vector<int32_t> a = Concat(Tokens(0, 12), Tokens(100, 3));
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 1, a, LoraCacheSalt(one)), 0);
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 2, a, LoraCacheSalt(half)), 0);       // other scales: computed
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 3, a, 0), 0);                         // base model: computed
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 4, a, LoraCacheSalt(one_zero)), 12);  // same scales: shared
  EXPECT_EQ(f.kv->table(4).block(0), f.kv->table(1).block(0));
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 5, a, LoraCacheSalt(zeros)), 12);
  EXPECT_EQ(f.kv->table(5).block(0), f.kv->table(3).block(0));
}

TEST(KvCacheManagerTest, NeverAttachesTheBlockHoldingTheLastToken) {
  Fixture f(16);
  const std::vector<int32_t> a = Tokens(0, 12);  // exactly 3 full blocks
  AdmitAndCompute(*f.kv, *f.pool, 1, a);
  f.kv->Add(2);
  const PrefixMatch match = f.kv->Match(2, a);
  EXPECT_EQ(match.tokens, 8);  // its last token must be computed again for its logits
  EXPECT_EQ(match.blocks.size(), 2u);
  f.kv->Add(3);
  EXPECT_EQ(f.kv->Match(3, Tokens(0, 1)).tokens, 0);
}

TEST(KvCacheManagerTest, ForkSharesFullBlocksAndCopiesThePartialOne) {
  Fixture f(16, /*caching=*/false);  // forks do not need the cache
  const std::vector<int32_t> parent = Tokens(0, 10);
  AdmitAndCompute(*f.kv, *f.pool, 1, parent);
  EXPECT_EQ(f.pool->num_cached(), 0);
  const std::vector<int32_t> child = Concat(Tokens(0, 10), Tokens(77, 3));
  f.kv->Add(2);
  ASSERT_TRUE(f.kv->Admit(2, child, PrefixMatch{}, int64_t(child.size())));
  EXPECT_EQ(f.pool->num_used(), 3 + 4);
  f.kv->Share(2, 1, 10);
  EXPECT_EQ(f.pool->num_used(), 3 + 2);  // its own first two blocks went back
  EXPECT_EQ(f.kv->table(2).block(0), f.kv->table(1).block(0));
  EXPECT_EQ(f.kv->table(2).block(1), f.kv->table(1).block(1));
  EXPECT_NE(f.kv->table(2).block(2), f.kv->table(1).block(2));  // the partial block: a private copy
  EXPECT_EQ(f.kv->copies(), 1);
  for (int32_t p = 0; p < 10; ++p) EXPECT_EQ(SlotValue(*f.pool, *f.kv, 2, p), float(p));
  // Writing the child's positions 10.. touches only its copy.
  ASSERT_TRUE(f.kv->PrepareWrite(2, 10, 13));
  reinterpret_cast<float*>(f.pool->data(f.kv->table(2).block(2)))[2] = -1.0f;
  EXPECT_EQ(SlotValue(*f.pool, *f.kv, 1, 9), 9.0f);
  EXPECT_EQ(SlotValue(*f.pool, *f.kv, 2, 9), 9.0f);
  EXPECT_EQ(SlotValue(*f.pool, *f.kv, 2, 10), -1.0f);
  f.kv->Remove(1);
  f.kv->Remove(2);
  EXPECT_EQ(f.pool->num_free(), 16);
}

TEST(KvCacheManagerTest, WritingASharedBlockIsRefused) {
  Fixture f(16);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 9));
  EXPECT_DEATH(f.kv->PrepareWrite(1, 4, 6), "shared or cached");  // block 1 is published: read-only
}

TEST(KvCacheManagerTest, EvictsIdleCachedBlocksLeastRecentlyReleasedFirstAndTailsFirst) {
  Fixture f(6);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 8));    // blocks A0 A1
  AdmitAndCompute(*f.kv, *f.pool, 2, Tokens(100, 8));  // B0 B1
  const BlockId a0 = f.kv->table(1).block(0), a1 = f.kv->table(1).block(1);
  const BlockId b0 = f.kv->table(2).block(0), b1 = f.kv->table(2).block(1);
  f.kv->Remove(1);  // released A1 then A0
  f.kv->Remove(2);  // then B1, B0
  EXPECT_EQ(f.pool->num_cached_idle(), 4);
  EXPECT_EQ(f.pool->num_free(), 6);
  // Two plain free blocks go first, then the LRU order: A1, A0, B1, B0.
  std::vector<BlockId> order;
  for (int i = 0; i < 6; ++i) order.push_back(f.pool->Allocate());
  EXPECT_EQ(std::vector<BlockId>(order.begin() + 2, order.end()), (std::vector<BlockId>{a1, a0, b1, b0}));
  EXPECT_EQ(f.pool->evictions(), 4);
  EXPECT_EQ(f.pool->num_cached(), 0);
  EXPECT_EQ(f.pool->Allocate(), kNoBlock);
  for (BlockId id : order) f.pool->Release(id);
}

TEST(KvCacheManagerTest, AHitRefreshesABlocksPlaceInTheLru) {
  Fixture f(4);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 5));    // A0 cached
  AdmitAndCompute(*f.kv, *f.pool, 2, Tokens(100, 5));  // B0 cached
  const BlockId a0 = f.kv->table(1).block(0), b0 = f.kv->table(2).block(0);
  f.kv->Remove(1);
  f.kv->Remove(2);                                                 // LRU: A0, B0
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 3, Tokens(0, 6)), 4);  // A0 in use again
  f.kv->Remove(3);                                                 // LRU: B0, A0
  std::vector<BlockId> order;
  for (int i = 0; i < 4; ++i) order.push_back(f.pool->Allocate());
  EXPECT_EQ(order[2], b0);
  EXPECT_EQ(order[3], a0);
  for (BlockId id : order) f.pool->Release(id);
}

TEST(KvCacheManagerTest, NoBlockIsFreedOrEvictedWhileATableReadsIt) {
  Fixture f(8);
  const std::vector<int32_t> prompt = Tokens(0, 13);
  AdmitAndCompute(*f.kv, *f.pool, 1, prompt);
  AdmitAndCompute(*f.kv, *f.pool, 2, Concat(Tokens(0, 12), Tokens(90, 2)));
  const std::vector<BlockId> shared = {f.kv->table(2).block(0), f.kv->table(2).block(1),
                                       f.kv->table(2).block(2)};
  f.kv->Free(1);  // preempted or finished: only its own references go
  for (BlockId id : shared) EXPECT_EQ(f.pool->ref_count(id), 1);
  // Take every block that can be had: none of the shared ones is handed out.
  std::vector<BlockId> taken;
  for (BlockId id = f.pool->Allocate(); id != kNoBlock; id = f.pool->Allocate()) taken.push_back(id);
  EXPECT_EQ(taken.size(), 8u - 4u);
  for (BlockId id : shared) EXPECT_EQ(std::count(taken.begin(), taken.end(), id), 0);
  for (int32_t p = 0; p < 12; ++p) EXPECT_EQ(SlotValue(*f.pool, *f.kv, 2, p), float(p));
  for (BlockId id : taken) f.pool->Release(id);
}

TEST(KvCacheManagerTest, TheCacheNeverCostsCapacity) {
  Fixture f(10);
  for (SequenceId id = 1; id <= 40; ++id) {
    const std::vector<int32_t> tokens = Tokens(int(id % 7) * 1000, 3 + int(id % 5) * 4);
    AdmitAndCompute(*f.kv, *f.pool, id, tokens);
    f.kv->Remove(id);
    EXPECT_EQ(f.pool->num_free(), 10);
    EXPECT_EQ(f.pool->num_used(), 0);
  }
  EXPECT_GT(f.pool->num_cached_idle(), 0);
  // A full pool's worth of blocks is still there for one new sequence.
  f.kv->Add(99);
  const std::vector<int32_t> big = Tokens(50000, 40);
  const PrefixMatch none = f.kv->Match(99, big);
  EXPECT_EQ(none.tokens, 0);
  EXPECT_EQ(f.kv->BlocksToAdmit(none, 40), 10);
  EXPECT_TRUE(f.kv->Admit(99, big, none, 40));
  EXPECT_EQ(f.pool->num_cached(), 0);
  f.kv->Remove(99);
}

TEST(KvCacheManagerTest, IdleMatchedBlocksCountAgainstTheFreePool) {
  Fixture f(4);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 9));  // two full blocks cached
  f.kv->Remove(1);
  f.kv->Add(2);
  const std::vector<int32_t> again = Tokens(0, 16);
  const PrefixMatch match = f.kv->Match(2, again);
  EXPECT_EQ(match.tokens, 8);
  EXPECT_EQ(match.idle_blocks, 2);
  EXPECT_EQ(f.kv->BlocksToAdmit(match, 16), 2 + 2);
  EXPECT_TRUE(f.kv->Admit(2, again, match, 16));
  EXPECT_EQ(f.pool->num_free(), 0);
  f.kv->Remove(2);
}

TEST(KvCacheManagerTest, ClaimsMakeNeighboursWaitAndEndWhenPublishedOrFreed) {
  Fixture f(32);
  const std::vector<int32_t> a = Concat(Tokens(0, 12), Tokens(300, 2));
  const std::vector<int32_t> b = Concat(Tokens(0, 12), Tokens(400, 6));
  f.kv->Add(1);
  ASSERT_TRUE(f.kv->Admit(1, a, f.kv->Match(1, a), 14));  // claims blocks 0-2
  f.kv->Add(2);
  const PrefixMatch none = f.kv->Match(2, b);
  ASSERT_TRUE(f.kv->Admit(2, b, none, 18));  // claims block 3 (its own) only
  EXPECT_EQ(f.kv->ClaimedElsewhereFrom(2, b, 0), 0);
  EXPECT_EQ(f.kv->ClaimedElsewhereFrom(1, a, 0), 14);  // its own claims do not stop it
  // 1 computes blocks 0-1: published; 2 attaches them, then waits at block 2.
  f.kv->Publish(1, a, 8);
  EXPECT_EQ(f.kv->AttachCached(2, b, 0), 8);
  EXPECT_EQ(f.kv->ClaimedElsewhereFrom(2, b, 8), 8);
  EXPECT_EQ(f.kv->ClaimedElsewhereFrom(2, b, 5), 8);  // mid-block: the chunk would stop at block 2
  f.kv->Free(1);                                      // cancelled or preempted: the claim on block 2 ends
  EXPECT_EQ(f.kv->ClaimedElsewhereFrom(2, b, 8), 18);
  EXPECT_EQ(f.kv->AttachCached(2, b, 8), 8);  // nothing more is cached
  f.kv->Remove(1);
  f.kv->Remove(2);
  EXPECT_EQ(f.pool->num_used(), 0);
}

TEST(KvCacheManagerTest, ALookupComparesTokensNotJustTheHash) {
  Fixture f(8);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 5));
  const BlockHash root = RootBlockHash(Layout(), 0);
  const std::vector<int32_t> real = Tokens(0, 4), forged = Tokens(1, 4);
  const BlockHash hash = NextBlockHash(root, real);
  EXPECT_NE(f.pool->Find(BlockKey{hash, root, real}), kNoBlock);
  EXPECT_EQ(f.pool->Find(BlockKey{hash, root, forged}), kNoBlock);  // a hash collision is no hit
  EXPECT_EQ(f.pool->Find(BlockKey{hash, root + 1, real}), kNoBlock);
  f.kv->Remove(1);
}

// Models with recurrent layers: a run is cut back to the last block where usable_end (a state snapshot
// exists) allows it to end, in Match and in AttachCached; BoundaryHash names that block.
TEST(KvCacheManagerTest, UsableEndCutsMatchedRunsBack) {
  Fixture f(32);
  const std::vector<int32_t> doc = Tokens(0, 16);  // 4 full blocks
  AdmitAndCompute(*f.kv, *f.pool, 1, Concat(doc, Tokens(100, 3)));
  const std::vector<int32_t> b = Concat(doc, Tokens(200, 3));
  f.kv->Add(2);
  const BlockHash at8 = f.kv->BoundaryHash(2, b, 8), at12 = f.kv->BoundaryHash(2, b, 12);
  EXPECT_NE(at8, at12);
  std::set<BlockHash> snapshots = {at8};
  auto usable = [&](BlockHash h) { return snapshots.count(h) != 0; };
  PrefixMatch match = f.kv->Match(2, b, usable);
  EXPECT_EQ(match.tokens, 8);  // 16 cached, but the only snapshot is at 8
  EXPECT_EQ(match.blocks.size(), 2u);
  EXPECT_EQ(match.idle_blocks, 0);  // sequence 1 still holds them
  snapshots.clear();
  EXPECT_EQ(f.kv->Match(2, b, usable).tokens, 0);
  EXPECT_EQ(f.kv->Match(2, b).tokens, 16);  // no usable_end: any end
  ASSERT_TRUE(f.kv->Admit(2, b, PrefixMatch{}, int64_t(b.size())));
  EXPECT_EQ(f.kv->AttachCached(2, b, 0, usable), 0);
  snapshots = {at12};
  EXPECT_EQ(f.kv->AttachCached(2, b, 4, usable), 12);  // from a block start: blocks 1 and 2
  EXPECT_EQ(f.kv->table(2).block(1), f.kv->table(1).block(1));
  EXPECT_EQ(f.kv->table(2).block(2), f.kv->table(1).block(2));
  EXPECT_NE(f.kv->table(2).block(3), f.kv->table(1).block(3));
}

TEST(KvCacheManagerTest, CachingOffHashesAndSharesNothing) {
  Fixture f(8, /*caching=*/false);
  AdmitAndCompute(*f.kv, *f.pool, 1, Tokens(0, 9));
  EXPECT_EQ(AdmitAndCompute(*f.kv, *f.pool, 2, Tokens(0, 9)), 0);
  EXPECT_EQ(f.pool->num_cached(), 0);
  f.kv->Remove(1);
  f.kv->Remove(2);
  EXPECT_EQ(f.pool->num_free(), 8);
}

}  // namespace
}  // namespace lockstep
