#include "grammar/json_other_key.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_stops.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {

std::optional<std::string> OtherKeyExpr(const std::set<std::string>& keys, const std::string& name,
                                        const std::string& char_rule, const std::string& unicode_escape_rule,
                                        const std::set<uint32_t>& firsts, GbnfBuilder& b) {
  std::vector<std::vector<uint32_t>> cps;
  for (const std::string& k : keys) {
    std::vector<uint32_t> v;
    for (size_t p = 0; p < k.size();) v.push_back(utf8::DecodeAt(k, &p));
    for (uint32_t c : v) {
      if (c < 0x20 || c == '"' || c == '\\' || c == 0x7F) return std::nullopt;
    }
    cps.push_back(std::move(v));
  }
  std::function<std::string(const std::vector<uint32_t>&)> node = [&](const std::vector<uint32_t>& prefix) {
    std::set<uint32_t> next;
    bool is_key = false;
    for (const std::vector<uint32_t>& k : cps) {
      if (k.size() < prefix.size() || !std::equal(prefix.begin(), prefix.end(), k.begin())) continue;
      if (k.size() == prefix.size()) {
        is_key = true;
      } else {
        next.insert(k[prefix.size()]);
      }
    }
    std::string alts = is_key ? "" : "\"\\\"\"";
    std::string excluded;
    for (uint32_t c : next) {
      std::string lit;
      utf8::Append(c, &lit);
      excluded += lit;
      std::vector<uint32_t> longer = prefix;
      longer.push_back(c);
      alts += (alts.empty() ? "" : " | ") + GbnfLiteral(EscapeCodepoints(lit, firsts)) + " " + node(longer);
    }
    alts += (alts.empty() ? "" : " | ") + std::string("( [^\"\\\\\\x7F\\x00-\\x1F") + excluded +
            ClassBody(firsts) + "] | [\\\\] ([\"\\\\/bfnrt] | \"u\" " + unicode_escape_rule + ") ) " +
            char_rule + "* \"\\\"\"";
    return b.Add(name + "-other-key", alts);
  };
  return node({});
}

}  // namespace lockstep::grammar
