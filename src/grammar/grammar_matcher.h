// GrammarMatcher: the incremental parse state of one generated text against a CompiledGrammar. Feed it the
// bytes of each sampled token (AcceptBytes); it knows whether the text so far is a complete match
// (accepting), whether any byte can extend it (CanContinue), and hands its stacks to a TokenMasker for the
// next step's allowed tokens. Rejected input leaves the state unchanged.
//
// The state is a set of parse stacks (grammar/stack_walker.h); after each accepted piece the arena is
// compacted, with structurally equal stacks merged, so memory stays proportional to the live stacks however
// long the text grows. One per request; single-threaded; shares the immutable grammar.
//
// Work bound: what one AcceptBytes (or the constructor's initial expansion) may spend is counted
// deterministically (StackWalker::work plus one per live stack scanned per byte) and capped at
// max_accept_work. Ambiguous grammars (nested counted repetition) can reach millions of stacks in one token;
// past the bound the call fails, the state is left as it was, and over_budget() turns true for good (every
// later AcceptBytes fails at once, CanContinue is false): the caller ends the text with
// over_budget_message().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_walker.h"

namespace lockstep::grammar {

class GrammarMatcher {
 public:
  // 0.1-0.3 s of a Sapphire Rapids core at the limit, as TokenMasker::kDefaultMaxMaskWork.
  static constexpr uint64_t kDefaultMaxAcceptWork = 5'000'000;

  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                          uint64_t max_accept_work = kDefaultMaxAcceptWork);

  // Consumes `bytes` if the grammar allows them after the text so far; false (and no change) otherwise,
  // or when it would pass the work bound (then over_budget()).
  bool AcceptBytes(std::string_view bytes);
  // An AcceptBytes (or the initial expansion) needed more than max_accept_work (sticky).
  bool over_budget() const { return over_budget_; }
  // Why, for the client ("" while within the bound).
  std::string over_budget_message() const;
  // The text so far is a complete match of the grammar (the model may stop here).
  bool accepting() const { return accepting_; }
  // Some byte can extend the text (false: complete, nothing more may follow).
  bool CanContinue() const { return !tops_.empty() && !over_budget_; }

  const CompiledGrammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const CompiledGrammar>& shared_grammar() const { return grammar_; }
  // The live stacks (tops index into nodes; unique, in a fixed order), for TokenMasker.
  const std::vector<StackNode>& nodes() const { return walker_.nodes(); }
  const std::vector<int32_t>& tops() const { return tops_; }
  // Stack-walk work done so far (StackWalker::work): deterministic, for bounds and tests.
  uint64_t work() const { return walker_.work(); }

 private:
  void Compact();

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackWalker walker_;
  std::vector<int32_t> tops_;
  std::vector<int32_t> scratch_;
  uint64_t max_work_;
  bool accepting_ = false;
  bool over_budget_ = false;
};

}  // namespace lockstep::grammar
