#include "grammar/byte_dfa.h"

#include <algorithm>
#include <bit>
#include <map>

namespace lockstep::grammar {

LazyByteDfa::LazyByteDfa(const CompiledGrammar& grammar, bool approximate,
                         const std::vector<StackNode>& nodes, const std::vector<int32_t>& tops,
                         size_t max_states)
    : walker_(grammar, approximate, /*hash_cons=*/false), max_states_(std::max<size_t>(1, max_states)) {
  Intern(nodes, tops, StepFlags{});
}

bool LazyByteDfa::Charge(uint64_t cost) {
  if (work() + cost <= work_limit_) {
    intern_work_ += cost;
    return true;
  }
  // Just past the limit, not by the whole cost: the bound's overshoot stays one step.
  intern_work_ = std::max(intern_work_, work_limit_ - std::min(work_limit_, walker_.work()) + 1);
  intern_exhausted_ = true;
  return false;
}

int32_t LazyByteDfa::Compute(int32_t state, uint8_t byte) {
  // The copies below and Advance's scan of the tops.
  if (!Charge(states_[size_t(state)].nodes.size() + states_[size_t(state)].tops.size())) return kDead;
  // The walk's share of the limit: what interning has not used.
  if (work_limit_ != UINT64_MAX)
    walker_.set_work_limit(work_limit_ > intern_work_ ? work_limit_ - intern_work_ : 0);
  walker_.nodes() = states_[size_t(state)].nodes;
  const std::vector<int32_t> tops = states_[size_t(state)].tops;
  scratch_tops_.clear();
  StepFlags flags;
  if (!walker_.Advance(&tops, 0, tops.size(), byte, &scratch_tops_, &flags)) return kDead;
  if (walker_.exhausted()) return kDead;  // incomplete: not a state (the caller drops the DFA)
  return Intern(walker_.nodes(), scratch_tops_, flags);
}

int32_t LazyByteDfa::Intern(const std::vector<StackNode>& nodes, const std::vector<int32_t>& tops,
                            const StepFlags& flags) {
  // Each stack as its positions, top first, then its bottom (exact / approximate).
  std::vector<std::vector<uint32_t>> chains;
  chains.reserve(tops.size());
  for (int32_t top : tops) {
    std::vector<uint32_t> chain;
    int32_t n = top;
    for (; n >= 0; n = nodes[size_t(n)].parent) chain.push_back(nodes[size_t(n)].pos);
    chain.push_back(n == kApproxBottom ? UINT32_MAX : UINT32_MAX - 1);
    intern_work_ += chain.size();
    if (work() > work_limit_) {
      intern_exhausted_ = true;
      return kDead;  // incomplete: the caller drops the DFA
    }
    chains.push_back(std::move(chain));
  }
  // The sort's comparisons and the node map's inserts below (see work() in the header).
  size_t entries = 0;
  for (const std::vector<uint32_t>& chain : chains) entries += chain.size();
  // Only the log factor beyond small states: for those the per-entry count above covers it.
  const auto log_beyond = [](size_t n, int small) {
    return uint64_t(std::max(0, int(std::bit_width(n)) - small));
  };
  if (!Charge(chains.size() * log_beyond(chains.size(), 4) + entries * log_beyond(entries, 6) / 4)) {
    return kDead;  // incomplete: the caller drops the DFA
  }
  std::sort(chains.begin(), chains.end());
  chains.erase(std::unique(chains.begin(), chains.end()), chains.end());
  std::string key;
  key += char(flags.exact_end ? 1 : 0);
  key += char(flags.approx_end ? 1 : 0);
  for (const std::vector<uint32_t>& chain : chains) {
    key.append(reinterpret_cast<const char*>(chain.data()), chain.size() * sizeof(uint32_t));
  }
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (states_.size() >= max_states_) return kTooMany;
  State s;
  s.info.exact = flags.exact_end;
  s.info.approx = flags.approx_end;
  std::map<std::pair<uint32_t, int32_t>, int32_t> interned;  // (pos, parent) -> node
  for (const std::vector<uint32_t>& chain : chains) {
    const bool approx = chain.back() == UINT32_MAX;
    (approx ? s.info.approx : s.info.exact) = true;
    int32_t below = approx ? kApproxBottom : kExactBottom;
    for (size_t i = chain.size() - 1; i-- > 0;) {
      auto [it, inserted] = interned.try_emplace({chain[i], below}, int32_t(s.nodes.size()));
      if (inserted) s.nodes.push_back({chain[i], below, approx});
      below = it->second;
    }
    s.tops.push_back(below);
  }
  const int32_t id = int32_t(states_.size());
  states_.push_back(std::move(s));
  table_.emplace_back();
  table_.back().fill(kUnknown);
  ids_.emplace(std::move(key), id);
  return id;
}

}  // namespace lockstep::grammar
