#include "grammar/token_masker.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <random>

#include "grammar/byte_dfa.h"

namespace lockstep::grammar {
namespace {

// One depth of a walk: the arena size and the tops after that many bytes.
struct Frame {
  uint32_t nodes;
  uint32_t tops_begin;
  uint32_t tops_end;
  bool end;  // the text can end after these bytes
};

void SetBit(std::span<uint64_t> mask, int32_t id) { mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63); }
bool TestBit(std::span<const uint64_t> mask, int32_t id) { return (mask[size_t(id) >> 6] >> (id & 63)) & 1; }

// The context as a stack of its own: nodes from the bottom up, the top last.
void ContextStack(const uint32_t* pos, uint32_t size, std::vector<StackNode>* nodes,
                  std::vector<int32_t>* tops) {
  int32_t below = kExactBottom;
  for (uint32_t i = size; i-- > 0;) {
    nodes->push_back({pos[i], below, false});
    below = int32_t(nodes->size() - 1);
  }
  tops->assign(1, below);
}

// What a node of an unordered_map costs beyond its value: the next pointer, the cached hash and the
// allocator's header.
constexpr size_t kMapNodeOverhead = 3 * sizeof(void*);
template <typename Map>
size_t TableBytes(const Map& map) {
  return map.bucket_count() * sizeof(void*);
}
template <typename V>
size_t CapacityBytes(const std::vector<V>& v) {
  return v.capacity() * sizeof(V);
}

}  // namespace

TokenMasker::TokenMasker(std::shared_ptr<const CompiledGrammar> grammar,
                         std::shared_ptr<const TokenVocab> vocab, int context_depth, size_t dfa_max_states,
                         uint64_t max_mask_work, uint64_t max_request_work)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      depth_(std::clamp(context_depth, 1, kMaxContextDepth)),
      dfa_max_states_(dfa_max_states),
      max_work_(max_mask_work),
      max_request_work_(max_request_work),
      exact_(*grammar_, /*approximate=*/false) {
  UpdateMemoryBytes();
}

size_t TokenMasker::EntryBytes(const ContextMask& mask) {
  return kMapNodeOverhead + sizeof(Context) + sizeof(std::unique_ptr<ContextMask>) + sizeof(ContextMask) +
         CapacityBytes(mask.accepted_ids) + CapacityBytes(mask.accepted_bits) + CapacityBytes(mask.uncertain);
}

size_t TokenMasker::EntryBytes(const StateEntry& entry) {
  return kMapNodeOverhead + sizeof(uint64_t) + sizeof(StateEntry) + CapacityBytes(entry.state) +
         CapacityBytes(entry.mask);
}

void TokenMasker::UpdateMemoryBytes() {
  const size_t scratch = exact_.MemoryBytes() + CapacityBytes(tops_) + CapacityBytes(contexts_) +
                         TableBytes(context_seen_) +
                         context_seen_.size() * (kMapNodeOverhead + sizeof(Context)) +
                         CapacityBytes(context_masks_) + CapacityBytes(state_key_);
  memory_bytes_.store(sizeof(TokenMasker) + cache_bytes_ + TableBytes(masks_) + TableBytes(states_) + scratch,
                      std::memory_order_relaxed);
}

size_t TokenMasker::ContextHash::operator()(const Context& c) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(c.size) << 1 | uint64_t(c.complete));
  for (uint32_t i = 0; i < c.size; ++i) h = (h ^ c.pos[i]) * 0x100000001B3ull + (h >> 29);
  return size_t(h);
}

TokenMasker::Stats TokenMasker::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

TokenMasker::Context TokenMasker::ContextOf(const std::vector<StackNode>& nodes, int32_t top) const {
  Context c;
  int32_t n = top;
  while (n >= 0 && c.size < uint32_t(depth_)) {
    c.pos[c.size++] = nodes[n].pos;
    n = nodes[n].parent;
  }
  c.complete = n < 0;
  return c;
}

bool TokenMasker::over_budget() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return over_budget_;
}

std::string TokenMasker::over_budget_message() const {
  if (!over_budget()) return "";
  return "the grammar is too costly to enforce: masking one decoding step over the " +
         std::to_string(vocab_->size()) + "-token vocabulary needs more than " + std::to_string(max_work_) +
         " parse-stack steps (many alternatives or repetitions that can match the same text, such as "
         "`(.*|x)(.*|x)...`; simplify the grammar)";
}

bool TokenMasker::Spend(uint64_t work) {
  fill_work_ += work;
  if (fill_work_ > max_work_) over_budget_ = true;
  return !over_budget_;
}

const TokenMasker::ContextMask* TokenMasker::Get(const Context& context) {
  if (auto it = masks_.find(context); it != masks_.end()) return it->second.get();
  std::unique_ptr<ContextMask> built = Build(context);
  if (!built) return nullptr;  // over the work bound: nothing cached
  ++stats_.contexts_built;
  stats_.accepted_total += built->accepted_count;
  stats_.uncertain_total += built->uncertain.size();
  cache_bytes_ += EntryBytes(*built);
  return (masks_[context] = std::move(built)).get();
}

std::unique_ptr<TokenMasker::ContextMask> TokenMasker::Build(const Context& context) {
  if (dfa_max_states_ == 0) return BuildDirect(context);
  std::vector<StackNode> start_nodes;
  std::vector<int32_t> start_tops;
  ContextStack(context.pos.data(), context.size, &start_nodes, &start_tops);
  LazyByteDfa dfa(*grammar_, /*approximate=*/!context.complete, start_nodes, start_tops, dfa_max_states_);
  dfa.set_work_limit(max_work_ - std::min(fill_work_, max_work_));  // no round may run past the bound
  auto mask = std::make_unique<ContextMask>();
  std::vector<int32_t> accepted;
  // The DFA state after each depth of the current path (depth 0: the start).
  std::vector<int32_t> state_at(64, dfa.start());
  const std::vector<TokenVocab::TrieNode>& trie = vocab_->trie();
  const std::span<const int32_t> sorted = vocab_->sorted();
  uint64_t steps = 0, charged = 0;  // trie nodes visited; work already added to fill_work_
  const auto charge = [&] {
    const uint64_t total = steps + dfa.work();
    const bool ok = Spend(total - charged);
    charged = total;
    return ok;
  };
  for (uint32_t i = 0; i < trie.size();) {
    if (fill_work_ + ++steps + dfa.work() - charged > max_work_ && !charge()) return nullptr;
    const TokenVocab::TrieNode& node = trie[i];
    const int32_t state = dfa.Next(state_at[node.depth - 1], node.byte);
    if (dfa.exhausted()) {
      charge();
      over_budget_ = true;
      return nullptr;
    }
    if (state == LazyByteDfa::kTooMany) {
      ++stats_.dfa_fallbacks;
      if (!charge()) return nullptr;
      return BuildDirect(context);
    }
    if (state == LazyByteDfa::kDead) {
      i = node.subtree_end;  // nothing under this prefix can match
      continue;
    }
    if (node.depth >= state_at.size()) state_at.resize(size_t(node.depth) + 1);  // depth grows by one at most
    state_at[node.depth] = state;
    if (node.tokens_end > node.tokens_begin) {
      const LazyByteDfa::StateInfo& info = dfa.info(state);
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) {
        if (info.exact) {
          accepted.push_back(sorted[t]);
        } else if (info.approx) {
          mask->uncertain.push_back(t);
        }
      }
    }
    ++i;
  }
  if (!charge()) return nullptr;
  stats_.dfa_states += dfa.num_states();
  Store(std::move(accepted), *vocab_, mask.get());
  return mask;
}

// The same walk without the DFA: one expansion per trie node (for grammars whose state sets are too many).
std::unique_ptr<TokenMasker::ContextMask> TokenMasker::BuildDirect(const Context& context) {
  StackWalker walker(*grammar_, /*approximate=*/!context.complete);
  walker.set_work_limit(max_work_ - std::min(fill_work_, max_work_));
  std::vector<StackNode>& nodes = walker.nodes();
  std::vector<int32_t> tops;
  ContextStack(context.pos.data(), context.size, &nodes, &tops);
  std::vector<Frame> frames = {{uint32_t(nodes.size()), 0, 1, false}};
  auto mask = std::make_unique<ContextMask>();
  std::vector<int32_t> accepted;
  const std::vector<TokenVocab::TrieNode>& trie = vocab_->trie();
  const std::span<const int32_t> sorted = vocab_->sorted();
  uint64_t steps = 0, charged = 0;
  const auto charge = [&] {
    const uint64_t total = steps + walker.work();
    const bool ok = Spend(total - charged);
    charged = total;
    return ok;
  };
  for (uint32_t i = 0; i < trie.size();) {
    if (fill_work_ + ++steps + walker.work() - charged > max_work_ && !charge()) return nullptr;
    const TokenVocab::TrieNode& node = trie[i];
    const Frame parent = frames[node.depth - 1];
    nodes.resize(parent.nodes);
    tops.resize(parent.tops_end);
    StepFlags flags;
    const bool alive = walker.Advance(&tops, parent.tops_begin, parent.tops_end, node.byte, &tops, &flags);
    if (walker.exhausted()) {
      charge();
      over_budget_ = true;
      return nullptr;
    }
    if (!alive) {
      i = node.subtree_end;  // nothing under this prefix can match
      continue;
    }
    frames.resize(node.depth);
    frames.push_back({uint32_t(nodes.size()), parent.tops_end, uint32_t(tops.size()), false});
    if (node.tokens_end > node.tokens_begin) {
      bool exact = flags.exact_end, approx = flags.approx_end;
      for (size_t k = parent.tops_end; k < tops.size() && !exact; ++k) {
        (nodes[tops[k]].approx ? approx : exact) = true;
      }
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) {
        if (exact) {
          accepted.push_back(sorted[t]);
        } else if (approx) {
          mask->uncertain.push_back(t);
        }
      }
    }
    ++i;
  }
  if (!charge()) return nullptr;
  Store(std::move(accepted), *vocab_, mask.get());
  return mask;
}

void TokenMasker::Store(std::vector<int32_t> accepted, const TokenVocab& vocab, ContextMask* mask) {
  mask->accepted_count = accepted.size();
  if (accepted.size() * 32 > size_t(vocab.size())) {
    mask->accepted_bits.assign(vocab.mask_words(), 0);
    for (int32_t id : accepted) SetBit(mask->accepted_bits, id);
  } else {
    std::sort(accepted.begin(), accepted.end());
    mask->accepted_ids = std::move(accepted);
  }
}

void TokenMasker::Warm(int walks, int steps, double budget_s) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> mask(vocab_->mask_words());
  std::vector<int32_t> allowed;
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(grammar_);
    std::mt19937_64 rng(uint64_t(w) + 1);
    for (int s = 0; s < steps; ++s) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget_s) return;
      FillMask(m, mask);
      allowed.clear();
      for (size_t word = 0; word < mask.size(); ++word) {
        for (uint64_t bits = mask[word]; bits != 0; bits &= bits - 1) {
          const int32_t id = int32_t(word * 64) + std::countr_zero(bits);
          if (!vocab_->bytes(id).empty()) allowed.push_back(id);
        }
      }
      if (allowed.empty()) break;
      const int32_t pick = allowed[rng() % allowed.size()];
      if (!m.AcceptBytes(vocab_->bytes(pick))) break;
    }
  }
}

bool TokenMasker::CheckExactly(std::span<const uint32_t> candidates, size_t n_tops,
                               std::span<uint64_t> mask) {
  const uint64_t work_before = exact_.work();
  exact_.set_work_limit(work_before + max_work_ - std::min(fill_work_, max_work_));
  uint64_t steps = 0, charged = 0;
  const auto charge = [&] {
    const uint64_t total = steps + (exact_.work() - work_before);
    const bool ok = Spend(total - charged);
    charged = total;
    return ok;
  };
  std::vector<StackNode>& nodes = exact_.nodes();
  std::vector<Frame> frames = {{uint32_t(nodes.size()), 0, uint32_t(n_tops), false}};
  std::string_view previous;
  size_t dead = 0;  // previous[0, dead) cannot match (0: no dead prefix)
  for (uint32_t index : candidates) {
    if (fill_work_ + ++steps + (exact_.work() - work_before) - charged > max_work_ && !charge()) return false;
    const int32_t id = vocab_->sorted()[index];
    if (TestBit(mask, id)) continue;
    const std::string_view bytes = vocab_->sorted_bytes(index);
    size_t common = 0;
    while (common < bytes.size() && common < previous.size() && bytes[common] == previous[common]) ++common;
    if (dead > 0 && common >= dead) continue;
    dead = 0;
    const size_t depth = std::min(common, frames.size() - 1);
    frames.resize(depth + 1);
    nodes.resize(frames[depth].nodes);
    tops_.resize(frames[depth].tops_end);
    previous = bytes;
    bool alive = true;
    for (size_t k = depth; k < bytes.size(); ++k) {
      const Frame f = frames[k];
      StepFlags flags;
      const bool advanced =
          exact_.Advance(&tops_, f.tops_begin, f.tops_end, uint8_t(bytes[k]), &tops_, &flags);
      if (exact_.exhausted()) {
        charge();
        over_budget_ = true;
        return false;
      }
      if (!advanced) {
        dead = k + 1;
        alive = false;
        break;
      }
      frames.push_back({uint32_t(nodes.size()), f.tops_end, uint32_t(tops_.size()), flags.exact_end});
    }
    if (!alive) continue;
    const Frame& last = frames[bytes.size()];
    if (last.end || last.tops_end > last.tops_begin) SetBit(mask, id);
  }
  return charge();
}

size_t TokenMasker::FillMask(const GrammarMatcher& matcher, std::span<uint64_t> mask, uint64_t* work) {
  LOCKSTEP_CHECK(&matcher.grammar() == grammar_.get());
  LOCKSTEP_CHECK(mask.size() == vocab_->mask_words());  // callers with wider rows pass a prefix
  if (work != nullptr) *work = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (over_budget_ || matcher.over_budget()) {
    std::fill(mask.begin(), mask.end(), 0);
    return 0;
  }
  // The whole state, as positions from each top down, for the state cache.
  state_key_.clear();
  state_key_.push_back(matcher.accepting() ? 1 : 0);
  const std::vector<StackNode>& nodes = matcher.nodes();
  bool cacheable = true;
  for (int32_t top : matcher.tops()) {
    for (int32_t n = top; n >= 0 && cacheable; n = nodes[n].parent) {
      state_key_.push_back(nodes[n].pos);
      cacheable = state_key_.size() <= kMaxStateKey;
    }
    if (!cacheable) break;
    state_key_.push_back(UINT32_MAX);
  }
  uint64_t hash = 0xCBF29CE484222325ull;
  if (cacheable) {
    for (uint32_t v : state_key_) hash = (hash ^ v) * 0x100000001B3ull;
  }
  ++clock_;
  if (auto it = cacheable ? states_.find(hash) : states_.end();
      it != states_.end() && it->second.state == state_key_) {
    std::copy(it->second.mask.begin(), it->second.mask.end(), mask.begin());
    it->second.last_use = clock_;
    ++stats_.state_hits;
    return it->second.count;
  }
  ++stats_.state_misses;
  fill_work_ = 0;
  const size_t count = FillMaskLocked(matcher, mask);
  stats_.max_fill_work = std::max(stats_.max_fill_work, fill_work_);
  stats_.fill_work_total += fill_work_;
  if (work != nullptr) *work = fill_work_;
  if (over_budget_) {
    std::fill(mask.begin(), mask.end(), 0);
    UpdateMemoryBytes();
    return 0;
  }
  if (cacheable) {
    if (states_.size() >= kStateCacheSize) {
      auto oldest = states_.begin();
      for (auto it = states_.begin(); it != states_.end(); ++it) {
        if (it->second.last_use < oldest->second.last_use) oldest = it;
      }
      cache_bytes_ -= EntryBytes(oldest->second);
      states_.erase(oldest);
    }
    StateEntry& entry = states_[hash];
    if (!entry.state.empty()) cache_bytes_ -= EntryBytes(entry);  // a hash collision: replaced
    entry.state = state_key_;
    entry.mask.assign(mask.begin(), mask.end());
    entry.count = count;
    entry.last_use = clock_;
    cache_bytes_ += EntryBytes(entry);
  }
  UpdateMemoryBytes();
  return count;
}

size_t TokenMasker::FillMaskLocked(const GrammarMatcher& matcher, std::span<uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  if (matcher.accepting()) {
    for (int32_t id : vocab_->eog()) SetBit(mask, id);
  }
  const std::vector<StackNode>& nodes = matcher.nodes();
  contexts_.clear();
  context_seen_.clear();
  for (int32_t top : matcher.tops()) {  // distinct contexts, in the order of the tops
    Context c = ContextOf(nodes, top);
    if (context_seen_.emplace(c, true).second) contexts_.push_back(c);
  }
  context_masks_.clear();
  bool any_uncertain = false;
  for (const Context& c : contexts_) {
    const ContextMask* cm = Get(c);
    if (cm == nullptr) return 0;  // over the work bound
    context_masks_.push_back(cm);
    if (!cm->accepted_bits.empty()) {
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= cm->accepted_bits[w];
    } else {
      for (int32_t id : cm->accepted_ids) SetBit(mask, id);
    }
    any_uncertain = any_uncertain || !cm->uncertain.empty();
  }
  if (any_uncertain) {
    exact_.nodes() = nodes;
    tops_ = matcher.tops();
    const size_t n_tops = tops_.size();
    for (const ContextMask* cm : context_masks_) {
      if (!cm->uncertain.empty() && !CheckExactly(cm->uncertain, n_tops, mask)) return 0;
    }
  }
  size_t count = 0;
  for (uint64_t w : mask) count += size_t(std::popcount(w));
  return count;
}

bool TokenMasker::Allows(const GrammarMatcher& matcher, int32_t token) const {
  if (token < 0 || token >= vocab_->size()) return false;
  const std::vector<int32_t>& eog = vocab_->eog();
  if (std::find(eog.begin(), eog.end(), token) != eog.end()) return matcher.accepting();
  const std::string_view bytes = vocab_->bytes(token);
  if (bytes.empty()) return false;
  GrammarMatcher copy = matcher;
  return copy.AcceptBytes(bytes);
}

}  // namespace lockstep::grammar
