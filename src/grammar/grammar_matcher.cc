#include "grammar/grammar_matcher.h"

#include <unordered_map>

namespace lockstep::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), walker_(*grammar_, /*approximate=*/false) {
  StepFlags flags;
  walker_.BeginRound();
  walker_.Expand(CompiledGrammar::kStart, kExactBottom, &tops_, &flags);
  accepting_ = flags.exact_end;
  Compact();
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (bytes.empty()) return true;
  const size_t nodes_before = walker_.nodes().size();
  std::vector<int32_t> current = tops_;
  bool accepting = accepting_;
  for (unsigned char byte : bytes) {
    scratch_.clear();
    StepFlags flags;
    if (!walker_.Advance(&current, 0, current.size(), byte, &scratch_, &flags)) {
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
