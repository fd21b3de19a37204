#include "kv/block_table.h"

#include <algorithm>

namespace lockstep {

BlockTable::~BlockTable() {
  LOCKSTEP_CHECK_MSG(ids_.empty(), "BlockTable destroyed while holding KV blocks");
}

BlockTable::BlockTable(BlockTable&& other) noexcept
    : ids_(std::move(other.ids_)), addresses_(std::move(other.addresses_)) {
  other.ids_.clear();
  other.addresses_.clear();
}

bool BlockTable::EnsureCapacity(BlockPool& pool, int64_t tokens) {
  const int64_t needed = pool.BlocksFor(tokens) - num_blocks();
  if (needed <= 0) return true;
  if (needed > pool.num_free()) return false;
  for (int64_t i = 0; i < needed; ++i) {
    const BlockId id = pool.Allocate();
    LOCKSTEP_CHECK(id != kNoBlock);
    Append(pool, id);
  }
  return true;
}

void BlockTable::Append(BlockPool& pool, BlockId id) {
  ids_.push_back(id);
  addresses_.push_back(pool.data(id));
}

void BlockTable::Replace(BlockPool& pool, int64_t index, BlockId id) {
  const BlockId old = ids_[size_t(index)];
  ids_[size_t(index)] = id;
  addresses_[size_t(index)] = pool.data(id);
  pool.Release(old);
}

void BlockTable::Drop(BlockPool& pool, int64_t index) {
  if (ids_[size_t(index)] == kNoBlock) return;
  pool.Release(ids_[size_t(index)]);
  ids_[size_t(index)] = kNoBlock;
  addresses_[size_t(index)] = nullptr;
}

void BlockTable::ReleaseBefore(BlockPool& pool, int64_t index) {
  for (int64_t i = std::min(index, num_blocks()) - 1; i >= 0 && ids_[size_t(i)] != kNoBlock; --i)
    Drop(pool, i);
}

void BlockTable::Clear(BlockPool& pool) {
  for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) {
    if (*it != kNoBlock) pool.Release(*it);
  }
  ids_.clear();
  addresses_.clear();
}

}  // namespace lockstep
