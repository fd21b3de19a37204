// StackWalker: the parse-stack machinery shared by GrammarMatcher and TokenMasker (internal to grammar/).
//
// Stacks are persistent linked lists in an arena of StackNodes: a stack is the index of its top node, whose
// position is a kBytes element; each parent node holds the position to continue at when the rule above it
// ends. Many stacks share their lower nodes. A state is a list of tops plus whether the text so far can end
// here. Advancing a byte only appends nodes, so a caller that walks many alternatives (a trie of tokens)
// saves the arena size, walks, and truncates back.
//
// Nodes are hash-consed: a node equal to one already in the arena (same position, same parent index) is
// reused, so structurally equal stacks are one index and a round expands each (position, parent) once.
// Without it nested nullable repetition (`((a)*)*`, regex `a****`) yields equal stacks under distinct
// indices, each expanded again: their number grew exponentially with the bytes walked in one go (a token's
// bytes, a trie path). The table is validated on lookup, so callers may truncate or replace the arena.
//
// Bottoms: kExactBottom below the real start (popping it = the grammar is complete), kApproxBottom below
// stacks whose lower part is unknown. In approximate mode, popping past a bottom continues at the follow
// positions of the rule that ended (CompiledGrammar::Follow), above kApproxBottom: an over-approximation of
// every real stack, used to judge tokens that run past the end of the rule a mask is cached for.
// Single-threaded; borrows the grammar.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace lockstep::grammar {

inline constexpr int32_t kExactBottom = -1;
inline constexpr int32_t kApproxBottom = -2;

struct StackNode {
  uint32_t pos = 0;
  int32_t parent = kExactBottom;  // a node index or a bottom
  bool approx = false;            // the stack ends in kApproxBottom
};

struct StepFlags {
  bool exact_end = false;   // a stack popped past kExactBottom: the text can end here
  bool approx_end = false;  // ... past kApproxBottom into a rule that can end the grammar
};

class StackWalker {
 public:
  // hash_cons false: nodes are appended without lookup, for a caller that walks one byte at a time from
  // structurally unique stacks and merges equal stacks itself (LazyByteDfa): one round stays polynomial.
  StackWalker(const CompiledGrammar& grammar, bool approximate, bool hash_cons = true)
      : g_(grammar), approximate_(approximate), hash_cons_(hash_cons) {}
  // Copies the arena and the work count; the lookup tables (caches) start empty in the copy.
  StackWalker(const StackWalker& other)
      : g_(other.g_),
        approximate_(other.approximate_),
        hash_cons_(other.hash_cons_),
        nodes_(other.nodes_),
        work_(other.work_) {}
  StackWalker(StackWalker&&) = default;

  std::vector<StackNode>& nodes() { return nodes_; }
  const std::vector<StackNode>& nodes() const { return nodes_; }

  // Starts a new round of expansions (one byte, or the initial state): duplicate (position, parent) pairs
  // within a round are expanded once.
  void BeginRound();
  // Expands position `pos` above `parent`: appends the resulting top nodes to *out.
  void Expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, StepFlags* flags);
  // One round: the tops (*tops)[begin, end) consume `byte`; the new tops are appended to *out (which may be
  // `tops` itself). Returns whether anything survived (a new top or an end).
  bool Advance(const std::vector<int32_t>* tops, size_t begin, size_t end, uint8_t byte,
               std::vector<int32_t>* out, StepFlags* flags);

  // Work done since construction: first visits of a (position, parent) pair plus nodes looked up or pushed,
  // plus two per hash-consing slot filled (the table's rebuild scans, amortized).
  // Deterministic for a given grammar and input; callers bound their work with it.
  uint64_t work() const { return work_; }
  // Past `limit` (compared with work()), Expand expands nothing more and exhausted() turns true: the round's
  // result is then incomplete, for the caller to give up (one round of an ambiguous grammar, such as nested
  // counted repetition, can reach millions of stacks).
  void set_work_limit(uint64_t limit) { work_limit_ = limit; }
  bool exhausted() const { return exhausted_; }
  // An estimate of the heap memory held: the arena and the lookup tables (their capacities).
  size_t MemoryBytes() const {
    return nodes_.capacity() * sizeof(StackNode) + seen_keys_.capacity() * sizeof(uint64_t) +
           seen_round_.capacity() * sizeof(uint32_t) +
           (cons_.capacity() + cons_spare_.capacity()) * sizeof(ConsSlot);
  }

 private:
  void FollowFrom(uint32_t rule, std::vector<int32_t>* out, StepFlags* flags);
  bool FirstVisit(uint32_t pos, int32_t parent);
  // The node (pos, parent, approx), reused when the arena already holds it, else appended.
  int32_t Node(uint32_t pos, int32_t parent, bool approx);

  const CompiledGrammar& g_;
  bool approximate_;
  bool hash_cons_;
  std::vector<StackNode> nodes_;
  // Open-addressing set of (pos, parent) keys seen this round; slots from older rounds are stale.
  std::vector<uint64_t> seen_keys_;
  std::vector<uint32_t> seen_round_;
  uint32_t round_ = 0;
  size_t seen_count_ = 0;
  // Open-addressing hash-consing table; an entry whose node was truncated away or overwritten is stale.
  struct ConsSlot {
    uint64_t key = 0;    // (pos, parent)
    int32_t index = -1;  // -1: empty
  };
  // The slot's node is still in the arena with the slot's key (not truncated away or replaced).
  bool ConsValid(const ConsSlot& slot) const {
    if (slot.index < 0 || size_t(slot.index) >= nodes_.size()) return false;
    const StackNode& n = nodes_[size_t(slot.index)];
    return ((uint64_t(n.pos) << 32) | uint32_t(n.parent)) == slot.key;
  }
  void RebuildCons();
  std::vector<ConsSlot> cons_;
  std::vector<ConsSlot> cons_spare_;  // the rebuild's target, kept for its allocation
  size_t cons_used_ = 0;              // slots ever filled since the last rebuild
  uint64_t work_ = 0;
  uint64_t work_limit_ = UINT64_MAX;
  bool exhausted_ = false;
};

}  // namespace lockstep::grammar
