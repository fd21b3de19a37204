// CompiledGrammar: a Grammar lowered to bytes for matching. Every character class becomes byte sets: an
// ASCII-only class is one byte-set element, any other class a small generated rule whose alternatives are
// the UTF-8 byte-range sequences of its code points (grammar/utf8_ranges.h), so matching never sees a
// partial code point and only valid UTF-8 can match.
//
// Layout: one flat array of elements. Position 0 is a synthetic start rule `[ref root][end]`; every rule's
// alternatives follow, each a run of kBytes / kRule elements closed by kEnd. A position is an index into
// that array. A parse stack is a chain of positions: the top is always a kBytes position (the next byte to
// match), each entry below is where to continue when the rule above it ends.
//
// Precomputed per position q: its closure, i.e. every way to reach a byte-set element from q without
// consuming input: a terminal position plus the continuation positions to push below it (deepest first),
// or kPop (q's rule can end here without input). Tail calls push nothing, so `x*` runs in constant stack.
// Per rule: the follow positions (where matching continues after the rule ends, over every place that
// references it) and whether the whole grammar can end after it; token masks use these to judge tokens
// that run past the end of a rule without knowing the stack below (grammar/token_masker.h).
//
// Compile rejects left recursion (a rule reaching itself without consuming input, with something left to
// match afterwards), naming the rule, and grammars too large to compile. Size bound: what compiling expands
// a grammar to is counted as it is produced, before its memory is spent: one unit per position, per state
// of the closure search (plus one per continuation position it carries: closure items and their chains)
// and per follow-set entry merged. Nested counted repetition multiplies these (200 levels of `(...){1,50}`
// needed 2.6 GB and 7-14 s); past `max_size` (default kDefaultMaxCompiledSize) Compile stops with
// InvalidArgument naming the limit. The count is deterministic for a given grammar. Immutable after
// Compile; safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"

namespace lockstep::grammar {

enum class ElementType : uint8_t { kBytes, kRule, kEnd };

struct Element {
  ElementType type = ElementType::kEnd;
  uint32_t value = 0;  // kBytes: byte-set index; kRule: rule index
};

struct ClosureItem {
  uint32_t terminal = 0;  // a kBytes position, or kPop
  uint32_t chain_begin = 0;
  uint32_t chain_size = 0;  // continuation positions to push (deepest first) below `terminal`
};

inline constexpr uint32_t kPop = UINT32_MAX;
// Real grammars compile far below it: the JSON schemas of the tests and benchmarks up to 0.11 M (an array of
// records 31 K, 30 tools of 10 arguments 90 K), a string of maxLength 10000 0.55 M, an object of 50 strings
// of maxLength 1000 2.8 M. At the limit a compile takes ~0.15 s of a Sapphire Rapids core and ~60 MB.
inline constexpr uint64_t kDefaultMaxCompiledSize = 16'000'000;

class CompiledGrammar {
 public:
  static Result<std::shared_ptr<const CompiledGrammar>> Compile(const Grammar& grammar,
                                                                uint64_t max_size = kDefaultMaxCompiledSize);
  // ParseGbnf + Compile.
  static Result<std::shared_ptr<const CompiledGrammar>> FromGbnf(std::string_view text,
                                                                 std::string_view root = "root",
                                                                 uint64_t max_size = kDefaultMaxCompiledSize);

  static constexpr uint32_t kStart = 0;  // the synthetic start element (a reference to the root rule)

  size_t num_positions() const { return elements_.size(); }
  size_t num_rules() const { return rule_names_.size(); }
  const Element& element(uint32_t pos) const { return elements_[pos]; }
  // pos must be a kBytes position.
  bool Matches(uint32_t pos, uint8_t byte) const {
    const std::array<uint64_t, 4>& set = byte_sets_[elements_[pos].value];
    return (set[byte >> 6] >> (byte & 63)) & 1;
  }
  const std::array<uint64_t, 4>& BytesAt(uint32_t pos) const { return byte_sets_[elements_[pos].value]; }
  std::span<const ClosureItem> Closure(uint32_t pos) const {
    return {closure_items_.data() + closure_begin_[pos], closure_begin_[pos + 1] - closure_begin_[pos]};
  }
  std::span<const uint32_t> Chain(const ClosureItem& item) const {
    return {chains_.data() + item.chain_begin, item.chain_size};
  }
  uint32_t RuleOf(uint32_t pos) const { return rule_of_[pos]; }
  std::span<const uint32_t> Follow(uint32_t rule) const {
    const auto [begin, end] = follow_range_[follow_set_[rule]];
    return {follow_.data() + begin, end - begin};
  }
  bool CanEndAfter(uint32_t rule) const { return can_end_[rule]; }
  const std::string& RuleName(uint32_t rule) const { return rule_names_[rule]; }
  // Every kBytes position, ascending.
  const std::vector<uint32_t>& terminals() const { return terminals_; }
  // The size compiling counted (the bound above).
  uint64_t compiled_size() const { return compiled_size_; }
  // An estimate of the heap memory this grammar holds (its tables' capacities), for caches' size budgets.
  size_t MemoryBytes() const;

 private:
  CompiledGrammar() = default;
  class Builder;

  std::vector<Element> elements_;
  std::vector<std::array<uint64_t, 4>> byte_sets_;
  std::vector<uint32_t> rule_of_;  // per position
  std::vector<std::string> rule_names_;
  std::vector<uint32_t> closure_begin_;  // per position + 1
  std::vector<ClosureItem> closure_items_;
  std::vector<uint32_t> chains_;
  std::vector<uint32_t> follow_set_;  // per rule: its follow set (rules that end together share one)
  std::vector<std::pair<uint32_t, uint32_t>> follow_range_;  // per follow set: [begin, end) in follow_
  std::vector<uint32_t> follow_;
  std::vector<bool> can_end_;  // per rule
  std::vector<uint32_t> terminals_;
  uint64_t compiled_size_ = 0;
};

}  // namespace lockstep::grammar
