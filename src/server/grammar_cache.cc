#include "server/grammar_cache.h"

#include <algorithm>

#include "grammar/compiled_grammar.h"

namespace lockstep::server {

GrammarCache::GrammarCache(std::shared_ptr<const Tokenizer> tokenizer, GrammarCacheOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {
  options_.capacity = std::max<size_t>(1, options_.capacity);
}

std::shared_ptr<const grammar::TokenVocab> GrammarCache::Vocab(bool markers) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (markers) {
    if (!marker_vocab_)
      marker_vocab_ = grammar::TokenVocab::FromTokenizer(*tokenizer_, options_.marker_tokens);
    return marker_vocab_;
  }
  if (!vocab_) vocab_ = grammar::TokenVocab::FromTokenizer(*tokenizer_);
  return vocab_;
}

Result<std::shared_ptr<grammar::TokenMasker>> GrammarCache::Usable(
    const std::shared_ptr<grammar::TokenMasker>& masker) {
  if (masker->over_budget()) return InvalidArgument(masker->over_budget_message());
  return masker;
}

Result<std::shared_ptr<grammar::TokenMasker>> GrammarCache::Get(const std::string& text, bool markers) {
  // The key: the text, marked apart when over the marker view ('\x01' starts no GBNF text).
  const std::string gbnf = markers ? "\x01" + text : text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = entries_.find(gbnf); it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.position);
      std::shared_ptr<grammar::TokenMasker> masker = it->second.masker;
      EvictLocked();  // its masker and others may have grown since
      return Usable(masker);
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(auto compiled,
                            grammar::CompiledGrammar::FromGbnf(text, "root", options_.max_compiled_size));
  auto masker = std::make_shared<grammar::TokenMasker>(
      compiled, Vocab(markers), grammar::TokenMasker::kDefaultContextDepth,
      grammar::TokenMasker::kDfaMaxStates, options_.max_mask_work, options_.max_request_work);
  masker->Warm(options_.warm_walks, options_.warm_steps, options_.warm_budget_s);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(gbnf); it != entries_.end()) return Usable(it->second.masker);  // raced
  order_.push_front(gbnf);
  // The key is held twice (the map and the order list).
  entries_[gbnf] = Entry{masker, order_.begin(), compiled->MemoryBytes() + 2 * gbnf.size()};
  EvictLocked();
  return Usable(masker);  // a costly grammar stays cached: its next request is refused without work
}

size_t GrammarCache::MemoryBytesLocked() const {
  size_t total = 0;
  for (const auto& [gbnf, entry] : entries_) total += entry.fixed_bytes + entry.masker->MemoryBytes();
  return total;
}

void GrammarCache::EvictLocked() {
  size_t bytes = MemoryBytesLocked();
  while (entries_.size() > 1 && (entries_.size() > options_.capacity || bytes > options_.max_bytes)) {
    auto it = entries_.find(order_.back());
    LOCKSTEP_CHECK(it != entries_.end());
    bytes -= std::min(bytes, it->second.fixed_bytes + it->second.masker->MemoryBytes());
    entries_.erase(it);
    order_.pop_back();
  }
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

size_t GrammarCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return MemoryBytesLocked();
}

bool GrammarCache::Contains(const std::string& gbnf) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.contains(gbnf);
}

}  // namespace lockstep::server
