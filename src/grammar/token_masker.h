// TokenMasker: the set of tokens a grammar allows next, for one (grammar, vocabulary) pair, cheap enough to
// compute for every constrained sequence at every decode step.
//
// Context masks. A parse stack's top few positions (its context: the terminal and up to depth - 1
// continuation positions below it) decide most tokens on their own. Per context a mask is cached, built
// once by walking the vocabulary's byte trie (grammar/token_vocab.h) from that partial stack alone:
//   accepted   tokens whose bytes all match without popping past the context (or end exactly where it
//              ends): allowed under every stack with this context;
//   uncertain  tokens that run past the context's bottom and match one of the places its rule can be
//              followed by (CompiledGrammar::Follow, an over-approximation of the unknown stack below);
//   the rest   rejected under every stack with this context (pruned a whole trie subtree at a time).
// A context that reaches the real bottom of its stack is exact: nothing is uncertain. Small rules (a
// character class, optional whitespace) are why a context spans several positions: with only the top,
// every token longer than one character would run past the rule and be uncertain.
//
// A step's allowed set is the union of the accepted sets of the state's contexts, plus those uncertain
// tokens that match the real stacks exactly (walked in byte order, sharing prefixes, skipping every token
// under a dead prefix). End-of-generation tokens are allowed when the text is a complete match. Whole
// states recur (the same place in every record of an array): the last kStateCacheSize masks are also
// kept by exact state and copied when seen again.
//
// A context's walk runs over a lazily built DFA of canonical stack sets (grammar/byte_dfa.h), so most trie
// nodes cost one table lookup. Masks are built on first use (Warm() builds those a few seeded walks through
// the grammar reach, which the server does before a request reaches the engine thread). Thread-safe: a mutex
// guards the caches, so one masker may serve many requests on any threads. MemoryBytes() estimates what the
// caches hold (they grow with use: up to one mask per context met, kStateCacheSize whole-state masks).
//
// Work bound: what one FillMask may spend building masks is counted deterministically (parse-stack steps,
// StackWalker::work, plus one per trie node visited) and capped at max_mask_work. A grammar whose masks cost
// more (many alternatives that match the same text, e.g. `(.*|x)` repeated) is too costly for this
// vocabulary: that FillMask and every later one return 0 and over_budget() tells why, so neither the HTTP
// thread (Warm) nor the engine thread (decoding) ever runs an unbounded build. FillMask reports the work it
// spent, so that a request's constraint (engine/grammar_constraint.h) can also bound its total over all its
// steps: max_request_work, which the masker only carries (the bounds of one grammar travel together).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/stack_walker.h"
#include "grammar/token_vocab.h"

namespace lockstep::grammar {

class TokenMasker {
 public:
  static constexpr int kDefaultContextDepth = 4;
  static constexpr int kMaxContextDepth = 8;
  static constexpr size_t kStateCacheSize = 256;
  // States whose stacks hold more positions than this (summed over tops) skip the state cache: its key
  // would cost more than the mask.
  static constexpr size_t kMaxStateKey = 1u << 16;

  static constexpr size_t kDfaMaxStates = 4096;
  // At most 0.25 s of a Sapphire Rapids core at the limit on the DFA walk (8-50 ns a unit on the costly
  // grammars tried, nested counted repetition the slowest), 0.6 s on the direct walk for nested counted
  // repetition (its hash-consing table's cache misses); JSON schema masks over a 49k vocabulary peak at
  // 0.15-0.3 M on the DFA walk and 2.2 M on the direct walk (docs/structured.md).
  static constexpr uint64_t kDefaultMaxMaskWork = 5'000'000;
  // What one request may spend on masks and token advances in all: 10 masks at the per-mask bound, at
  // most 2.5 s of a core on the DFA walk. JSON schema requests spend far less: most masks come from the
  // caches (no work); 300-token walks of an array-of-records schema over a 49k vocabulary spend 3.5-4.5 M in
  // all, masks and advances (docs/structured.md; MaskBudget.RealRequestsStayFarBelowTheTotal keeps a 10x
  // margin under test).
  static constexpr uint64_t kDefaultMaxRequestWork = 50'000'000;

  // dfa_max_states: the most states a context's LazyByteDfa (grammar/byte_dfa.h) may grow to before that
  // context is walked directly instead; 0 walks every context directly (one expansion per trie node: the
  // reference the DFA walk must equal bit for bit, and the "before" of grammar_bench).
  // max_mask_work: the work bound of one FillMask (above). max_request_work: the total bound of a request
  // that uses this masker (max_request_work(); enforced by the request's constraint, not here).
  TokenMasker(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab,
              int context_depth = kDefaultContextDepth, size_t dfa_max_states = kDfaMaxStates,
              uint64_t max_mask_work = kDefaultMaxMaskWork,
              uint64_t max_request_work = kDefaultMaxRequestWork);

  const std::shared_ptr<const CompiledGrammar>& grammar() const { return grammar_; }
  const TokenVocab& vocab() const { return *vocab_; }
  uint64_t max_mask_work() const { return max_work_; }
  uint64_t max_request_work() const { return max_request_work_; }

  // Builds the masks that `walks` seeded random walks of up to `steps` tokens through the grammar meet
  // (uniform over the allowed tokens), stopping early after `budget_s` seconds.
  void Warm(int walks, int steps, double budget_s);
  // Writes vocab().mask_words() words into `mask` (bit t of word t / 64: token t is allowed). `matcher` must
  // use this masker's grammar. Returns the number of allowed tokens; 0 (an empty mask) once over_budget()
  // or the matcher's over_budget(). When `work` is set, *work is what this call spent building masks (the
  // unit of the work bound; 0 when the caches answered), however it ended.
  size_t FillMask(const GrammarMatcher& matcher, std::span<uint64_t> mask, uint64_t* work = nullptr);
  // A FillMask needed more than max_mask_work: the grammar is too costly to mask (sticky).
  bool over_budget() const;
  // Why, for the client: names the limit and the vocabulary ("" while within budget).
  std::string over_budget_message() const;
  // An estimate of the heap memory the masker holds (its mask caches and scratch; not the grammar or the
  // vocabulary, which are shared), from the containers' sizes. Kept current by each FillMask; safe to read
  // from any thread without waiting for a FillMask in progress.
  size_t MemoryBytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  // True when `token` may follow the matcher's text (the exact check FillMask's answer must agree with).
  bool Allows(const GrammarMatcher& matcher, int32_t token) const;

  struct Stats {
    size_t contexts_built = 0;
    size_t accepted_total = 0;   // over built contexts
    size_t uncertain_total = 0;  // over built contexts
    size_t state_hits = 0;
    size_t state_misses = 0;
    size_t dfa_states = 0;         // over contexts built with the DFA
    size_t dfa_fallbacks = 0;      // contexts whose DFA outgrew dfa_max_states (then walked directly)
    uint64_t max_fill_work = 0;    // the most work one FillMask spent (see the work bound)
    uint64_t fill_work_total = 0;  // over every FillMask
  };
  Stats stats() const;

 private:
  struct Context {
    uint32_t size = 0;
    bool complete = false;  // the stack ends right below: nothing is unknown
    std::array<uint32_t, kMaxContextDepth> pos{};
    bool operator==(const Context& o) const {
      return size == o.size && complete == o.complete &&
             std::equal(pos.begin(), pos.begin() + size, o.pos.begin());
    }
  };
  struct ContextHash {
    size_t operator()(const Context& c) const;
  };
  struct ContextMask {
    std::vector<int32_t> accepted_ids;    // when few are accepted
    std::vector<uint64_t> accepted_bits;  // when many are (then accepted_ids is empty)
    std::vector<uint32_t> uncertain;      // indices into vocab().sorted(), ascending
    size_t accepted_count = 0;
  };
  struct StateEntry {
    std::vector<uint32_t> state;
    std::vector<uint64_t> mask;
    size_t count = 0;
    uint64_t last_use = 0;
  };

  size_t FillMaskLocked(const GrammarMatcher& matcher, std::span<uint64_t> mask);
  Context ContextOf(const std::vector<StackNode>& nodes, int32_t top) const;
  // The builds return nullptr (and set over_budget_) when they would pass the work bound.
  const ContextMask* Get(const Context& context);                    // mutex held
  std::unique_ptr<ContextMask> Build(const Context& context);        // walks the trie over a LazyByteDfa
  std::unique_ptr<ContextMask> BuildDirect(const Context& context);  // the same, expanding at every node
  // Adds `work` to this FillMask's; false (over_budget_ set) past the bound.
  bool Spend(uint64_t work);
  // Accepted ids into the mask's representation (a bit set when many, else a sorted list).
  static void Store(std::vector<int32_t> accepted, const TokenVocab& vocab, ContextMask* mask);
  // Heap bytes of one cached entry (its map node included).
  static size_t EntryBytes(const ContextMask& mask);
  static size_t EntryBytes(const StateEntry& entry);
  // Publishes cache_bytes_ plus the scratch and map tables into memory_bytes_ (mutex held).
  void UpdateMemoryBytes();
  // Exact check of `candidates` (sorted-order indices, ascending) against the walker's tops [0, n_tops):
  // sets the bits of those that match.
  bool CheckExactly(std::span<const uint32_t> candidates, size_t n_tops, std::span<uint64_t> mask);

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  int depth_;
  size_t dfa_max_states_;
  uint64_t max_work_;
  uint64_t max_request_work_;
  mutable std::mutex mutex_;
  uint64_t fill_work_ = 0;  // spent by the FillMask in progress
  bool over_budget_ = false;
  std::unordered_map<Context, std::unique_ptr<ContextMask>, ContextHash> masks_;
  std::unordered_map<uint64_t, StateEntry> states_;  // by hash of the state
  uint64_t clock_ = 0;
  Stats stats_;
  size_t cache_bytes_ = 0;  // EntryBytes over masks_ and states_
  std::atomic<size_t> memory_bytes_{0};
  // Scratch for FillMask (under mutex_).
  StackWalker exact_;
  std::vector<int32_t> tops_;
  std::vector<Context> contexts_;
  std::unordered_map<Context, bool, ContextHash> context_seen_;
  std::vector<const ContextMask*> context_masks_;
  std::vector<uint32_t> state_key_;
};

}  // namespace lockstep::grammar
