#include "server/grammar_cache.h"

#include "grammar/compiled_grammar.h"

namespace lockstep::server {

GrammarCache::GrammarCache(std::shared_ptr<const Tokenizer> tokenizer, GrammarCacheOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {
  options_.capacity = std::max<size_t>(1, options_.capacity);
}

std::shared_ptr<const grammar::TokenVocab> GrammarCache::Vocab() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!vocab_) vocab_ = grammar::TokenVocab::FromTokenizer(*tokenizer_);
  return vocab_;
}

Result<std::shared_ptr<grammar::TokenMasker>> GrammarCache::Usable(
    const std::shared_ptr<grammar::TokenMasker>& masker) {
  if (masker->over_budget()) return InvalidArgument(masker->over_budget_message());
  return masker;
}

Result<std::shared_ptr<grammar::TokenMasker>> GrammarCache::Get(const std::string& gbnf) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = entries_.find(gbnf); it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.position);
      return Usable(it->second.masker);
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(auto compiled,
                            grammar::CompiledGrammar::FromGbnf(gbnf, "root", options_.max_compiled_size));
  auto masker = std::make_shared<grammar::TokenMasker>(
      compiled, Vocab(), grammar::TokenMasker::kDefaultContextDepth, grammar::TokenMasker::kDfaMaxStates,
      options_.max_mask_work, options_.max_request_work);
  masker->Warm(options_.warm_walks, options_.warm_steps, options_.warm_budget_s);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(gbnf); it != entries_.end()) return Usable(it->second.masker);  // raced
  order_.push_front(gbnf);
  entries_[gbnf] = Entry{masker, order_.begin()};
  while (entries_.size() > options_.capacity) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  return Usable(masker);  // a costly grammar stays cached: its next request is refused without work
}

}  // namespace lockstep::server
