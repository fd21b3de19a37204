// CompiledGrammar's follow sets and can-end flags (what token masks assume below a context) must equal a
// naive fixed point computed here from the public layout, over grammars with chains of tail references
// (counted repetition), mutual tail recursion and nullable rules. Regression (issue 15): the fixed point
// inside Compile took a pass per link of a chain, 48 s for the regex `(ab|cd?){0,10000}`.
#include "grammar/compiled_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "grammar/json_schema.h"
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

std::string Repeated(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// `levels` nested groups of `(...){1,50}` around "a", in GBNF.
std::string NestedCountedGbnf(int levels) {
  return "root ::= " + Repeated("(", levels) + "\"a\"" + Repeated("){1,50}", levels) + "\n";
}

// Issue 15: 200 nested levels of `(...){1,50}` took 7-14 s and 2.6 GB to compile (follow sets quadratic in
// the nesting). The compiled size is counted as it is produced and refused past the bound; the count is
// deterministic and the bound exact.
TEST(CompiledGrammar, SizeBoundRefusesNestedCountedRepetition) {
  auto small = CompiledGrammar::FromGbnf(NestedCountedGbnf(30));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  const uint64_t size = (*small)->compiled_size();
  EXPECT_GT(size, 1'000'000u);  // 30 levels: ~1.6 M
  EXPECT_LT(size, kDefaultMaxCompiledSize);
  auto again = CompiledGrammar::FromGbnf(NestedCountedGbnf(30));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->compiled_size(), size);
  EXPECT_TRUE(CompiledGrammar::FromGbnf(NestedCountedGbnf(30), "root", size).ok());
  auto below = CompiledGrammar::FromGbnf(NestedCountedGbnf(30), "root", size - 1);
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.status().message().find("grammar too large to compile"), std::string::npos)
      << below.status().ToString();
  EXPECT_NE(below.status().message().find(std::to_string(size - 1)), std::string::npos);
  // The reproducers, through GBNF and regex (at the regex nesting limit), stop at the default bound.
  std::string regex = "a";
  for (int i = 0; i < kMaxRegexNesting; ++i) regex = "(" + regex + "){1,50}";
  auto regex_gbnf = RegexToGbnf(regex, false);
  ASSERT_TRUE(regex_gbnf.ok()) << regex_gbnf.status().ToString();
  for (const std::string& gbnf : {NestedCountedGbnf(200), "root ::= " + *regex_gbnf}) {
    auto g = CompiledGrammar::FromGbnf(gbnf);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(
        g.status().message(),
        "grammar too large to compile: it expands to more than 16000000 parse-table entries (positions, "
        "parse-stack closures, follow sets), reached at rule 'root'; nested or counted repetition "
        "multiplies them");
  }
}

// What the bound leaves real grammars (the figures in compiled_grammar.h): JSON schemas compile to a few
// percent of it at most.
TEST(CompiledGrammar, RealGrammarsStayFarBelowTheSizeBound) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  for (int i = 0; i < 50; ++i)
    fields["field" + std::to_string(i)] = {{"type", "string"}, {"maxLength", 1000}};
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (int t = 0; t < 30; ++t) {
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    for (int i = 0; i < 10; ++i) {
      args["arg" + std::to_string(i)] = i % 3 == 0   ? nlohmann::ordered_json{{"type", "string"}}
                                        : i % 3 == 1 ? nlohmann::ordered_json{{"type", "integer"}}
                                                     : nlohmann::ordered_json{{"enum", {"a", "b", "c"}}};
    }
    tools.push_back({{"type", "object"},
                     {"properties",
                      {{"name", {{"const", "tool" + std::to_string(t)}}},
                       {"arguments", {{"type", "object"}, {"properties", args}}}}}});
  }
  const struct {
    nlohmann::ordered_json schema;
    uint64_t at_most;
  } cases[] = {
      {{{"type", "object"}}, 3'000},
      {nlohmann::ordered_json::parse(R"({"type": "array", "minItems": 1000, "items": {"type": "object",
         "properties": {"name": {"type": "string", "maxLength": 20},
                        "age": {"type": "integer", "minimum": 0, "maximum": 120},
                        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
                        "when": {"type": "string", "format": "date-time"}, "score": {"type": "number"}}}})"),
       40'000},
      {{{"anyOf", tools}}, 100'000},
      {{{"type", "string"}, {"maxLength", 10000}}, 600'000},
      {{{"type", "object"}, {"properties", fields}}, 3'000'000},
  };
  for (const auto& c : cases) {
    auto gbnf = JsonSchemaToGbnf(c.schema);
    ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
    auto g = CompiledGrammar::FromGbnf(*gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_LE((*g)->compiled_size(), c.at_most) << c.schema.dump().substr(0, 80);
    EXPECT_LE(c.at_most * 5, kDefaultMaxCompiledSize);
  }
  auto json = CompiledGrammar::FromGbnf(testing::kJsonGbnf);
  ASSERT_TRUE(json.ok());
  EXPECT_LT((*json)->compiled_size(), 2'000u);
}

// The parsers recurse per nesting level: a client's nesting is bounded before it can overflow the stack
// (GBNF groups: 30000 levels crashed; a schema sent as a string escapes the server's body-depth limit).
TEST(CompiledGrammar, NestingIsBoundedBeforeTheStack) {
  const int n = kMaxGrammarNesting;
  EXPECT_TRUE(CompiledGrammar::FromGbnf("root ::= " + Repeated("(", n) + "\"a\"" + Repeated(")", n)).ok());
  for (int levels : {n + 1, 100'000}) {
    auto g = CompiledGrammar::FromGbnf("root ::= " + Repeated("(", levels) + "\"a\"" + Repeated(")", levels));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().message(), "grammar line 1, column 510: groups nested more than 500 deep");
  }
  auto nested_schema = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += R"({"type": "array", "items": )";
    text += R"({"type": "string"})" + Repeated("}", levels);
    return JsonSchemaToGbnf(nlohmann::ordered_json::parse(text));
  };
  EXPECT_TRUE(nested_schema(kMaxSchemaDepth - 1).ok());
  auto deep = nested_schema(kMaxSchemaDepth);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("schemas nested more than 100 deep"), std::string::npos)
      << deep.status().ToString();
  auto deeper = nested_schema(100'000);
  ASSERT_FALSE(deeper.ok());
  EXPECT_EQ(deeper.status().message(), "JSON schema nests arrays and objects more than 256 levels deep");
}

}  // namespace
}  // namespace lockstep::grammar
