#include "kv/block_pool.h"

#include <string>

#include "base/large_allocation.h"

namespace lockstep {

Result<std::unique_ptr<BlockPool>> BlockPool::Create(const KvLayout& layout, int64_t num_blocks) {
  if (layout.n_layer < 1 || layout.n_kv_head < 1 || layout.head_dim < 1 || layout.block_tokens < 1) {
    return InvalidArgument("KV layout has an empty dimension (layers " + std::to_string(layout.n_layer) +
                           ", kv heads " + std::to_string(layout.n_kv_head) + ", head dim " +
                           std::to_string(layout.head_dim) + ", block tokens " +
                           std::to_string(layout.block_tokens) + ")");
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
    : layout_(layout), num_blocks_(num_blocks), storage_(storage), ref_counts_(size_t(num_blocks), 0) {
  free_.reserve(size_t(num_blocks));
  // Lowest ids on top of the stack: allocation order is deterministic and starts at block 0.
  for (int64_t id = num_blocks - 1; id >= 0; --id) free_.push_back(BlockId(id));
}

BlockPool::~BlockPool() { FreeLarge(storage_); }

BlockId BlockPool::Allocate() {
  if (free_.empty()) return kNoBlock;
  const BlockId id = free_.back();
  free_.pop_back();
  ref_counts_[size_t(id)] = 1;
  return id;
}

void BlockPool::Retain(BlockId id) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_ && ref_counts_[size_t(id)] > 0);
  ++ref_counts_[size_t(id)];
}

void BlockPool::Release(BlockId id) {
  LOCKSTEP_CHECK(id >= 0 && id < num_blocks_ && ref_counts_[size_t(id)] > 0);
  if (--ref_counts_[size_t(id)] == 0) free_.push_back(id);
}

}  // namespace lockstep
