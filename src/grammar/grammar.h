// Grammar: a context-free grammar over Unicode code points, as parsed from GBNF text (llama.cpp's grammar
// syntax). Repetitions (`*`, `+`, `?`, `{m,n}`) and parenthesised groups are already expanded into generated
// rules, so a rule is just a list of alternatives, each a sequence of symbols: a character class (a literal
// character is a one-code-point class) or a reference to another rule.
//
// GBNF, as accepted here (llama.cpp's grammars/README.md):
//   rule-name ::= alternative | alternative ...      names: [a-zA-Z0-9-]+, one rule per definition
//   "literal"  [a-z0-9_] [^\n"]  .  ( group )  name   postfix: * + ? {m} {m,} {m,n}
//   escapes: \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] ; comments: # to the end of the line;
//   newlines end a rule except inside parentheses and after `|`. The start rule is `root`.
// Errors name the line and column (1-based, in code points) and what was expected there.
//
// Plain value type; immutable after parsing; safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace lockstep::grammar {

struct CodepointRange {
  uint32_t first = 0;  // inclusive
  uint32_t last = 0;   // inclusive
};

struct Symbol {
  enum class Kind : uint8_t { kChars, kRule };
  Kind kind = Kind::kChars;
  bool negated = false;                // kChars: matches every code point outside `ranges`
  std::vector<CodepointRange> ranges;  // kChars
  uint32_t rule = 0;                   // kRule: index into Grammar::rules

  static Symbol Char(uint32_t c) { return Symbol{Kind::kChars, false, {{c, c}}, 0}; }
  static Symbol Ref(uint32_t r) { return Symbol{Kind::kRule, false, {}, r}; }
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;  // generated rules (repetitions, groups) are "<rule>_<n>"
  std::vector<Sequence> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  uint32_t root = 0;
};

// Limits that keep a client-supplied grammar from exhausting memory: repetition bounds and total symbols;
// and the stack: parenthesised groups nest at most kMaxGrammarNesting deep (the parser recurses per level;
// ~30000 levels overflowed an 8 MiB stack).
inline constexpr int64_t kMaxRepetition = 10000;
inline constexpr size_t kMaxGrammarSymbols = 1u << 20;
inline constexpr int kMaxGrammarNesting = 500;

// Parses GBNF text. `root` names the start rule. InvalidArgument "grammar line L, column C: ..." for syntax
// errors, undefined rules (at their first use), rules defined twice, a missing start rule and bounds past
// the limits above.
Result<Grammar> ParseGbnf(std::string_view text, std::string_view root = "root");

// GBNF text of a string literal: `"` + value with \, ", control characters and DEL escaped + `"`.
std::string GbnfLiteral(std::string_view utf8);
// A code point as it is written inside a GBNF character class (\UXXXXXXXX).
std::string GbnfClassChar(uint32_t c);

}  // namespace lockstep::grammar
