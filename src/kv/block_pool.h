// BlockPool: the paged KV cache's storage and the prefix cache's directory. One big allocation split into
// fixed-size blocks of KvLayout::BlockBytes() each (block_tokens positions of K and V for every layer, see
// model/batch.h); reference counts so that sequences share blocks read-only; full blocks may carry a hash
// (kv/block_hash.h) under which a later sequence finds their KV again. Engine-thread only (not thread-safe).
//
//   storage_ (one aligned allocation, num_blocks × BlockBytes):
//   +-----------+-----------+-----------+-----+--------------+
//   |  block 0  |  block 1  |  block 2  | ... | block N-1    |
//   +-----------+-----------+-----------+-----+--------------+
//   one block: [layer 0: K[kv_head][slot][head_dim], V[kv_head][slot][value_dim]] [layer 1] ... [layer L-1]
//
//   a block is in exactly one state:
//     in use      ref_count >= 1 (held by block tables), cached or not
//     free        ref_count 0, no hash:  on the free stack (top = next to hand out)
//     cached idle ref_count 0, a hash:   on the LRU list, oldest release first; still findable by its hash
//
//   Allocate(): top of the free stack, else evict the LRU head (its hash is dropped), else kNoBlock
//   Release() to 0: cached → LRU tail, uncached → free stack.   Retain() of a cached idle block: off the LRU.
//   cached_: hash → block (one block per hash: a second block computing the same hash stays uncached)
//
// So cached blocks cost no capacity: num_free() counts free and cached idle blocks alike, and a request that
// needs blocks evicts the least recently used cached ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "model/batch.h"

namespace lockstep {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

// What a full block's KV was computed from: its chain hash, its parent's hash and its tokens (block_tokens
// ids). Lookups compare all three.
struct BlockKey {
  BlockHash hash = 0;
  BlockHash parent = 0;
  std::span<const int32_t> tokens;
};

class BlockPool {
 public:
  // InvalidArgument for an empty layout or num_blocks < 1; ResourceExhausted when the memory cannot be had.
  static Result<std::unique_ptr<BlockPool>> Create(const KvLayout& layout, int64_t num_blocks);
  // Blocks that fit in `bytes` (rounded down).
  static int64_t BlocksForBytes(const KvLayout& layout, int64_t bytes);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t block_tokens() const { return layout_.block_tokens; }
  int64_t num_blocks() const { return num_blocks_; }
  // Blocks Allocate() can hand out: free plus cached idle.
  int64_t num_free() const { return int64_t(free_.size()) + num_idle_cached_; }
  // Blocks some table holds (ref_count >= 1).
  int64_t num_used() const { return num_blocks_ - num_free(); }
  // Blocks carrying a hash (in use or idle), and the idle ones among them.
  int64_t num_cached() const { return int64_t(cached_.size()); }
  int64_t num_cached_idle() const { return num_idle_cached_; }
  // Cached blocks dropped from the cache to hand them out again.
  int64_t evictions() const { return evictions_; }
  size_t bytes() const { return size_t(num_blocks_) * layout_.BlockBytes(); }
  // Blocks needed to hold `tokens` positions.
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_tokens() - 1) / block_tokens(); }

  // A block with reference count 1 and no hash: a free one, else the least recently released cached idle one
  // (evicted from the cache); kNoBlock when every block is in use.
  BlockId Allocate();
  // Adds a reference to a block in use, or to a cached idle block (which leaves the LRU list: in use again).
  void Retain(BlockId id);
  // Drops a reference. At 0 a cached block becomes idle (LRU tail), an uncached one free.
  void Release(BlockId id);
  int32_t ref_count(BlockId id) const { return ref_counts_[size_t(id)]; }
  bool cached(BlockId id) const { return hashed_[size_t(id)] != 0; }

  // The cached block (in use or idle) whose key equals `key`, or kNoBlock. Does not take a reference.
  BlockId Find(const BlockKey& key) const;
  // Makes an in-use, uncached block findable under `key` (its KV must be complete and never written again).
  // False (nothing changed) when another block already holds key.hash.
  bool Publish(BlockId id, const BlockKey& key);
  // Drops every idle block's hash (they become plain free blocks); blocks in use keep theirs.
  void ForgetIdle();
  // The same for one block: true when it was cached and idle (now free), false (nothing changed) otherwise.
  bool ForgetIfIdle(BlockId id);

  // Copies a whole block's KV (copy on write of a shared partial block).
  void CopyBlock(BlockId from, BlockId to);

  std::byte* data(BlockId id) const { return storage_ + size_t(id) * layout_.BlockBytes(); }

 private:
  BlockPool(const KvLayout& layout, int64_t num_blocks, std::byte* storage);
  void LinkIdleTail(BlockId id);
  void UnlinkIdle(BlockId id);
  void Unhash(BlockId id);

  KvLayout layout_;
  int64_t num_blocks_;
  std::byte* storage_;         // owned (aligned allocation)
  std::vector<BlockId> free_;  // stack of free (uncached, unreferenced) ids
  std::vector<int32_t> ref_counts_;
  // Prefix cache: per block its key (valid when hashed_), the LRU list of idle cached blocks (intrusive,
  // doubly linked through lru_prev_/lru_next_; head = least recently released), and the directory.
  std::vector<uint8_t> hashed_;
  std::vector<BlockHash> hash_, parent_;
  std::vector<int32_t> key_tokens_;  // num_blocks × block_tokens
  std::vector<BlockId> lru_prev_, lru_next_;
  BlockId lru_head_ = kNoBlock, lru_tail_ = kNoBlock;
  int64_t num_idle_cached_ = 0;
  int64_t evictions_ = 0;
  std::unordered_map<BlockHash, BlockId> cached_;
};

}  // namespace lockstep
