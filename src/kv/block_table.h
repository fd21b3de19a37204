// BlockTable: one sequence's KV blocks in position order (grows at the end; an entry is replaced only to
// swap a not-yet-written block for a shared one, or a shared block for a private copy). Position p is in
// block Block(p / block_tokens) at slot p % block_tokens. Holds one reference on each of its blocks, dropped
// by Clear() (also on destruction it must already be clear: tables never outlive their pool silently). Also
// keeps the blocks' addresses, which is what a forward pass reads (model/batch.h SequenceKv). Engine-thread
// only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/block_pool.h"

namespace lockstep {

class BlockTable {
 public:
  BlockTable() = default;
  ~BlockTable();
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;
  BlockTable(BlockTable&& other) noexcept;
  BlockTable& operator=(BlockTable&& other) = delete;

  int64_t num_blocks() const { return int64_t(ids_.size()); }
  BlockId block(int64_t index) const { return ids_[size_t(index)]; }
  const std::vector<BlockId>& ids() const { return ids_; }
  const std::vector<std::byte*>& addresses() const { return addresses_; }
  // Positions the blocks can hold.
  int64_t capacity_tokens(int32_t block_tokens) const { return num_blocks() * block_tokens; }

  // Grows the table until it holds `tokens` positions. False (table unchanged) when the pool has too few free
  // blocks.
  bool EnsureCapacity(BlockPool& pool, int64_t tokens);
  // Appends an already-referenced block (ownership of one reference moves to the table).
  void Append(BlockPool& pool, BlockId id);
  // Puts an already-referenced block at `index` (ownership of one reference moves to the table) and releases
  // the block that was there.
  void Replace(BlockPool& pool, int64_t index, BlockId id);
  // Sliding windows: releases the blocks [0, index) no future row reads (model/attention.h AttentionStart);
  // their entries stay, as kNoBlock with a null address, so positions keep their blocks' indices.
  void ReleaseBefore(BlockPool& pool, int64_t index);
  // Releases the block at `index` the same way (a fork's parent released it).
  void Drop(BlockPool& pool, int64_t index);
  // Releases every block back to the pool, the last block first (so that cached blocks of a prefix, which
  // other prompts share most often, become the most recently released and are evicted last).
  void Clear(BlockPool& pool);

 private:
  std::vector<BlockId> ids_;
  std::vector<std::byte*> addresses_;
};

}  // namespace lockstep
