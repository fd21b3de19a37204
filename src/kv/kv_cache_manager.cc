#include "kv/kv_cache_manager.h"

#include <algorithm>

namespace lockstep {

KvCacheManager::KvCacheManager(BlockPool& pool, const KvCacheOptions& options)
    : pool_(pool), options_(options), root_(RootBlockHash(pool.layout(), options.salt)) {}

KvCacheManager::~KvCacheManager() {
  for (auto& [id, seq] : seqs_) seq->table.Clear(pool_);
}

KvCacheManager::Sequence& KvCacheManager::Get(SequenceId id) {
  auto it = seqs_.find(id);
  LOCKSTEP_CHECK_MSG(it != seqs_.end(), "unknown KV sequence");
  return *it->second;
}

const KvCacheManager::Sequence& KvCacheManager::Get(SequenceId id) const {
  auto it = seqs_.find(id);
  LOCKSTEP_CHECK_MSG(it != seqs_.end(), "unknown KV sequence");
  return *it->second;
}

void KvCacheManager::Add(SequenceId id, uint64_t salt) {
  LOCKSTEP_CHECK(seqs_.count(id) == 0);
  auto seq = std::make_unique<Sequence>();
  seq->root = SaltedRoot(root_, salt);
  seqs_.emplace(id, std::move(seq));
}

void KvCacheManager::DropClaims(SequenceId id, Sequence& seq) {
  for (BlockHash hash : seq.claims) {
    auto it = claims_.find(hash);
    if (it != claims_.end() && it->second == id) claims_.erase(it);
  }
  seq.claims.clear();
}

void KvCacheManager::Free(SequenceId id) {
  Sequence& seq = Get(id);
  DropClaims(id, seq);
  seq.table.Clear(pool_);
  seq.published = 0;
}

void KvCacheManager::Remove(SequenceId id) {
  Free(id);
  seqs_.erase(id);
}

BlockKey KvCacheManager::Key(const Sequence& seq, std::span<const int32_t> tokens, int64_t index) const {
  const size_t bt = size_t(block_tokens());
  return BlockKey{seq.hashes[size_t(index)], index == 0 ? seq.root : seq.hashes[size_t(index) - 1],
                  tokens.subspan(size_t(index) * bt, bt)};
}

PrefixMatch KvCacheManager::Match(SequenceId id, std::span<const int32_t> tokens,
                                  const UsableEnd& usable_end) {
  Sequence& seq = Get(id);
  LOCKSTEP_CHECK_MSG(seq.table.num_blocks() == 0, "Match on a sequence that holds blocks");
  PrefixMatch match;
  if (!options_.prefix_caching || tokens.empty()) return match;
  ExtendBlockHashes(seq.root, tokens, block_tokens(), seq.hashes);
  // Blocks entirely before the last token only: that token is always computed (its logits are needed).
  const int64_t limit = int64_t(tokens.size() - 1) / block_tokens();
  for (int64_t i = 0; i < limit; ++i) {
    const BlockId block = pool_.Find(Key(seq, tokens, i));
    if (block == kNoBlock) break;
    match.blocks.push_back(block);
  }
  if (usable_end) {
    while (!match.blocks.empty() && !usable_end(seq.hashes[match.blocks.size() - 1])) match.blocks.pop_back();
  }
  for (BlockId block : match.blocks) match.idle_blocks += pool_.ref_count(block) == 0 ? 1 : 0;
  match.tokens = int32_t(match.blocks.size()) * block_tokens();
  return match;
}

int64_t KvCacheManager::BlocksToAdmit(const PrefixMatch& match, int64_t capacity_tokens) const {
  return match.idle_blocks +
         std::max<int64_t>(0, pool_.BlocksFor(capacity_tokens) - int64_t(match.blocks.size()));
}

bool KvCacheManager::Admit(SequenceId id, std::span<const int32_t> tokens, const PrefixMatch& match,
                           int64_t capacity_tokens) {
  Sequence& seq = Get(id);
  LOCKSTEP_CHECK_MSG(seq.table.num_blocks() == 0, "Admit of a sequence that holds blocks");
  if (BlocksToAdmit(match, capacity_tokens) > pool_.num_free()) return false;
  for (BlockId block : match.blocks) {
    pool_.Retain(block);  // first: an idle matched block must not be evicted by the allocations below
    seq.table.Append(pool_, block);
  }
  LOCKSTEP_CHECK(seq.table.EnsureCapacity(pool_, capacity_tokens));
  seq.published = int64_t(match.blocks.size());
  if (!options_.prefix_caching) return true;
  ExtendBlockHashes(seq.root, tokens, block_tokens(), seq.hashes);
  for (size_t i = match.blocks.size(); i < seq.hashes.size(); ++i) {
    const BlockHash hash = seq.hashes[i];
    if (claims_.count(hash) != 0 || pool_.Find(Key(seq, tokens, int64_t(i))) != kNoBlock) continue;
    claims_.emplace(hash, id);
    seq.claims.push_back(hash);
  }
  return true;
}

int32_t KvCacheManager::AttachCached(SequenceId id, std::span<const int32_t> tokens, int32_t computed,
                                     const UsableEnd& usable_end) {
  if (!options_.prefix_caching || computed % block_tokens() != 0 || tokens.empty()) return computed;
  Sequence& seq = Get(id);
  ExtendBlockHashes(seq.root, tokens, block_tokens(), seq.hashes);
  const int64_t first = computed / block_tokens();
  int64_t limit = first;  // the cached run is [first, limit)
  while (limit < int64_t(tokens.size() - 1) / block_tokens() &&
         pool_.Find(Key(seq, tokens, limit)) != kNoBlock)
    ++limit;
  if (usable_end) {
    while (limit > first && !usable_end(seq.hashes[size_t(limit - 1)])) --limit;
  }
  int64_t i = first;
  for (; i < limit; ++i) {
    const BlockId block = pool_.Find(Key(seq, tokens, i));
    pool_.Retain(block);
    if (i < seq.table.num_blocks()) {
      seq.table.Replace(pool_, i, block);  // the block there was never written (i ≥ computed / bt)
    } else {
      seq.table.Append(pool_, block);
    }
    auto claim = claims_.find(seq.hashes[size_t(i)]);
    if (claim != claims_.end() && claim->second == id) claims_.erase(claim);
  }
  seq.published = std::max(seq.published, i);
  return int32_t(i) * block_tokens();
}

BlockHash KvCacheManager::BoundaryHash(SequenceId id, std::span<const int32_t> tokens, int32_t position) {
  LOCKSTEP_CHECK(position > 0 && position % block_tokens() == 0 && size_t(position) <= tokens.size());
  Sequence& seq = Get(id);
  ExtendBlockHashes(seq.root, tokens, block_tokens(), seq.hashes);
  return seq.hashes[size_t(position / block_tokens() - 1)];
}

int32_t KvCacheManager::ClaimedElsewhereFrom(SequenceId id, std::span<const int32_t> tokens,
                                             int32_t computed) const {
  if (!options_.prefix_caching || claims_.empty()) return int32_t(tokens.size());
  const Sequence& seq = Get(id);
  for (size_t i = size_t((computed + block_tokens() - 1) / block_tokens()); i < seq.hashes.size(); ++i) {
    auto it = claims_.find(seq.hashes[i]);
    if (it != claims_.end() && it->second != id) return int32_t(i) * block_tokens();
  }
  return int32_t(tokens.size());
}

void KvCacheManager::Share(SequenceId child_id, SequenceId parent_id, int32_t shared_tokens) {
  Sequence& child = Get(child_id);
  const Sequence& parent = Get(parent_id);
  const int64_t full = shared_tokens / block_tokens();
  const bool partial = shared_tokens % block_tokens() != 0;
  LOCKSTEP_CHECK(parent.table.num_blocks() >= full + (partial ? 1 : 0));
  LOCKSTEP_CHECK_MSG(child.table.num_blocks() > full, "a fork's child must hold blocks past the shared part");
  for (int64_t i = 0; i < full; ++i) {
    const BlockId block = parent.table.block(i);
    if (child.table.block(i) == block) continue;
    if (block == kNoBlock) {  // out of the parent's window, so of the child's too
      child.table.Drop(pool_, i);
      continue;
    }
    pool_.Retain(block);
    child.table.Replace(pool_, i, block);
  }
  if (partial) {
    const BlockId own = child.table.block(full);
    LOCKSTEP_CHECK(pool_.ref_count(own) == 1 && !pool_.cached(own));
    pool_.CopyBlock(parent.table.block(full), own);
    ++copies_;
  }
  for (int64_t i = 0; i < full && size_t(i) < child.hashes.size(); ++i) {
    auto claim = claims_.find(child.hashes[size_t(i)]);
    if (claim != claims_.end() && claim->second == child_id) claims_.erase(claim);
  }
  child.published = std::max(child.published, full);
}

int64_t KvCacheManager::BlocksToWrite(SequenceId id, int32_t to) const {
  return std::max<int64_t>(0, pool_.BlocksFor(to) - Get(id).table.num_blocks());
}

bool KvCacheManager::PrepareWrite(SequenceId id, int32_t from, int32_t to) {
  Sequence& seq = Get(id);
  if (!seq.table.EnsureCapacity(pool_, to)) return false;
  for (int64_t i = from / block_tokens(); i < pool_.BlocksFor(to); ++i) {
    const BlockId block = seq.table.block(i);
    LOCKSTEP_CHECK_MSG(pool_.ref_count(block) == 1 && !pool_.cached(block),
                       "a step would write a shared or cached KV block");
  }
  return true;
}

void KvCacheManager::Publish(SequenceId id, std::span<const int32_t> tokens, int32_t computed) {
  if (!options_.prefix_caching) return;
  Sequence& seq = Get(id);
  ExtendBlockHashes(seq.root, tokens.first(size_t(computed)), block_tokens(), seq.hashes);
  const int64_t full = computed / block_tokens();
  for (int64_t i = seq.published; i < full; ++i) {
    const BlockId block = seq.table.block(i);
    // A released block (sliding window) was published, if at all, before its release.
    if (block != kNoBlock && !pool_.cached(block)) pool_.Publish(block, Key(seq, tokens, i));
    auto claim = claims_.find(seq.hashes[size_t(i)]);
    if (claim != claims_.end() && claim->second == id) claims_.erase(claim);
  }
  seq.published = std::max(seq.published, full);
}

BlockKey KvCacheManager::RunKey(std::span<const BlockHash> hashes, std::span<const int32_t> tokens,
                                int64_t index) const {
  const size_t bt = size_t(block_tokens());
  return BlockKey{hashes[size_t(index)], index == 0 ? root_ : hashes[size_t(index) - 1],
                  tokens.subspan(size_t(index) * bt, bt)};
}

std::vector<BlockHash> KvCacheManager::RunHashes(std::span<const int32_t> tokens) const {
  std::vector<BlockHash> hashes;
  ExtendBlockHashes(root_, tokens, block_tokens(), hashes);
  return hashes;
}

std::vector<BlockId> KvCacheManager::CachedRun(std::span<const int32_t> tokens) const {
  std::vector<BlockId> run;
  if (!options_.prefix_caching) return run;
  const std::vector<BlockHash> hashes = RunHashes(tokens);
  for (size_t i = 0; i < hashes.size(); ++i) {
    const BlockId block = pool_.Find(RunKey(hashes, tokens, int64_t(i)));
    if (block == kNoBlock) break;
    run.push_back(block);
  }
  return run;
}

int64_t KvCacheManager::CacheRun(std::span<const int32_t> tokens,
                                 const std::function<void(BlockId, int64_t)>& fill) {
  if (!options_.prefix_caching) return 0;
  const std::vector<BlockHash> hashes = RunHashes(tokens);
  // Every block of the run is held until the end, so that allocating the next one cannot evict it.
  std::vector<BlockId> held;
  for (size_t i = 0; i < hashes.size(); ++i) {
    const BlockKey key = RunKey(hashes, tokens, int64_t(i));
    BlockId block = pool_.Find(key);
    if (block != kNoBlock) {
      pool_.Retain(block);
    } else {
      block = pool_.Allocate();
      if (block == kNoBlock) break;
      fill(block, int64_t(i));
      if (!pool_.Publish(block, key)) {  // another block holds this hash for other tokens: a collision
        pool_.Release(block);
        break;
      }
    }
    held.push_back(block);
  }
  for (auto it = held.rbegin(); it != held.rend(); ++it) pool_.Release(*it);
  return int64_t(held.size());
}

int64_t KvCacheManager::ForgetRun(std::span<const int32_t> tokens) {
  int64_t dropped = 0;
  for (BlockId block : CachedRun(tokens)) dropped += pool_.ForgetIfIdle(block) ? 1 : 0;
  return dropped;
}

}  // namespace lockstep
