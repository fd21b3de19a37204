// GrammarCache: compiled grammars and their token maskers for the server, by GBNF text (least recently
// used first out), so requests with the same schema share one masker and its warm caches. A miss compiles,
// then warms the masker (a few seeded walks, bounded in time) on the calling I/O thread, so the engine
// thread rarely meets a mask it has to build. The vocabulary view is built once, on first use.
// A grammar whose masks pass the masker's work bound while warming (TokenMasker::over_budget) is refused
// with InvalidArgument saying so, at once on later requests with the same grammar. Thread-safe.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/token_masker.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

struct GrammarCacheOptions {
  size_t capacity = 64;                                                // grammars kept
  uint64_t max_mask_work = grammar::TokenMasker::kDefaultMaxMaskWork;  // each masker's work bound
  // What one request may spend on grammar work in all (TokenMasker::max_request_work).
  uint64_t max_request_work = grammar::TokenMasker::kDefaultMaxRequestWork;
  uint64_t max_compiled_size = grammar::kDefaultMaxCompiledSize;  // CompiledGrammar::Compile's bound
  // A miss warms its masker with warm_walks seeded walks of up to warm_steps tokens, for at most
  // warm_budget_s seconds (TokenMasker::Warm).
  int warm_walks = 8;
  int warm_steps = 64;
  double warm_budget_s = 0.5;
};

class GrammarCache {
 public:
  // The server uses the defaults; the fuzz targets pass smaller bounds, so that the same code paths and
  // refusals cost a fuzzer milliseconds under ASan instead of seconds.
  explicit GrammarCache(std::shared_ptr<const Tokenizer> tokenizer, GrammarCacheOptions options = {});

  // The masker for `gbnf`, compiled on a miss; InvalidArgument with the parser's message (line, column)
  // for a bad grammar, or the masker's for one too costly to mask.
  Result<std::shared_ptr<grammar::TokenMasker>> Get(const std::string& gbnf);

 private:
  std::shared_ptr<const grammar::TokenVocab> Vocab();
  // The masker, or its over-budget refusal.
  static Result<std::shared_ptr<grammar::TokenMasker>> Usable(
      const std::shared_ptr<grammar::TokenMasker>& masker);

  std::shared_ptr<const Tokenizer> tokenizer_;
  GrammarCacheOptions options_;
  std::mutex mutex_;
  std::shared_ptr<const grammar::TokenVocab> vocab_;
  std::list<std::string> order_;  // most recently used first
  struct Entry {
    std::shared_ptr<grammar::TokenMasker> masker;
    std::list<std::string>::iterator position;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace lockstep::server
