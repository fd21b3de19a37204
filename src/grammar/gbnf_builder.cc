#include "grammar/gbnf_builder.h"

#include <map>
#include <set>

#include "base/status.h"
#include "grammar/grammar.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {

std::string GbnfBuilder::UniqueName(const std::string& hint) {
  std::string base = prefix_;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    base += ok ? c : '-';
  }
  if (base.size() == prefix_.size()) base += "rule";
  std::string name = base;
  for (int i = 1; bodies_.count(name) != 0; ++i) name = base + "-" + std::to_string(i);
  order_.push_back(name);
  bodies_[name];
  return name;
}

std::string GbnfBuilder::Add(const std::string& name_hint, const std::string& body) {
  auto key = std::make_pair(name_hint, body);
  if (auto it = by_body_.find(key); it != by_body_.end()) return it->second;
  const std::string name = UniqueName(name_hint);
  bodies_[name] = body;
  by_body_[key] = name;
  return name;
}

std::string GbnfBuilder::AddTextWithout(const std::string& name_hint, const std::vector<std::string>& stops,
                                        const std::string& excluded, const std::string& reset) {
  // The trie of the stops: node 0 is the empty prefix; children[k] node k's; forbidden[k] whether a stop
  // ends at node k (or, once the failure links are known, at one of its suffixes).
  std::vector<std::map<uint32_t, size_t>> children(1);
  std::vector<bool> forbidden(1, false);
  std::set<uint32_t> chars;
  for (const std::string& stop : stops) {
    LOCKSTEP_CHECK(!stop.empty());
    size_t node = 0;
    for (size_t p = 0; p < stop.size();) {
      const uint32_t c = utf8::DecodeAt(stop, &p);
      chars.insert(c);
      auto it = children[node].find(c);
      if (it == children[node].end()) {
        it = children[node].emplace(c, children.size()).first;
        children.emplace_back();
        forbidden.push_back(false);
      }
      node = it->second;
    }
    forbidden[node] = true;
  }
  // Aho-Corasick: fail[k] = the node of the longest proper suffix of k's prefix that is also a trie node,
  // computed breadth-first; a node whose failure chain reaches a stop is forbidden too.
  const size_t n = children.size();
  std::vector<size_t> fail(n, 0), order = {0};
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t k = order[i];
    for (const auto& [c, child] : children[k]) {
      size_t f = fail[k];
      while (k != 0 && f != 0 && children[f].count(c) == 0) f = fail[f];
      fail[child] = k == 0 ? 0 : (children[f].count(c) != 0 ? children[f].at(c) : 0);
      forbidden[child] = forbidden[child] || forbidden[fail[child]];
      order.push_back(child);
    }
  }
  auto next = [&](size_t k, uint32_t c) {
    while (k != 0 && children[k].count(c) == 0) k = fail[k];
    const auto it = children[k].find(c);
    return it == children[k].end() ? size_t(0) : it->second;
  };
  std::vector<std::string> names(n);
  for (size_t k : order) {
    if (!forbidden[k]) names[k] = Reserve(name_hint);
  }
  std::string others;
  for (uint32_t c : chars) others += GbnfClassChar(c);
  for (size_t k : order) {
    if (forbidden[k]) continue;
    std::string body = "\"\"";
    for (uint32_t c : chars) {
      const size_t to = next(k, c);
      if (forbidden[to]) continue;  // would complete a stop
      std::string lit;
      utf8::Append(c, &lit);
      body += " | " + GbnfLiteral(lit) + " " + names[to];
    }
    body += " | [^" + others + excluded + "] " + names[0];
    if (!reset.empty()) body += " | " + reset + " " + names[0];
    Define(names[k], body);
  }
  return names[0];
}

std::string GbnfBuilder::Reserve(const std::string& name_hint) { return UniqueName(name_hint); }

void GbnfBuilder::Define(const std::string& name, const std::string& body) { bodies_[name] = body; }

std::string GbnfBuilder::Text() const {
  std::string out;
  if (auto it = bodies_.find("root"); it != bodies_.end()) out += "root ::= " + it->second + "\n";
  for (const std::string& name : order_) {
    if (name != "root") out += name + " ::= " + bodies_.at(name) + "\n";
  }
  return out;
}

}  // namespace lockstep::grammar
