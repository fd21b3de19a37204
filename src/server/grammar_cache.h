// GrammarCache: compiled grammars and their token maskers for the server, by GBNF text (least recently
// used first out), so requests with the same schema share one masker and its warm caches. A miss compiles,
// then warms the masker (a few seeded walks, bounded in time) on the calling I/O thread, so the engine
// thread rarely meets a mask it has to build. The vocabulary views are built once, on first use: one of text
// tokens, and one that also lets the marker tokens (GrammarCacheOptions::marker_tokens) through for grammars
// that spell a model's tool-call syntax (Get's `markers`; such requests keep those tokens' text).
// A grammar whose masks pass the masker's work bound while warming (TokenMasker::over_budget) is refused
// with InvalidArgument saying so, at once on later requests with the same grammar. Thread-safe.
//
// Two bounds on what is kept: capacity grammars, and max_bytes of estimated memory in all (each entry's
// CompiledGrammar::MemoryBytes plus its masker's TokenMasker::MemoryBytes, which grows as requests build
// masks). Past either, least recently used entries are evicted, never the one just returned (a single
// entry larger than max_bytes stays until another is used). As maskers grow after insertion, the total is
// re-checked on every Get. An evicted masker still held by a running request lives on through its
// shared_ptr until the request ends.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/token_masker.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

struct GrammarCacheOptions {
  size_t capacity = 64;  // grammars kept
  // Estimated bytes kept in all (see above). An array-of-records schema's masker over a 49k vocabulary
  // estimates 2.4 MB after two 300-token walks, its grammar 0.23 MB
  // (MaskBudget.RealRequestsStayFarBelowTheTotal prints them); a context mask is at most 6 KB, the
  // whole-state masks at most 1.5 MB (256 of 6 KB). So 64 such maskers fit with room, as do a few grammars
  // near max_compiled_size (~60 MB each).
  size_t max_bytes = size_t(512) << 20;
  uint64_t max_mask_work = grammar::TokenMasker::kDefaultMaxMaskWork;  // each masker's work bound
  // What one request may spend on grammar work in all (TokenMasker::max_request_work).
  uint64_t max_request_work = grammar::TokenMasker::kDefaultMaxRequestWork;
  uint64_t max_compiled_size = grammar::kDefaultMaxCompiledSize;  // CompiledGrammar::Compile's bound
  // A miss warms its masker with warm_walks seeded walks of up to warm_steps tokens, for at most
  // warm_budget_s seconds (TokenMasker::Warm).
  int warm_walks = 8;
  int warm_steps = 64;
  double warm_budget_s = 0.5;
  // Control tokens that a grammar asked for with `markers` may produce (the tool-call and reasoning markers
  // that a request preserves: ToolMarkerTokens, the reasoning tags').
  std::vector<int32_t> marker_tokens{};
};

class GrammarCache {
 public:
  // The server uses the defaults; the fuzz targets pass smaller bounds, so that the same code paths and
  // refusals cost a fuzzer milliseconds under ASan instead of seconds.
  explicit GrammarCache(std::shared_ptr<const Tokenizer> tokenizer, GrammarCacheOptions options = {});

  // The masker for `gbnf`, compiled on a miss; InvalidArgument with the parser's message (line, column)
  // for a bad grammar, or the masker's for one too costly to mask.
  // `markers`: over the vocabulary view with the marker tokens (cached apart from the same text without).
  Result<std::shared_ptr<grammar::TokenMasker>> Get(const std::string& gbnf, bool markers = false);

  // What the cache holds now (for tests and metrics): entries, and their estimated bytes in all.
  size_t size() const;
  size_t MemoryBytes() const;
  // Whether `gbnf` is cached, without touching the order.
  bool Contains(const std::string& gbnf) const;

 private:
  std::shared_ptr<const grammar::TokenVocab> Vocab(bool markers);
  // The masker, or its over-budget refusal.
  static Result<std::shared_ptr<grammar::TokenMasker>> Usable(
      const std::shared_ptr<grammar::TokenMasker>& masker);
  // Evicts least recently used entries past capacity or max_bytes, keeping the most recent (mutex held).
  void EvictLocked();
  size_t MemoryBytesLocked() const;

  std::shared_ptr<const Tokenizer> tokenizer_;
  GrammarCacheOptions options_;
  mutable std::mutex mutex_;
  std::shared_ptr<const grammar::TokenVocab> vocab_, marker_vocab_;
  std::list<std::string> order_;  // most recently used first
  struct Entry {
    std::shared_ptr<grammar::TokenMasker> masker;
    std::list<std::string>::iterator position;
    size_t fixed_bytes = 0;  // the grammar and the key (immutable once cached)
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace lockstep::server
