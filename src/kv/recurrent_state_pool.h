// RecurrentStatePool: the state store of models with recurrent layers (qwen35's Gated DeltaNet; model/batch.h
// KvLayout::recurrent_state_floats), beside the paged KV cache. A fixed number of slots, each one sequence's
// whole recurrent state (every recurrent layer's conv window and state matrices); the scheduler takes a slot
// when it admits a sequence and gives it back when the sequence finishes, is cancelled or is preempted, so
// slots are a limited resource like blocks. A slot's content is meaningful only with its sequence's computed
// count: a state is never shared (unlike KV blocks, it cannot be cut at a prefix), so a preempted sequence
// recomputes from position 0 (the forward pass starts a sequence's state from zeros there) or from a copy
// kept at a block boundary: prefix-cache hits need such snapshots (kv/recurrent_state_cache.h).
// Engine-thread only (not thread-safe).
//
//   storage_ (one aligned allocation, num_slots x SlotBytes):   [ slot 0 ][ slot 1 ] ... [ slot N-1 ]
//   free_: stack of free slots (top = next to hand out)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"

namespace lockstep {

using StateSlot = int32_t;
inline constexpr StateSlot kNoStateSlot = -1;

class RecurrentStatePool {
 public:
  // InvalidArgument for state_floats < 1 or num_slots < 1; ResourceExhausted when the memory cannot be had.
  static Result<std::unique_ptr<RecurrentStatePool>> Create(int64_t state_floats, int32_t num_slots);
  ~RecurrentStatePool();
  RecurrentStatePool(const RecurrentStatePool&) = delete;
  RecurrentStatePool& operator=(const RecurrentStatePool&) = delete;

  int64_t state_floats() const { return state_floats_; }
  int32_t num_slots() const { return num_slots_; }
  int32_t num_free() const { return int32_t(free_.size()); }
  size_t bytes() const { return size_t(num_slots_) * SlotBytes(); }

  // A free slot, or kNoStateSlot when every slot is taken. Its content is whatever it held last.
  StateSlot Acquire();
  // Gives a taken slot back.
  void Release(StateSlot slot);
  bool taken(StateSlot slot) const { return taken_[size_t(slot)] != 0; }
  float* data(StateSlot slot) const;

 private:
  RecurrentStatePool(int64_t state_floats, int32_t num_slots, float* storage);
  size_t SlotBytes() const { return (size_t(state_floats_) * sizeof(float) + 63) / 64 * 64; }

  int64_t state_floats_;
  int32_t num_slots_;
  float* storage_;  // owned (aligned allocation)
  std::vector<StateSlot> free_;
  std::vector<uint8_t> taken_;
};

}  // namespace lockstep
