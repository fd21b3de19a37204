// LocalKv: KV storage for one sequence, allocated directly as KvLayout blocks (model/batch.h) — for the
// single-sequence CLI, tests and benchmarks; the engine uses the kv/ layer's shared block pool instead.
// Owns its memory (zero-filled, 64-byte aligned blocks, and the recurrent state when the layout has one);
// blocks() is what SequenceKv borrows. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/batch.h"

namespace lockstep {

class LocalKv {
 public:
  // Enough blocks for `tokens` positions.
  LocalKv(const KvLayout& layout, int64_t tokens)
      : layout_(layout), recurrent_state_(size_t(layout.recurrent_state_floats)) {
    Reserve(tokens);
  }

  // Grows to cover `tokens` positions (existing blocks keep their addresses and contents).
  void Reserve(int64_t tokens) {
    const int64_t needed = (tokens + layout_.block_tokens - 1) / layout_.block_tokens;
    const size_t bytes = (layout_.BlockBytes() + 63) / 64 * 64;
    while (int64_t(blocks_.size()) < needed) {
      storage_.emplace_back(new (std::align_val_t(64)) std::byte[bytes]());
      blocks_.push_back(storage_.back().get());
    }
  }
  const std::vector<std::byte*>& blocks() const { return blocks_; }
  SequenceKv view() const {
    return SequenceKv{&blocks_, {}, recurrent_state_.empty() ? nullptr : recurrent_state_.data()};
  }
  int64_t capacity_tokens() const { return int64_t(blocks_.size()) * layout_.block_tokens; }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  KvLayout layout_;
  std::vector<std::unique_ptr<std::byte[], AlignedDelete>> storage_;
  std::vector<std::byte*> blocks_;
  mutable std::vector<float> recurrent_state_;  // written through view()'s pointer by Forward
};

}  // namespace lockstep
