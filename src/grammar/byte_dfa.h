// LazyByteDfa: the parse-stack sets reachable from one starting set, byte by byte, as a DFA built on demand
// (internal to grammar/, used by TokenMasker to walk the vocabulary trie). A DFA state is a canonical set of
// stacks (each a chain of positions ending in a bottom, plus the flags of the byte that led there), so two
// walks that reach the same stacks by different bytes share every later transition: walking a trie then
// costs one table lookup per node instead of an expansion. Transitions are computed with a StackWalker the
// first time they are taken.
//
// info() gives what TokenMasker needs of a state: whether some stack is exact (below it nothing is unknown)
// or approximate, and whether the text could end there (exactly / approximately). Fails (Next returns
// kTooMany) past max_states states (each holds a 1 KiB transition row), for the caller to walk directly
// instead. Hand-written: no Debian library builds DFAs over pushdown stack sets. Single-threaded; borrows
// the grammar.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_walker.h"

namespace lockstep::grammar {

class LazyByteDfa {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kTooMany = -3;
  static constexpr size_t kMaxStates = 4096;

  struct StateInfo {
    bool exact = false;   // an exact stack is alive, or the text can end here exactly
    bool approx = false;  // an approximate stack is alive, or the text can end here approximately
  };

  // The start: `nodes` / `tops` as a StackWalker holds them (approximate: follow-set continuation below the
  // bottom, as in StackWalker).
  LazyByteDfa(const CompiledGrammar& grammar, bool approximate, const std::vector<StackNode>& nodes,
              const std::vector<int32_t>& tops, size_t max_states = kMaxStates);

  int32_t start() const { return 0; }
  // The state after `byte`; kDead when no stack survives, kTooMany past the state limit.
  int32_t Next(int32_t state, uint8_t byte) {
    const int32_t t = table_[size_t(state)][byte];
    if (t != kUnknown) return t;
    const int32_t computed = Compute(state, byte);  // may grow table_: index again, keep no reference
    table_[size_t(state)][byte] = computed;
    return computed;
  }
  const StateInfo& info(int32_t state) const { return states_[size_t(state)].info; }
  size_t num_states() const { return states_.size(); }
  // Work spent computing transitions so far: stack-walk steps (StackWalker::work) plus the stack entries
  // copied, scanned and put into canonical form, and for large states the canonical sort's comparisons
  // (n (log2 n - 4) over its stacks) and its node map's inserts (a quarter of log2 - 6 per entry, its
  // depth beyond a small map): weighted so that a unit costs about what a walk step does (nested counted
  // repetition, whose states hold hundreds of thousands of stacks, took 0.4-1.1 s at the 5 M mask bound
  // when only the entries were counted, 0.09-0.25 s now).
  uint64_t work() const { return walker_.work() + intern_work_; }
  // StackWalker::set_work_limit / exhausted of the walker computing transitions: once exhausted, states
  // computed since are incomplete and the DFA must be dropped.
  // The limit covers the interning too (a state's stacks, unshared, can be far more than the walk's nodes).
  void set_work_limit(uint64_t limit) {
    walker_.set_work_limit(limit);
    work_limit_ = limit;
  }
  bool exhausted() const { return walker_.exhausted() || intern_exhausted_; }

 private:
  static constexpr int32_t kUnknown = -2;
  struct State {
    std::vector<StackNode> nodes;  // compact: only this state's stacks
    std::vector<int32_t> tops;
    StateInfo info;
  };

  int32_t Compute(int32_t state, uint8_t byte);
  // Adds `cost` to the interning work; false (exhausted, the work just past the limit) when it would pass
  // the limit.
  bool Charge(uint64_t cost);
  // Canonical form of (nodes, tops, flags): interns it and returns its id (kTooMany past the limit).
  int32_t Intern(const std::vector<StackNode>& nodes, const std::vector<int32_t>& tops,
                 const StepFlags& flags);

  StackWalker walker_;
  size_t max_states_;
  std::vector<State> states_;
  std::vector<std::array<int32_t, 256>> table_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<int32_t> scratch_tops_;
  uint64_t intern_work_ = 0;
  uint64_t work_limit_ = UINT64_MAX;
  bool intern_exhausted_ = false;
};

}  // namespace lockstep::grammar
