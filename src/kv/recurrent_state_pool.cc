#include "kv/recurrent_state_pool.h"

#include <string>

#include "base/large_allocation.h"

namespace lockstep {

Result<std::unique_ptr<RecurrentStatePool>> RecurrentStatePool::Create(int64_t state_floats,
                                                                       int32_t num_slots) {
  if (state_floats < 1 || num_slots < 1) {
    return InvalidArgument("recurrent state pool needs states of >= 1 float and >= 1 slot, got " +
                           std::to_string(state_floats) + " floats x " + std::to_string(num_slots) +
                           " slots");
  }
  const size_t slot_bytes = (size_t(state_floats) * sizeof(float) + 63) / 64 * 64;
  const size_t bytes = slot_bytes * size_t(num_slots);
  void* storage = AllocateLarge(bytes);
  if (storage == nullptr) {
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes for " +
                             std::to_string(num_slots) + " recurrent states");
  }
  return std::unique_ptr<RecurrentStatePool>(
      new RecurrentStatePool(state_floats, num_slots, static_cast<float*>(storage)));
}

RecurrentStatePool::RecurrentStatePool(int64_t state_floats, int32_t num_slots, float* storage)
    : state_floats_(state_floats), num_slots_(num_slots), storage_(storage), taken_(size_t(num_slots), 0) {
  free_.reserve(size_t(num_slots));
  for (StateSlot s = num_slots - 1; s >= 0; --s) free_.push_back(s);  // slot 0 first: deterministic
}

RecurrentStatePool::~RecurrentStatePool() { FreeLarge(storage_); }

StateSlot RecurrentStatePool::Acquire() {
  if (free_.empty()) return kNoStateSlot;
  const StateSlot slot = free_.back();
  free_.pop_back();
  taken_[size_t(slot)] = 1;
  return slot;
}

void RecurrentStatePool::Release(StateSlot slot) {
  LOCKSTEP_CHECK(slot >= 0 && slot < num_slots_ && taken_[size_t(slot)] != 0);
  taken_[size_t(slot)] = 0;
  free_.push_back(slot);
}

float* RecurrentStatePool::data(StateSlot slot) const {
  LOCKSTEP_CHECK(slot >= 0 && slot < num_slots_);
  return reinterpret_cast<float*>(reinterpret_cast<std::byte*>(storage_) + size_t(slot) * SlotBytes());
}

}  // namespace lockstep
