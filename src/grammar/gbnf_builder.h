// GbnfBuilder: collects the rules of a generated GBNF grammar (JSON schema, regex and number-range
// converters, the forced tool-call grammars). Rule names are made unique and valid ([a-zA-Z0-9-]) and start
// with the builder's prefix (so that several generated grammars can share one GBNF text); a body added twice
// under the same hint reuses the first rule. Text() lists `root` first, then the rules in the order they were
// added. Single-threaded value type.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::grammar {

class GbnfBuilder {
 public:
  GbnfBuilder() = default;
  explicit GbnfBuilder(std::string prefix) : prefix_(std::move(prefix)) {}

  // Adds `name_hint ::= body` (the hint sanitised and numbered if taken) and returns the rule's name.
  std::string Add(const std::string& name_hint, const std::string& body);
  // Reserves a name now and gives its body later (for recursive rules, e.g. a $ref to itself).
  std::string Reserve(const std::string& name_hint);
  void Define(const std::string& name, const std::string& body);
  bool Has(const std::string& name) const { return bodies_.count(name) != 0; }
  // A rule for any text (code points) that contains none of `stops` (UTF-8, none empty) anywhere. A stop
  // appended to such a text first occurs at its end when no stop holds a stop's first character anywhere
  // but at its start (true of the '<'-led tags it is used for). `excluded`: a GBNF character-class body of
  // code points the text never holds raw (none of the stops' characters); `reset`: a GBNF expression for one
  // more unit the text may hold anywhere (JSON's escapes), which must take no part in a stop (it starts with
  // a character no stop holds, and none of its characters starts one). One rule per state of an
  // Aho-Corasick matcher of the stops, right-recursive; hand-written, as no library builds the exclusion
  // automaton of several strings as GBNF.
  std::string AddTextWithout(const std::string& name_hint, const std::vector<std::string>& stops,
                             const std::string& excluded = "", const std::string& reset = "");
  std::string AddTextWithout(const std::string& name_hint, std::string_view stop) {
    return AddTextWithout(name_hint, std::vector<std::string>{std::string(stop)});
  }

  std::string Text() const;

 private:
  std::string UniqueName(const std::string& hint);

  std::string prefix_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> bodies_;
  std::map<std::pair<std::string, std::string>, std::string> by_body_;  // (hint, body) -> name
};

}  // namespace lockstep::grammar
