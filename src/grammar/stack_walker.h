// StackWalker: the parse-stack machinery shared by GrammarMatcher and TokenMasker (internal to grammar/).
//
// Stacks are persistent linked lists in an arena of StackNodes: a stack is the index of its top node, whose
// position is a kBytes element; each parent node holds the position to continue at when the rule above it
// ends. Many stacks share their lower nodes. A state is a list of tops plus whether the text so far can end
// here. Advancing a byte only appends nodes, so a caller that walks many alternatives (a trie of tokens)
// saves the arena size, walks, and truncates back.
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
  StackWalker(const CompiledGrammar& grammar, bool approximate) : g_(grammar), approximate_(approximate) {}

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

 private:
  void FollowFrom(uint32_t rule, std::vector<int32_t>* out, StepFlags* flags);
  bool FirstVisit(uint32_t pos, int32_t parent);

  const CompiledGrammar& g_;
  bool approximate_;
  std::vector<StackNode> nodes_;
  // Open-addressing set of (pos, parent) keys seen this round; slots from older rounds are stale.
  std::vector<uint64_t> seen_keys_;
  std::vector<uint32_t> seen_round_;
  uint32_t round_ = 0;
  size_t seen_count_ = 0;
};

}  // namespace lockstep::grammar
