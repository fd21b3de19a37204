#include "grammar/stack_walker.h"

namespace lockstep::grammar {
namespace {

size_t Slot(uint64_t key, size_t mask) { return size_t((key * 0x9E3779B97F4A7C15ull) >> 40) & mask; }

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
  const uint64_t key = (uint64_t(pos) << 32) | uint32_t(parent);
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

void StackWalker::FollowFrom(uint32_t rule, std::vector<int32_t>* out, StepFlags* flags) {
  if (g_.CanEndAfter(rule)) flags->approx_end = true;
  for (uint32_t f : g_.Follow(rule)) Expand(f, kApproxBottom, out, flags);
}

void StackWalker::Expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, StepFlags* flags) {
  if (!FirstVisit(pos, parent)) return;
  for (const ClosureItem& item : g_.Closure(pos)) {
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
    for (uint32_t c : g_.Chain(item)) {
      nodes_.push_back({c, below, approx});
      below = int32_t(nodes_.size() - 1);
    }
    nodes_.push_back({item.terminal, below, approx});
    out->push_back(int32_t(nodes_.size() - 1));
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
