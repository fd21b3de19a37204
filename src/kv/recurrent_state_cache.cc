#include "kv/recurrent_state_cache.h"

#include <cstring>

namespace lockstep {

Result<std::unique_ptr<RecurrentStateCache>> RecurrentStateCache::Create(int64_t state_floats,
                                                                         int32_t num_slots) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<RecurrentStatePool> storage,
                            RecurrentStatePool::Create(state_floats, num_slots));
  return std::unique_ptr<RecurrentStateCache>(new RecurrentStateCache(std::move(storage)));
}

RecurrentStateCache::~RecurrentStateCache() = default;

void RecurrentStateCache::Store(BlockHash key, const float* state) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  StateSlot slot = storage_->Acquire();
  if (slot == kNoStateSlot) {  // every slot holds a snapshot: the least recently used one's is reused
    auto victim = entries_.find(lru_.back());
    slot = victim->second.slot;
    entries_.erase(victim);
    lru_.pop_back();
    ++evictions_;
  }
  std::memcpy(storage_->data(slot), state, size_t(state_floats()) * sizeof(float));
  lru_.push_front(key);
  entries_.emplace(key, Entry{slot, lru_.begin()});
  ++stores_;
}

bool RecurrentStateCache::Load(BlockHash key, float* state) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  std::memcpy(state, storage_->data(it->second.slot), size_t(state_floats()) * sizeof(float));
  ++loads_;
  return true;
}

}  // namespace lockstep
