#include "grammar/stack_walker.h"

#include <algorithm>

namespace lockstep::grammar {
namespace {

size_t Slot(uint64_t key, size_t mask) { return size_t((key * 0x9E3779B97F4A7C15ull) >> 40) & mask; }
uint64_t Key(uint32_t pos, int32_t parent) { return (uint64_t(pos) << 32) | uint32_t(parent); }

// Tags a FirstVisit key as "this top was output this round" (positions stay far below 2^31).
constexpr uint32_t kTopTag = 0x80000000u;

}  // namespace

void StackWalker::BeginRound() {
  ++round_;
  seen_count_ = 0;
  if (round_ == 0) {  // wrapped: forget every slot
    std::fill(seen_round_.begin(), seen_round_.end(), 0);
    round_ = 1;
  }
}

bool StackWalker::FirstVisit(uint32_t pos, int32_t parent) {
  if (seen_keys_.empty()) {
    seen_keys_.assign(64, 0);
    seen_round_.assign(64, 0);
  }
  if ((seen_count_ + 1) * 2 > seen_keys_.size()) {
    std::vector<uint64_t> keys(seen_keys_.size() * 2, 0);
    std::vector<uint32_t> rounds(seen_keys_.size() * 2, 0);
    for (size_t i = 0; i < seen_keys_.size(); ++i) {
      if (seen_round_[i] != round_) continue;
      size_t s = Slot(seen_keys_[i], keys.size() - 1);
      while (rounds[s] == round_) s = (s + 1) & (keys.size() - 1);
      keys[s] = seen_keys_[i];
      rounds[s] = round_;
    }
    seen_keys_ = std::move(keys);
    seen_round_ = std::move(rounds);
  }
  const uint64_t key = Key(pos, parent);
  const size_t mask = seen_keys_.size() - 1;
  for (size_t s = Slot(key, mask);; s = (s + 1) & mask) {
    if (seen_round_[s] != round_) {
      seen_round_[s] = round_;
      seen_keys_[s] = key;
      ++seen_count_;
      return true;
    }
    if (seen_keys_[s] == key) return false;
  }
}

// Out of line: the rare path, kept from Node's hot one.
[[gnu::noinline]] void StackWalker::RebuildCons() {
  // Rebuild from the entries still valid (the arena may have been truncated), doubling while they fill
  // more than a quarter; the table never shrinks, so a rebuild costs O(1) per insert since the last one.
  size_t live = 0;
  for (const ConsSlot& slot : cons_) live += ConsValid(slot) ? 1 : 0;
  size_t size = std::max<size_t>(64, cons_.size());
  while (size < live * 4) size *= 2;
  cons_spare_.assign(size, ConsSlot{});
  cons_used_ = 0;
  for (const ConsSlot& slot : cons_) {
    if (!ConsValid(slot)) continue;
    size_t s = Slot(slot.key, size - 1);
    while (cons_spare_[s].index >= 0 && cons_spare_[s].key != slot.key) s = (s + 1) & (size - 1);
    if (cons_spare_[s].index < 0) ++cons_used_;
    cons_spare_[s] = slot;
  }
  cons_.swap(cons_spare_);
}

int32_t StackWalker::Node(uint32_t pos, int32_t parent, bool approx) {
  ++work_;
  if (!hash_cons_) {
    nodes_.push_back({pos, parent, approx});
    return int32_t(nodes_.size() - 1);
  }
  const uint64_t key = Key(pos, parent);  // before the call below: kept in a register across it
  if ((cons_used_ + 1) * 2 > cons_.size()) [[unlikely]]
    RebuildCons();
  const size_t mask = cons_.size() - 1;
  size_t s = Slot(key, mask);
  bool reuse = false;  // s holds a stale entry of this key (the arena was truncated below it): overwrite it
  for (; cons_[s].index >= 0; s = (s + 1) & mask) {
    if (cons_[s].key != key) continue;
    if (!ConsValid(cons_[s])) {
      reuse = true;
      break;
    }
    if (nodes_[size_t(cons_[s].index)].approx == approx) return cons_[s].index;
  }
  const size_t free_slot = s;
  if (!reuse) {
    ++cons_used_;
    work_ += 2;  // RebuildCons scans the table after size / 2 fills (size / 4 at worst): its share, amortized
  }
  nodes_.push_back({pos, parent, approx});
  cons_[free_slot] = ConsSlot{key, int32_t(nodes_.size() - 1)};
  return int32_t(nodes_.size() - 1);
}

void StackWalker::FollowFrom(uint32_t rule, std::vector<int32_t>* out, StepFlags* flags) {
  if (g_.CanEndAfter(rule)) flags->approx_end = true;
  for (uint32_t f : g_.Follow(rule)) Expand(f, kApproxBottom, out, flags);
}

void StackWalker::Expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, StepFlags* flags) {
  if (work_ >= work_limit_) {
    exhausted_ = true;
    return;
  }
  if (!FirstVisit(pos, parent)) return;
  ++work_;
  for (const ClosureItem& item : g_.Closure(pos)) {
    if (work_ >= work_limit_) {  // a closure can hold millions of items
      exhausted_ = true;
      return;
    }
    if (item.terminal == kPop) {
      if (parent >= 0) {
        const StackNode up = nodes_[parent];
        Expand(up.pos, up.parent, out, flags);
      } else if (parent == kExactBottom) {
        flags->exact_end = true;
        if (approximate_) FollowFrom(g_.RuleOf(pos), out, flags);
      } else {
        FollowFrom(g_.RuleOf(pos), out, flags);
      }
      continue;
    }
    const bool approx = parent == kApproxBottom || (parent >= 0 && nodes_[parent].approx);
    int32_t below = parent;
    for (uint32_t c : g_.Chain(item)) below = Node(c, below, approx);
    const int32_t top = Node(item.terminal, below, approx);
    if (FirstVisit(kTopTag, top)) out->push_back(top);  // equal stacks reached twice are one top
  }
}

bool StackWalker::Advance(const std::vector<int32_t>* tops, size_t begin, size_t end, uint8_t byte,
                          std::vector<int32_t>* out, StepFlags* flags) {
  BeginRound();
  const size_t out_before = out->size();
  for (size_t i = begin; i < end; ++i) {
    const StackNode top = nodes_[(*tops)[i]];
    if (!g_.Matches(top.pos, byte)) continue;
    Expand(top.pos + 1, top.parent, out, flags);
  }
  return out->size() != out_before || flags->exact_end || flags->approx_end;
}

}  // namespace lockstep::grammar
