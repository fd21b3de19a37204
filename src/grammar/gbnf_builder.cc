#include "grammar/gbnf_builder.h"

#include <set>

#include "base/status.h"
#include "grammar/grammar.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

// A code point inside a GBNF character class.
std::string ClassChar(uint32_t c) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\\U";
  for (int shift = 28; shift >= 0; shift -= 4) out += hex[(c >> shift) & 15];
  return out;
}

}  // namespace

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

std::string GbnfBuilder::AddTextWithout(const std::string& name_hint, std::string_view stop) {
  std::vector<uint32_t> s;
  for (size_t p = 0; p < stop.size();) s.push_back(utf8::DecodeAt(stop, &p));
  LOCKSTEP_CHECK(!s.empty());
  const size_t n = s.size();
  // Knuth-Morris-Pratt: fail[k] = the longest proper border of s[0, k).
  std::vector<size_t> fail(n + 1, 0);
  for (size_t k = 2; k <= n; ++k) {
    size_t f = fail[k - 1];
    while (f > 0 && s[f] != s[k - 1]) f = fail[f];
    fail[k] = s[f] == s[k - 1] ? f + 1 : 0;
  }
  auto next = [&](size_t k, uint32_t c) {
    while (k > 0 && (k == n || s[k] != c)) k = fail[k];
    return s[k] == c ? k + 1 : 0;
  };
  const std::set<uint32_t> chars(s.begin(), s.end());
  std::vector<std::string> names(n);
  for (size_t k = 0; k < n; ++k) names[k] = Reserve(name_hint);
  for (size_t k = 0; k < n; ++k) {
    std::string body = "\"\"", others;
    for (uint32_t c : chars) {
      others += ClassChar(c);
      const size_t to = next(k, c);
      if (to == n) continue;  // would complete `stop`
      std::string lit;
      utf8::Append(c, &lit);
      body += " | " + GbnfLiteral(lit) + " " + names[to];
    }
    body += " | [^" + others + "] " + names[0];
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
