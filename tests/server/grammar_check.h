// A check the grammar-producing tests share: whether GBNF text (compiled as the server compiles it) accepts
// `text` whole. A grammar that does not compile fails the calling test, naming the parser's error.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"

namespace lockstep::server::testing {

inline bool GbnfAccepts(const std::string& gbnf, std::string_view text) {
  auto g = grammar::CompiledGrammar::FromGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  if (!g.ok()) return false;
  grammar::GrammarMatcher m(*g);
  return m.AcceptBytes(text) && m.accepting();
}

}  // namespace lockstep::server::testing
