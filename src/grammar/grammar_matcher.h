// GrammarMatcher: the incremental parse state of one generated text against a CompiledGrammar. Feed it the
// bytes of each sampled token (AcceptBytes); it knows whether the text so far is a complete match
// (accepting), whether any byte can extend it (CanContinue), and hands its stacks to a TokenMasker for the
// next step's allowed tokens. Rejected input leaves the state unchanged.
//
// The state is a set of parse stacks (grammar/stack_walker.h); after each accepted piece the arena is
// compacted, with structurally equal stacks merged, so memory stays proportional to the live stacks however
// long the text grows. One per request; single-threaded; shares the immutable grammar.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_walker.h"

namespace lockstep::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Consumes `bytes` if the grammar allows them after the text so far; false (and no change) otherwise.
  bool AcceptBytes(std::string_view bytes);
  // The text so far is a complete match of the grammar (the model may stop here).
  bool accepting() const { return accepting_; }
  // Some byte can extend the text (false: complete, nothing more may follow).
  bool CanContinue() const { return !tops_.empty(); }

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
  bool accepting_ = false;
};

}  // namespace lockstep::grammar
