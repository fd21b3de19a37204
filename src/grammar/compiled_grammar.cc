#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

#include "grammar/utf8_ranges.h"

namespace lockstep::grammar {
namespace {

using ByteSet = std::array<uint64_t, 4>;

void AddRange(ByteSet& set, uint8_t first, uint8_t last) {
  for (int b = first; b <= last; ++b) set[b >> 6] |= uint64_t(1) << (b & 63);
}

// The user-facing name of a rule: generated rules ("item_12", "item_12_15") are reported as their origin.
std::string DisplayName(const std::string& name) {
  const size_t cut = name.find('_');
  return cut == std::string::npos ? name : name.substr(0, cut);
}

constexpr int kMaxClosureDepth = 4000;

// Strongly connected components of the graph whose node v has the successors successors[v] (iterative
// Tarjan): the component of each node, numbered in the order they complete, so sinks come first and a
// component only points to components with lower numbers. *count gets the number of components.
std::vector<int> StronglyConnectedComponents(const std::vector<std::vector<uint32_t>>& successors,
                                             int* count) {
  const size_t n = successors.size();
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<uint32_t> stack;
  std::vector<bool> on_stack(n, false);
  int counter = 0, comps = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<uint32_t, size_t>> work = {{root, 0}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!work.empty()) {
      auto& [v, next] = work.back();
      if (next < successors[v].size()) {
        const uint32_t w = successors[v][next++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          work.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
      const uint32_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  *count = comps;
  return comp;
}

}  // namespace

class CompiledGrammar::Builder {
 public:
  Builder(const Grammar& grammar, uint64_t max_size)
      : grammar_(grammar), g_(new CompiledGrammar()), max_size_(max_size) {}

  Result<std::shared_ptr<const CompiledGrammar>> Build() {
    const uint32_t n = uint32_t(grammar_.rules.size());
    start_rule_ = n;
    for (const Rule& r : grammar_.rules) g_->rule_names_.push_back(r.name);
    g_->rule_names_.push_back("(start)");
    alt_starts_.resize(n + 1);
    // The synthetic start rule at position 0.
    alt_starts_[start_rule_].push_back(0);
    Emit({ElementType::kRule, grammar_.root}, start_rule_);
    Emit({ElementType::kEnd, 0}, start_rule_);
    for (uint32_t r = 0; r < n; ++r) {
      for (const Sequence& alt : grammar_.rules[r].alternatives) {
        alt_starts_[r].push_back(uint32_t(g_->elements_.size()));
        for (const Symbol& s : alt) EmitSymbol(s, r);
        Emit({ElementType::kEnd, 0}, r);
      }
      if (!Grow(0)) return TooLarge(r);
    }
    // Character-class rules, created while emitting (and possibly while emitting one another: never).
    for (size_t i = 0; i < class_rules_.size(); ++i) {
      const uint32_t rule = class_rules_[i].first;
      for (const std::vector<uint32_t>& alt : class_rules_[i].second) {
        alt_starts_[rule].push_back(uint32_t(g_->elements_.size()));
        for (uint32_t set : alt) Emit({ElementType::kBytes, set}, rule);
        Emit({ElementType::kEnd, 0}, rule);
      }
    }
    for (uint32_t pos = 0; pos < g_->elements_.size(); ++pos) {
      if (g_->elements_[pos].type == ElementType::kBytes) g_->terminals_.push_back(pos);
    }
    LOCKSTEP_RETURN_IF_ERROR(CheckLeftRecursion());
    LOCKSTEP_RETURN_IF_ERROR(BuildClosures());
    LOCKSTEP_RETURN_IF_ERROR(BuildFollows());
    g_->compiled_size_ = size_;
    return std::shared_ptr<const CompiledGrammar>(g_.release());
  }

 private:
  void Emit(Element e, uint32_t rule) {
    g_->elements_.push_back(e);
    g_->rule_of_.push_back(rule);
    ++size_;
  }

  // Counts `units` more of the compiled size (compiled_grammar.h); false once past the bound.
  bool Grow(uint64_t units) {
    size_ += units;
    return size_ <= max_size_;
  }
  Status TooLarge(uint32_t rule) const {
    return InvalidArgument(
        "grammar too large to compile: it expands to more than " + std::to_string(max_size_) +
        " parse-table entries (positions, parse-stack closures, follow sets), reached at "
        "rule '" +
        DisplayName(g_->rule_names_[rule]) + "'; nested or counted repetition multiplies them");
  }

  uint32_t InternSet(const ByteSet& set) {
    auto [it, inserted] = set_ids_.try_emplace(set, uint32_t(g_->byte_sets_.size()));
    if (inserted) g_->byte_sets_.push_back(set);
    return it->second;
  }

  uint32_t NewRule(std::string name) {
    g_->rule_names_.push_back(std::move(name));
    alt_starts_.emplace_back();
    return uint32_t(g_->rule_names_.size() - 1);
  }

  void EmitSymbol(const Symbol& s, uint32_t rule) {
    if (s.kind == Symbol::Kind::kRule) return Emit({ElementType::kRule, s.rule}, rule);
    const std::vector<CodepointRange> ranges = NormalizeRanges(s.ranges, s.negated);
    std::vector<Utf8Sequence> seqs;
    for (const CodepointRange& r : ranges) Utf8Sequences(r, &seqs);
    if (seqs.empty()) return Emit({ElementType::kBytes, InternSet(ByteSet{})}, rule);  // matches nothing
    if (seqs.size() == 1) {  // one byte-range sequence (a literal character, an ASCII range): inline it
      for (const ByteRange& b : seqs[0]) {
        ByteSet set{};
        AddRange(set, b.first, b.last);
        Emit({ElementType::kBytes, InternSet(set)}, rule);
      }
      return;
    }
    // Group the sequences by everything after their first byte: each group is one alternative whose first
    // byte set is the union of the group's first ranges.
    std::map<std::vector<ByteRange>, ByteSet> groups;
    for (const Utf8Sequence& seq : seqs) {
      ByteSet& first = groups[std::vector<ByteRange>(seq.begin() + 1, seq.end())];
      AddRange(first, seq[0].first, seq[0].last);
    }
    if (groups.size() == 1 && groups.begin()->first.empty()) {  // all single bytes
      return Emit({ElementType::kBytes, InternSet(groups.begin()->second)}, rule);
    }
    std::vector<std::vector<uint32_t>> alts;
    for (const auto& [tail, first] : groups) {
      std::vector<uint32_t> alt = {InternSet(first)};
      for (const ByteRange& b : tail) {
        ByteSet set{};
        AddRange(set, b.first, b.last);
        alt.push_back(InternSet(set));
      }
      alts.push_back(std::move(alt));
    }
    auto [it, inserted] = class_ids_.try_emplace(alts, 0);
    if (inserted) {
      it->second = NewRule("[class]");
      class_rules_.emplace_back(it->second, alts);
    }
    Emit({ElementType::kRule, it->second}, rule);
  }

  // Left recursion that grows the stack (a rule reaching itself at its left edge with more to match after
  // the reference) would make expansion infinite. Tail-position cycles (`x*`, `r ::= r | "a"`) are fine.
  Status CheckLeftRecursion() {
    const size_t n = alt_starts_.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (uint32_t pos : alt_starts_[r]) {
          bool all = true;
          for (; g_->elements_[pos].type != ElementType::kEnd && all; ++pos) {
            const Element& e = g_->elements_[pos];
            all = e.type == ElementType::kRule && nullable[e.value];
          }
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    struct Edge {
      uint32_t to;
      bool tail;
    };
    std::vector<std::vector<Edge>> edges(n);
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t pos : alt_starts_[r]) {
        for (; g_->elements_[pos].type == ElementType::kRule; ++pos) {
          const uint32_t s = g_->elements_[pos].value;
          edges[r].push_back({s, g_->elements_[pos + 1].type == ElementType::kEnd});
          if (!nullable[s]) break;
        }
      }
    }
    std::vector<std::vector<uint32_t>> successors(n);
    for (uint32_t r = 0; r < n; ++r) {
      for (const Edge& e : edges[r]) successors[r].push_back(e.to);
    }
    int comps = 0;
    const std::vector<int> comp = StronglyConnectedComponents(successors, &comps);
    for (uint32_t r = 0; r < n; ++r) {
      for (const Edge& e : edges[r]) {
        if (!e.tail && comp[e.to] == comp[r]) {
          return InvalidArgument("grammar has left recursion: rule '" + DisplayName(g_->rule_names_[r]) +
                                 "' can reach itself before matching anything (rewrite it with repetition, "
                                 "e.g. a ::= b (op b)*)");
        }
      }
    }
    return Status::Ok();
  }

  Status BuildClosures() {
    const size_t positions = g_->elements_.size();
    g_->closure_begin_.assign(positions + 1, 0);
    std::vector<uint32_t> chain;
    std::unordered_set<std::string> seen;
    std::string key;
    Status status;
    std::function<void(uint32_t, int)> visit = [&](uint32_t pos, int depth) {
      if (!status.ok()) return;
      if (depth > kMaxClosureDepth) {
        status = InvalidArgument("grammar nests too deeply without consuming input at rule '" +
                                 DisplayName(g_->rule_names_[g_->rule_of_[pos]]) + "'");
        return;
      }
      key.assign(reinterpret_cast<const char*>(&pos), sizeof(pos));
      key.append(reinterpret_cast<const char*>(chain.data()), chain.size() * sizeof(uint32_t));
      // Counted before the state is kept: it and its key (an item and its chain, for a terminal) are the
      // memory and time this search spends.
      if (!Grow(1 + chain.size())) {
        status = TooLarge(g_->rule_of_[pos]);
        return;
      }
      if (!seen.insert(key).second) return;
      const Element& e = g_->elements_[pos];
      if (e.type == ElementType::kBytes) {
        g_->closure_items_.push_back({pos, uint32_t(g_->chains_.size()), uint32_t(chain.size())});
        g_->chains_.insert(g_->chains_.end(), chain.begin(), chain.end());
        return;
      }
      if (e.type == ElementType::kEnd) {
        if (chain.empty()) {
          g_->closure_items_.push_back({kPop, 0, 0});
          return;
        }
        const uint32_t next = chain.back();
        chain.pop_back();
        visit(next, depth + 1);
        chain.push_back(next);
        return;
      }
      const bool tail = g_->elements_[pos + 1].type == ElementType::kEnd;
      if (!tail) chain.push_back(pos + 1);
      for (uint32_t alt : alt_starts_[e.value]) visit(alt, depth + 1);
      if (!tail) chain.pop_back();
    };
    for (uint32_t pos = 0; pos < positions; ++pos) {
      g_->closure_begin_[pos] = uint32_t(g_->closure_items_.size());
      seen.clear();
      chain.clear();
      visit(pos, 0);
      if (!status.ok()) return status;
    }
    g_->closure_begin_[positions] = uint32_t(g_->closure_items_.size());
    return Status::Ok();
  }

  // follow(r): the positions right after every non-tail reference to r, plus follow(u) for each rule u that
  // references r as its last element (r ending ends u); can_end likewise. Solved over the strongly
  // connected components of that "ends with" graph in topological order, each edge merged once: a naive
  // fixed point took a pass per link of a chain (`(ab|cd?){0,10000}`: 10^4 passes, 48 s). A component's
  // set is appended to, then sorted and deduplicated once, when every component pointing to it is done;
  // each entry appended counts toward the size bound (nested repetition makes the sets quadratic).
  Status BuildFollows() {
    const size_t n = alt_starts_.size();
    std::vector<std::vector<uint32_t>> direct(n);
    std::vector<std::vector<uint32_t>> tail_of(n);  // tail_of[u]: rules u ends with (u -> r)
    for (uint32_t pos = 0; pos + 1 < g_->elements_.size(); ++pos) {
      const Element& e = g_->elements_[pos];
      if (e.type != ElementType::kRule) continue;
      if (g_->elements_[pos + 1].type == ElementType::kEnd) {
        tail_of[g_->rule_of_[pos]].push_back(e.value);
      } else {
        direct[e.value].push_back(pos + 1);
      }
    }
    // Components come out sinks first, so reversed they are in topological order.
    int comps = 0;
    const std::vector<int> comp = StronglyConnectedComponents(tail_of, &comps);
    std::vector<std::vector<uint32_t>> members(static_cast<size_t>(comps));
    for (uint32_t r = 0; r < n; ++r) members[size_t(comp[r])].push_back(r);
    std::vector<std::vector<uint32_t>> follow(members.size());
    std::vector<bool> can_end(members.size(), false);
    can_end[size_t(comp[start_rule_])] = true;
    g_->follow_range_.assign(members.size(), {0, 0});
    // Every component before the ones it points to; the flat table is filled in the same order.
    for (size_t c = members.size(); c-- > 0;) {
      std::vector<uint32_t>& f = follow[c];
      for (uint32_t r : members[c]) {
        if (!Grow(direct[r].size())) return TooLarge(r);
        f.insert(f.end(), direct[r].begin(), direct[r].end());
      }
      std::sort(f.begin(), f.end());
      f.erase(std::unique(f.begin(), f.end()), f.end());
      for (uint32_t r : members[c]) {
        for (uint32_t to : tail_of[r]) {
          const size_t d = size_t(comp[to]);
          if (d == c) continue;
          if (!Grow(f.size())) return TooLarge(to);
          follow[d].insert(follow[d].end(), f.begin(), f.end());
          if (can_end[c]) can_end[d] = true;
        }
      }
      g_->follow_range_[c].first = uint32_t(g_->follow_.size());
      g_->follow_.insert(g_->follow_.end(), f.begin(), f.end());
      g_->follow_range_[c].second = uint32_t(g_->follow_.size());
      std::vector<uint32_t>().swap(f);
    }
    g_->can_end_.assign(n, false);
    g_->follow_set_.assign(n, 0);
    for (uint32_t r = 0; r < n; ++r) {
      g_->can_end_[r] = can_end[size_t(comp[r])];
      g_->follow_set_[r] = uint32_t(comp[r]);
    }
    return Status::Ok();
  }

  const Grammar& grammar_;
  std::unique_ptr<CompiledGrammar> g_;
  uint64_t max_size_;
  uint64_t size_ = 0;
  uint32_t start_rule_ = 0;
  std::vector<std::vector<uint32_t>> alt_starts_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::map<std::vector<std::vector<uint32_t>>, uint32_t> class_ids_;
  std::vector<std::pair<uint32_t, std::vector<std::vector<uint32_t>>>> class_rules_;
};

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::Compile(const Grammar& grammar,
                                                                        uint64_t max_size) {
  return Builder(grammar, max_size).Build();
}

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::FromGbnf(std::string_view text,
                                                                         std::string_view root,
                                                                         uint64_t max_size) {
  LOCKSTEP_ASSIGN_OR_RETURN(Grammar g, ParseGbnf(text, root));
  return Compile(g, max_size);
}

size_t CompiledGrammar::MemoryBytes() const {
  const auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  size_t total = sizeof(CompiledGrammar) + bytes(elements_) + bytes(byte_sets_) + bytes(rule_of_) +
                 bytes(rule_names_) + bytes(closure_begin_) + bytes(closure_items_) + bytes(chains_) +
                 bytes(follow_set_) + bytes(follow_range_) + bytes(follow_) + can_end_.capacity() / 8 +
                 bytes(terminals_);
  for (const std::string& name : rule_names_) total += name.capacity() > 15 ? name.capacity() + 1 : 0;
  return total;
}

}  // namespace lockstep::grammar
