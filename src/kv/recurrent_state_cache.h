// RecurrentStateCache: the prefix cache's half for models with recurrent layers (qwen35; after vLLM's hybrid
// prefix caching). A recurrent state cannot be cut at a prefix, so the scheduler copies a sequence's whole
// state (RecurrentStatePool::state_floats floats) here at chosen KV block boundaries, named by the chain hash
// of the full block that ends there (kv/block_hash.h: it names the whole prefix and its salt). Another
// sequence whose cached KV blocks reach that boundary copies the snapshot into its own state slot and
// computes on from there. A fixed number of slots; storing into a full cache evicts the least recently used
// snapshot. A snapshot says nothing about the KV blocks: it is used only where those are matched too
// (KvCacheManager::Match's usable_end). Engine-thread only (not thread-safe).
//
//   storage_: a RecurrentStatePool of num_slots (its slots taken while they hold a snapshot)
//   entries_: hash -> slot and place in lru_ (front = most recently stored or loaded)
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/recurrent_state_pool.h"

namespace lockstep {

class RecurrentStateCache {
 public:
  // InvalidArgument for state_floats < 1 or num_slots < 1; ResourceExhausted when the memory cannot be had.
  static Result<std::unique_ptr<RecurrentStateCache>> Create(int64_t state_floats, int32_t num_slots);
  ~RecurrentStateCache();
  RecurrentStateCache(const RecurrentStateCache&) = delete;
  RecurrentStateCache& operator=(const RecurrentStateCache&) = delete;

  int64_t state_floats() const { return storage_->state_floats(); }
  int32_t num_slots() const { return storage_->num_slots(); }
  int32_t num_used() const { return int32_t(entries_.size()); }
  size_t bytes() const { return storage_->bytes(); }

  bool Contains(BlockHash key) const { return entries_.count(key) != 0; }
  // Keeps a copy of `state` (state_floats floats) as the snapshot named `key`. When every slot holds one, the
  // least recently used low-priority snapshot is evicted, or if none the least recently used one. A
  // low-priority store (`low_priority`: a state a request may want later, not one a request waits for) only
  // evicts low-priority snapshots and is dropped when it cannot (false). A key already held is only marked
  // used (and normal, when stored as normal): one key names one prefix, so one state.
  bool Store(BlockHash key, const float* state, bool low_priority = false);
  // Copies the snapshot named `key` into `state` and marks it used; false (state untouched) when none.
  bool Load(BlockHash key, float* state);
  // Drops the snapshot named `key` if it is a low-priority one (its slot is free again); a normal one may
  // serve another request and stays.
  void DropLowPriority(BlockHash key);

  int64_t stores() const { return stores_; }        // snapshots copied in
  int64_t loads() const { return loads_; }          // snapshots copied out (cache hits)
  int64_t evictions() const { return evictions_; }  // snapshots dropped for a new one

 private:
  struct Entry {
    StateSlot slot;
    std::list<BlockHash>::iterator lru;
    bool low_priority = false;
  };

  // The slot for a new snapshot: a free one, else an evicted one (Store's order); kNoStateSlot when a
  // low-priority store finds nothing it may evict.
  StateSlot TakeSlot(bool low_priority);

  explicit RecurrentStateCache(std::unique_ptr<RecurrentStatePool> storage) : storage_(std::move(storage)) {}

  std::unique_ptr<RecurrentStatePool> storage_;
  std::list<BlockHash> lru_;
  std::unordered_map<BlockHash, Entry> entries_;
  int64_t stores_ = 0;
  int64_t loads_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace lockstep
