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

StateSlot RecurrentStateCache::TakeSlot(bool low_priority) {
  StateSlot slot = storage_->Acquire();
  if (slot != kNoStateSlot) return slot;
  // Every slot holds a snapshot: the least recently used low-priority one's is reused, or (for a normal
  // store) the least recently used one's.
  auto victim = entries_.end();
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    auto entry = entries_.find(*it);
    if (entry->second.low_priority) {
      victim = entry;
      break;
    }
  }
  if (victim == entries_.end()) {
    if (low_priority) return kNoStateSlot;
    victim = entries_.find(lru_.back());
  }
  slot = victim->second.slot;
  lru_.erase(victim->second.lru);
  entries_.erase(victim);
  ++evictions_;
  return slot;
}

bool RecurrentStateCache::Store(BlockHash key, const float* state, bool low_priority) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    it->second.low_priority = it->second.low_priority && low_priority;
    return true;
  }
  const StateSlot slot = TakeSlot(low_priority);
  if (slot == kNoStateSlot) return false;
  std::memcpy(storage_->data(slot), state, size_t(state_floats()) * sizeof(float));
  lru_.push_front(key);
  entries_.emplace(key, Entry{slot, lru_.begin(), low_priority});
  ++stores_;
  return true;
}

bool RecurrentStateCache::Load(BlockHash key, float* state) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  std::memcpy(state, storage_->data(it->second.slot), size_t(state_floats()) * sizeof(float));
  ++loads_;
  return true;
}

void RecurrentStateCache::DropLowPriority(BlockHash key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.low_priority) return;
  storage_->Release(it->second.slot);
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

}  // namespace lockstep
