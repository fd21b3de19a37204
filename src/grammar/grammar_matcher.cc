#include "grammar/grammar_matcher.h"

#include <unordered_map>

namespace lockstep::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, uint64_t max_accept_work)
    : grammar_(std::move(grammar)), walker_(*grammar_, /*approximate=*/false), max_work_(max_accept_work) {
  StepFlags flags;
  walker_.set_work_limit(max_work_);
  walker_.BeginRound();
  walker_.Expand(CompiledGrammar::kStart, kExactBottom, &tops_, &flags);
  if (walker_.exhausted()) {
    over_budget_ = true;
    tops_.clear();
    walker_.nodes().clear();
    return;
  }
  accepting_ = flags.exact_end;
  Compact();
}

std::string GrammarMatcher::over_budget_message() const {
  if (!over_budget_) return "";
  return "the grammar is too costly to follow: advancing its parse over one token needs more than " +
         std::to_string(max_work_) +
         " parse-stack steps (many alternatives or nested repetitions that can match the same text; simplify "
         "the grammar)";
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (over_budget_) return false;
  if (bytes.empty()) return true;
  const size_t nodes_before = walker_.nodes().size();
  const uint64_t work_before = walker_.work();
  walker_.set_work_limit(max_work_ > UINT64_MAX - work_before ? UINT64_MAX : work_before + max_work_);
  uint64_t scanned = 0;  // live stacks looked at, one per stack per byte
  std::vector<int32_t> current = tops_;
  bool accepting = accepting_;
  for (unsigned char byte : bytes) {
    // One bound, checked after each byte: Advance itself stops at the walker's work limit set above, so a
    // byte cannot overrun it by more than one bounded Advance.
    scanned += current.size();
    scratch_.clear();
    StepFlags flags;
    const bool advanced = walker_.Advance(&current, 0, current.size(), byte, &scratch_, &flags);
    over_budget_ = walker_.exhausted() || walker_.work() - work_before + scanned > max_work_;
    if (!advanced || over_budget_) {
      walker_.nodes().resize(nodes_before);
      return false;
    }
    current.swap(scratch_);
    accepting = flags.exact_end;
  }
  tops_ = std::move(current);
  accepting_ = accepting;
  Compact();
  return true;
}

void GrammarMatcher::Compact() {
  const std::vector<StackNode>& old = walker_.nodes();
  std::vector<StackNode> fresh;
  std::vector<int32_t> remap(old.size(), -2);  // -2: not copied yet
  std::unordered_map<uint64_t, int32_t> interned;
  std::vector<int32_t> path;
  auto copy = [&](int32_t top) {
    // Copy the chain bottom-up, interning (pos, new parent).
    path.clear();
    for (int32_t n = top; n >= 0 && remap[n] == -2; n = old[n].parent) path.push_back(n);
    for (size_t i = path.size(); i-- > 0;) {
      const StackNode& node = old[path[i]];
      const int32_t parent = node.parent >= 0 ? remap[node.parent] : node.parent;
      const uint64_t key = (uint64_t(node.pos) << 32) | uint32_t(parent);
      auto [it, inserted] = interned.try_emplace(key, int32_t(fresh.size()));
      if (inserted) fresh.push_back({node.pos, parent, false});
      remap[path[i]] = it->second;
    }
    return remap[top];
  };
  std::vector<int32_t> tops;
  std::vector<bool> used;
  for (int32_t top : tops_) {
    const int32_t t = copy(top);
    if (size_t(t) >= used.size()) used.resize(size_t(t) + 1, false);
    if (!used[t]) {
      used[t] = true;
      tops.push_back(t);
    }
  }
  walker_.nodes() = std::move(fresh);
  tops_ = std::move(tops);
}

}  // namespace lockstep::grammar
