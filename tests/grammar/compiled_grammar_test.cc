// CompiledGrammar's follow sets and can-end flags (what token masks assume below a context) must equal a
// naive fixed point computed here from the public layout, over grammars with chains of tail references
// (counted repetition), mutual tail recursion and nullable rules. Regression (issue 15): the fixed point
// inside Compile took a pass per link of a chain, 48 s for the regex `(ab|cd?){0,10000}`.
#include "grammar/compiled_grammar.h"

#include <gtest/gtest.h>

#include <set>

#include "grammar/regex_to_gbnf.h"
#include "grammar_corpus.h"

namespace lockstep::grammar {
namespace {

void ExpectFollowsOfTheNaiveFixedPoint(const CompiledGrammar& g) {
  const size_t n = g.num_rules();
  std::vector<std::set<uint32_t>> follow(n);
  std::vector<std::vector<uint32_t>> tail_users(n);
  for (uint32_t pos = 0; pos + 1 < g.num_positions(); ++pos) {
    const Element& e = g.element(pos);
    if (e.type != ElementType::kRule) continue;
    if (g.element(pos + 1).type == ElementType::kEnd) {
      tail_users[e.value].push_back(g.RuleOf(pos));
    } else {
      follow[e.value].insert(pos + 1);
    }
  }
  std::vector<bool> can_end(n, false);
  can_end[g.RuleOf(CompiledGrammar::kStart)] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t user : tail_users[r]) {
        const size_t before = follow[r].size();
        follow[r].insert(follow[user].begin(), follow[user].end());
        if (can_end[user] && !can_end[r]) can_end[r] = changed = true;
        changed = changed || follow[r].size() != before;
      }
    }
  }
  for (uint32_t r = 0; r < n; ++r) {
    const std::span<const uint32_t> got = g.Follow(r);
    EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.end()),
              std::vector<uint32_t>(follow[r].begin(), follow[r].end()))
        << "rule " << g.RuleName(r);
    EXPECT_EQ(g.CanEndAfter(r), can_end[r]) << "rule " << g.RuleName(r);
  }
}

TEST(CompiledGrammar, FollowSetsEqualTheNaiveFixedPoint) {
  std::vector<std::string> grammars = {testing::kJsonGbnf, testing::kArithmeticGbnf, testing::kListGbnf,
                                       "root ::= a \"!\"\na ::= \"x\" b | \"y\"\nb ::= a | \"z\" c\nc ::= b?",
                                       "root ::= (x | y)* \"end\"\nx ::= \"a\" y?\ny ::= \"b\" x?"};
  for (const char* regex : {"(ab|cd?){0,300}", "((a|b?)c?){2,40}x", "(.*|x){5}"}) {
    auto expr = RegexToGbnf(regex, false);
    ASSERT_TRUE(expr.ok()) << expr.status().ToString();
    grammars.push_back("root ::= " + *expr);
  }
  for (const std::string& gbnf : grammars) {
    auto g = CompiledGrammar::FromGbnf(gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
    ExpectFollowsOfTheNaiveFixedPoint(**g);
  }
}

}  // namespace
}  // namespace lockstep::grammar
