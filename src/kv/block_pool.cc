#include "kv/block_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/large_allocation.h"

namespace lockstep {

Result<std::unique_ptr<BlockPool>> BlockPool::Create(const KvLayout& layout, int64_t num_blocks) {
  if (layout.n_layer < 1 || layout.n_kv_head < 1 || layout.head_dim < 1 || layout.value_dim < 0 ||
      layout.block_tokens < 1) {
    return InvalidArgument(
        "KV layout has an empty dimension (layers " + std::to_string(layout.n_layer) + ", kv heads " +
        std::to_string(layout.n_kv_head) + ", head dim " + std::to_string(layout.head_dim) + ", value dim " +
        std::to_string(layout.value_dim) + ", block tokens " + std::to_string(layout.block_tokens) + ")");
  }
  if (num_blocks < 1 || num_blocks > (int64_t(1) << 30)) {
    return InvalidArgument("KV pool must have between 1 and 2^30 blocks, got " + std::to_string(num_blocks));
  }
  const size_t bytes = size_t(num_blocks) * layout.BlockBytes();
  // Huge pages: a row's attention reads a short run of every block of its sequence (blocks hold every layer).
  void* storage = AllocateLarge(bytes);
  if (storage == nullptr) {
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes for the KV cache (" +
                             std::to_string(num_blocks) + " blocks)");
  }
  return std::unique_ptr<BlockPool>(new BlockPool(layout, num_blocks, static_cast<std::byte*>(storage)));
}

int64_t BlockPool::BlocksForBytes(const KvLayout& layout, int64_t bytes) {
  const size_t block = layout.BlockBytes();
  if (block == 0 || bytes <= 0) return 0;
  return int64_t(size_t(bytes) / block);
}

BlockPool::BlockPool(const KvLayout& layout, int64_t num_blocks, std::byte* storage)
    : layout_(layout),
      num_blocks_(num_blocks),
      storage_(storage),
      ref_counts_(size_t(num_blocks), 0),
      hashed_(size_t(num_blocks), 0),
      hash_(size_t(num_blocks), 0),
      parent_(size_t(num_blocks), 0),
      key_tokens_(size_t(num_blocks) * size_t(layout.block_tokens), 0),
      lru_prev_(size_t(num_blocks), kNoBlock),
      lru_next_(size_t(num_blocks), kNoBlock) {
  free_.reserve(size_t(num_blocks));
  // Lowest ids on top of the stack: allocation order is deterministic and starts at block 0.
  for (int64_t id = num_blocks - 1; id >= 0; --id) free_.push_back(BlockId(id));
}

BlockPool::~BlockPool() { FreeLarge(storage_); }

void BlockPool::LinkIdleTail(BlockId id) {
  lru_prev_[size_t(id)] = lru_tail_;
  lru_next_[size_t(id)] = kNoBlock;
  if (lru_tail_ != kNoBlock) {
    lru_next_[size_t(lru_tail_)] = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
  ++num_idle_cached_;
}

void BlockPool::UnlinkIdle(BlockId id) {
  const BlockId prev = lru_prev_[size_t(id)], next = lru_next_[size_t(id)];
  (prev != kNoBlock ? lru_next_[size_t(prev)] : lru_head_) = next;
  (next != kNoBlock ? lru_prev_[size_t(next)] : lru_tail_) = prev;
  lru_prev_[size_t(id)] = lru_next_[size_t(id)] = kNoBlock;
  --num_idle_cached_;
}

void BlockPool::Unhash(BlockId id) {
  auto it = cached_.find(hash_[size_t(id)]);
  LOCKSTEP_CHECK(it != cached_.end() && it->second == id);
  cached_.erase(it);
  hashed_[size_t(id)] = 0;
}

BlockId BlockPool::Allocate() {
  BlockId id = kNoBlock;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (lru_head_ != kNoBlock) {
    id = lru_head_;
    UnlinkIdle(id);
    Unhash(id);
    ++evictions_;
  } else {
    return kNoBlock;
  }
  ref_counts_[size_t(id)] = 1;
  return id;
}

void BlockPool::Retain(BlockId id) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_);
  if (ref_counts_[size_t(id)] == 0) {
    LOCKSTEP_CHECK_MSG(cached(id), "Retain of a free block");
    UnlinkIdle(id);
  }
  ++ref_counts_[size_t(id)];
}

void BlockPool::Release(BlockId id) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_ && ref_counts_[size_t(id)] > 0);
  if (--ref_counts_[size_t(id)] > 0) return;
  if (cached(id)) {
    LinkIdleTail(id);
  } else {
    free_.push_back(id);
  }
}

BlockId BlockPool::Find(const BlockKey& key) const {
  auto it = cached_.find(key.hash);
  if (it == cached_.end()) return kNoBlock;
  const BlockId id = it->second;
  if (parent_[size_t(id)] != key.parent || key.tokens.size() != size_t(block_tokens())) return kNoBlock;
  const int32_t* stored = key_tokens_.data() + size_t(id) * size_t(block_tokens());
  if (!std::equal(key.tokens.begin(), key.tokens.end(), stored)) return kNoBlock;
  return id;
}

bool BlockPool::Publish(BlockId id, const BlockKey& key) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_ && ref_counts_[size_t(id)] > 0 && !cached(id));
  LOCKSTEP_CHECK(key.tokens.size() == size_t(block_tokens()));
  if (!cached_.emplace(key.hash, id).second) return false;
  hashed_[size_t(id)] = 1;
  hash_[size_t(id)] = key.hash;
  parent_[size_t(id)] = key.parent;
  std::copy(key.tokens.begin(), key.tokens.end(), key_tokens_.begin() + size_t(id) * size_t(block_tokens()));
  return true;
}

void BlockPool::ForgetIdle() {
  while (lru_head_ != kNoBlock) {
    const BlockId id = lru_head_;
    UnlinkIdle(id);
    Unhash(id);
    free_.push_back(id);
  }
}

bool BlockPool::ForgetIfIdle(BlockId id) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_);
  if (ref_counts_[size_t(id)] != 0 || hashed_[size_t(id)] == 0) return false;
  UnlinkIdle(id);
  Unhash(id);
  free_.push_back(id);
  return true;
}

void BlockPool::CopyBlock(BlockId from, BlockId to) {
  LOCKSTEP_CHECK(from >= 0 && from < num_blocks_ && to >= 0 && to < num_blocks_ && from != to);
  std::memcpy(data(to), data(from), layout_.BlockBytes());
}

}  // namespace lockstep
