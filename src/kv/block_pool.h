// BlockPool: the paged KV cache's storage. One big allocation split into fixed-size blocks of
// KvLayout::BlockBytes() each (block_tokens positions of K and V for every layer, see model/batch.h); O(1)
// Allocate/Release through a free list; reference counts so that forks and a prefix cache can share blocks.
// Engine-thread only (not thread-safe); the counters it reports are copied out by the engine.
//
//   storage_ (one aligned allocation, num_blocks × BlockBytes):
//   +-----------+-----------+-----------+-----+--------------+
//   |  block 0  |  block 1  |  block 2  | ... | block N-1    |
//   +-----------+-----------+-----------+-----+--------------+
//   one block: [layer 0: K[kv_head][slot][head_dim], V[kv_head][slot][head_dim]] [layer 1] ... [layer L-1]
//
//   free list (stack of ids; top = next to hand out)     ref_counts_[id]: 0 free, >= 1 in use
//   sequence A's BlockTable: [5, 2, 7]  → positions 0..15 in block 5, 16..31 in block 2, 32..47 in block 7
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "model/batch.h"

namespace lockstep {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

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
  int64_t num_free() const { return int64_t(free_.size()); }
  int64_t num_used() const { return num_blocks_ - num_free(); }
  size_t bytes() const { return size_t(num_blocks_) * layout_.BlockBytes(); }
  // Blocks needed to hold `tokens` positions.
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_tokens() - 1) / block_tokens(); }

  // A free block with reference count 1, or kNoBlock when none is left.
  BlockId Allocate();
  // Adds a reference to an allocated block (sharing).
  void Retain(BlockId id);
  // Drops a reference; the block is free again when the count reaches 0.
  void Release(BlockId id);
  int32_t ref_count(BlockId id) const { return ref_counts_[size_t(id)]; }

  std::byte* data(BlockId id) const { return storage_ + size_t(id) * layout_.BlockBytes(); }

 private:
  BlockPool(const KvLayout& layout, int64_t num_blocks, std::byte* storage);

  KvLayout layout_;
  int64_t num_blocks_;
  std::byte* storage_;         // owned (aligned allocation)
  std::vector<BlockId> free_;  // stack of free ids
  std::vector<int32_t> ref_counts_;
};

}  // namespace lockstep
