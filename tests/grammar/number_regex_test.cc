// Number ranges (exact, checked over a grid of numbers against decimal comparison) and regex -> grammar.
#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"

namespace lockstep::grammar {
namespace {

bool RegexAccepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.AcceptBytes(text) && m.accepting();
}

Decimal D(const std::string& s) {
  auto d = ParseDecimal(s);
  EXPECT_TRUE(d.ok()) << s;
  return *d;
}

TEST(NumberRange, ParseDecimal) {
  EXPECT_EQ(D("12").int_digits, "12");
  EXPECT_EQ(D("-0.50").frac_digits, "5");
  EXPECT_TRUE(D("-0.50").negative);
  EXPECT_FALSE(D("-0").negative);
  EXPECT_EQ(D("1e-3").frac_digits, "001");
  EXPECT_EQ(D("2.50E+2").int_digits, "250");
  EXPECT_EQ(D("1.5e1").frac_digits, "");
  EXPECT_LT(CompareDecimals(D("-2"), D("-1.5")), 0);
  EXPECT_GT(CompareDecimals(D("10"), D("9.99")), 0);
  EXPECT_EQ(CompareDecimals(D("1.0"), D("1")), 0);
  for (const char* bad : {"", "-", "1.2.3", "1e", "abc", "1x"}) EXPECT_FALSE(ParseDecimal(bad).ok()) << bad;
}

// Every number string on a grid (integers and two-decimal fractions, canonical and with trailing zeros)
// is accepted exactly when it lies within the bounds.
void ExpectExact(const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi, bool integer) {
  GbnfBuilder b;
  auto rule = AddNumberRange(&b, "root", lo, hi, integer);
  std::shared_ptr<const CompiledGrammar> g;
  if (rule.ok()) {
    auto compiled = CompiledGrammar::FromGbnf(b.Text());
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString() << "\n" << b.Text();
    g = *compiled;
  }
  std::vector<std::string> texts;
  for (int i = -160; i <= 160; ++i) texts.push_back(std::to_string(i));
  for (int i = -1600; i <= 1600; i += 7) {
    const std::string sign = i < 0 ? "-" : "";
    const int a = std::abs(i);
    texts.push_back(sign + std::to_string(a / 100) + "." + std::to_string(a % 100 / 10) +
                    std::to_string(a % 10));
    if (a % 10 != 0)
      texts.push_back(sign + std::to_string(a / 100) + "." + std::to_string(a % 100 / 10) +
                      std::to_string(a % 10) + "0");
  }
  texts.insert(texts.end(),
               {"0.125", "0.1249", "0.12501", "99.99", "100.001", "-12.5", "-12.50001", "1e3", "01"});
  for (const std::string& t : texts) {
    const Decimal x = D(t);
    bool want = !integer || t.find('.') == std::string::npos;
    want = want && t != "1e3" && t != "01";
    if (lo)
      want = want && (lo->inclusive ? CompareDecimals(x, lo->value) >= 0 : CompareDecimals(x, lo->value) > 0);
    if (hi)
      want = want && (hi->inclusive ? CompareDecimals(x, hi->value) <= 0 : CompareDecimals(x, hi->value) < 0);
    ASSERT_EQ(g != nullptr && RegexAccepts(g, t), want)
        << t << " lo "
        << (lo ? (lo->value.negative ? "-" : "") + lo->value.int_digits + "." + lo->value.frac_digits
               : "none")
        << " hi "
        << (hi ? (hi->value.negative ? "-" : "") + hi->value.int_digits + "." + hi->value.frac_digits
               : "none")
        << " integer " << integer;
  }
}

TEST(NumberRange, ExactOverAGrid) {
  const char* values[] = {"-12.5", "-1",  "-0.25", "0",     "0.125", "0.75",
                          "1",     "2.5", "10",    "99.99", "100",   "150"};
  std::mt19937_64 rng(5);
  for (int round = 0; round < 40; ++round) {
    std::optional<NumberBound> lo, hi;
    const int mode = round % 4;  // both, lower only, upper only, both
    if (mode != 2) lo = NumberBound{D(values[rng() % 12]), rng() % 2 == 0};
    if (mode != 1) hi = NumberBound{D(values[rng() % 12]), rng() % 2 == 0};
    if (lo && hi && CompareDecimals(lo->value, hi->value) > 0) std::swap(lo->value, hi->value);
    if (lo && hi && CompareDecimals(lo->value, hi->value) == 0) lo->inclusive = hi->inclusive = true;
    ExpectExact(lo, hi, /*integer=*/round % 3 == 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
  ExpectExact(NumberBound{D("0.123"), true}, NumberBound{D("0.125"), false}, false);
  ExpectExact(std::nullopt, std::nullopt, true);
}

TEST(NumberRange, EmptyRangesAreErrors) {
  GbnfBuilder b;
  EXPECT_FALSE(AddNumberRange(&b, "r", NumberBound{D("2"), false}, NumberBound{D("2"), true}, false).ok());
  EXPECT_FALSE(AddNumberRange(&b, "r", NumberBound{D("1.2"), true}, NumberBound{D("1.8"), true}, true).ok());
  EXPECT_TRUE(AddNumberRange(&b, "r", NumberBound{D("2"), true}, NumberBound{D("2"), true}, true).ok());
}

std::shared_ptr<const CompiledGrammar> CompileRegex(const std::string& pattern, bool json = false) {
  auto expr = RegexToGbnf(pattern, json);
  EXPECT_TRUE(expr.ok()) << expr.status().ToString();
  if (!expr.ok()) return nullptr;
  auto g = CompiledGrammar::FromGbnf("root ::= " + *expr);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << *expr;
  return g.ok() ? *g : nullptr;
}

TEST(RegexToGbnf, MatchesWholeText) {
  struct Case {
    const char* pattern;
    std::vector<const char*> yes, no;
  };
  const Case cases[] = {
      {"^[A-Z]{2}-\\d{3}$", {"AB-123"}, {"AB-12", "ab-123", "AB-1234", "xAB-123"}},
      {"(foo|ba[rz])+", {"foo", "barbazfoo"}, {"", "fo", "bax"}},
      {"a.c",
       {"abc", "a-c",
        "a\xC3\xA9"
        "c"},
       {"a\nc", "ac"}},
      {"[^a-c\\d]x?", {"d", "zx", "\xE2\x98\x83"}, {"a", "5", "dxx"}},
      {"\\w+@\\w+\\.(com|org)", {"me@example.com"}, {"me@example.net", "@a.com"}},
      {"(?:ab){2,3}c*?", {"abab", "abababccc"}, {"ab", "abababab"}},
      {"\\x41\\u00e9\\u{1F600}\\.\\*", {"A\xC3\xA9\xF0\x9F\x98\x80.*"}, {"A\xC3\xA9\xF0\x9F\x98\x80x*"}},
      {"x{2}y{1,}z{0,1}", {"xxy", "xxyyyz"}, {"xy", "xxz"}},
      {"a{,2}", {"a{,2}"}, {"aa"}},  // not a quantifier: literal, as in ECMAScript
      {"\\s\\S", {" x", "\tq"}, {"  ", "x "}},
      {"(?<year>\\d{4})|(?P<word>[a-z]+)|", {"2024", "abc", ""}, {"12"}},
  };
  for (const Case& c : cases) {
    auto g = CompileRegex(c.pattern);
    ASSERT_NE(g, nullptr) << c.pattern;
    for (const char* t : c.yes) EXPECT_TRUE(RegexAccepts(g, t)) << c.pattern << " should match " << t;
    for (const char* t : c.no) EXPECT_FALSE(RegexAccepts(g, t)) << c.pattern << " should not match " << t;
  }
}

TEST(RegexToGbnf, JsonStringModeEscapes) {
  auto g = CompileRegex("a\"b\\\\c[\\n\"]", /*json=*/true);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RegexAccepts(g, "a\\\"b\\\\c\\n"));
  EXPECT_TRUE(RegexAccepts(g, "a\\\"b\\\\c\\\""));
  EXPECT_FALSE(RegexAccepts(g, "a\"b\\c\n"));
  auto any = CompileRegex("[^x]{3}", true);
  ASSERT_NE(any, nullptr);
  EXPECT_TRUE(RegexAccepts(any, "a\\u0001\\t"));
  EXPECT_FALSE(RegexAccepts(any, "a\x01\t"));
  EXPECT_FALSE(RegexAccepts(any, "ab\""));
}

// Stacked and nested quantifiers collapse where the language allows (issue 15: `.****...` and `.*` x 200
// made grammars whose masks cost seconds). Oracle: the set of counts of 'a' each pattern matches, computed
// here by sumsets from the quantifiers alone; the converted grammar must accept exactly those counts.
using Counts = std::vector<bool>;  // counts[n]: n copies of 'a' match (n <= kMaxCount)
constexpr int kMaxCount = 14;

Counts Repeat(const Counts& inner, int min, int max) {  // max -1: unbounded
  Counts out(kMaxCount + 1, false), power(kMaxCount + 1, false);
  power[0] = true;  // the 0-fold sumset
  for (int k = 0; k <= kMaxCount + 1 && (max < 0 || k <= max); ++k) {
    if (k >= min) {
      for (int n = 0; n <= kMaxCount; ++n) out[n] = out[n] || power[n];
    }
    Counts next(kMaxCount + 1, false);
    for (int i = 0; i <= kMaxCount; ++i) {
      for (int j = 0; power[i] && i + j <= kMaxCount; ++j) next[i + j] = next[i + j] || inner[j];
    }
    power = next;
  }
  return out;
}

TEST(RegexToGbnf, StackedQuantifiersKeepTheirLanguage) {
  struct Quantifier {
    const char* text;
    int min, max;
  };
  const Quantifier qs[] = {{"*", 0, -1},    {"+", 1, -1},    {"?", 0, 1},      {"{2}", 2, 2},
                           {"{0,2}", 0, 2}, {"{2,3}", 2, 3}, {"{3}", 3, 3},    {"{1,2}", 1, 2},
                           {"{0}", 0, 0},   {"{2,}", 2, -1}, {"{3,5}?", 3, 5}, {"*?", 0, -1}};
  Counts one(kMaxCount + 1, false);
  one[1] = true;
  int checked = 0;
  for (const Quantifier& q1 : qs) {
    for (const Quantifier& q2 : qs) {
      for (const Quantifier& q3 : qs) {
        const Counts want = Repeat(Repeat(Repeat(one, q1.min, q1.max), q2.min, q2.max), q3.min, q3.max);
        std::vector<std::string> patterns = {std::string("(?:(a") + q1.text + ")" + q2.text + ")" + q3.text};
        // Stacked without groups where that is not a lazy or possessive suffix: a** a{2}* a*{2,3}.
        if (q2.text[0] != '+' && q2.text[0] != '?' && q3.text[0] != '+' && q3.text[0] != '?' &&
            std::string(q1.text).back() != '?' && std::string(q2.text).back() != '?') {
          patterns.push_back(std::string("a") + q1.text + q2.text + q3.text);
        }
        for (const std::string& pattern : patterns) {
          auto g = CompileRegex(pattern);
          ASSERT_NE(g, nullptr) << pattern;
          for (int n = 0; n <= kMaxCount; ++n) {
            ASSERT_EQ(RegexAccepts(g, std::string(size_t(n), 'a')), want[n])
                << pattern << " on " << n << " a's";
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 2000);
  // Adjacent equal quantified atoms: X{a,b} X{c,d} = X{a+c,b+d}.
  for (const char* pattern : {"a*a*", "a?a{2}", "a{2,3}a+", "(?:a*)a?(?:a{2})"}) {
    auto g = CompileRegex(pattern);
    ASSERT_NE(g, nullptr) << pattern;
    const std::string p = pattern;
    for (int n = 0; n <= kMaxCount; ++n) {
      bool want = p == "a*a*" ? true : p == "a?a{2}" ? (n == 2 || n == 3) : p == "a{2,3}a+" ? n >= 3 : n >= 2;
      EXPECT_EQ(RegexAccepts(g, std::string(size_t(n), 'a')), want) << pattern << " on " << n;
    }
  }
}

// The redundant forms become the grammar of the simple one (a deterministic size check, not a timing).
TEST(RegexToGbnf, RedundantQuantifiersCollapse) {
  auto expr = [](const std::string& pattern) {
    auto r = RegexToGbnf(pattern, false);
    EXPECT_TRUE(r.ok()) << pattern << ": " << r.status().ToString();
    return r.ok() ? *r : std::string();
  };
  const std::string star = expr(".*");
  std::string dots, stars(1000, '*'), nested = ".*";
  for (int i = 0; i < 200; ++i) dots += ".*";
  for (int i = 0; i < 100; ++i) nested = "(" + nested + ")*";
  EXPECT_EQ(expr("." + stars), star);
  EXPECT_EQ(expr(dots), star);
  EXPECT_EQ(expr(nested), star);
  EXPECT_EQ(expr("(?:.+)*"), star);
  EXPECT_EQ(expr("(.*.*)+"), star);
  EXPECT_EQ(expr("a{1,3}*"), expr("a*"));
  EXPECT_EQ(expr("(?:a?){3}"), expr("a{0,3}"));
  EXPECT_NE(expr("(?:a{2})*"), expr("a*"));  // even counts only: stays nested
  // A product is left nested where it would grow the grammar: (a{50}){50} is 100 copies nested, 2500 flat.
  EXPECT_NE(expr("(?:a{50}){50}"), expr("a{2500}"));
  std::string deep = "a";
  for (int i = 0; i < kMaxRegexNesting; ++i) deep = "(" + deep + "){1,50}";
  EXPECT_LT(expr(deep).size(), 4000u);
  auto big = RegexToGbnf("(?:a{10000}){10000}", false);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_NE(big->find("{10000}"), std::string::npos);
  // The reproducer's grammar (a TGI body that took 35 s of CPU): small once collapsed.
  std::string repro = "[a-z]{6,{{{{{{s{{{{{hhhhhhhrepetition_penhhhhhhhhhhh" + std::string(14, '*') + "." +
                      std::string(135, '*') + std::string(90, 'h') + "{{{{.{{{5}";
  EXPECT_LT(expr(repro).size(), 1200u);
}

TEST(RegexToGbnf, UnsupportedConstructsAreErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "character 4: backreferences are not supported"},
      {"a(?=b)", "character 2: lookaround"},
      {"\\bword", "word boundaries"},
      {"\\p{L}", "Unicode property classes"},
      {"a^b", "anchors"},
      {"(ab", "unbalanced '('"},
      {"ab)", "unbalanced ')'"},
      {"[abc", "unterminated character class"},
      {"*a", "nothing to repeat"},
      {"a++", "possessive"},
      {"[z-a]", "out of order"},
      {"a{3,2}", "m < n"},
  };
  for (const auto& [pattern, want] : cases) {
    auto r = RegexToGbnf(pattern, false);
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << pattern << ": " << r.status().message() << " (wanted " << want << ")";
  }  // Groups one level past kMaxRegexNesting (the parser recurses per group: 10^5 overflowed the stack).
  const int n = kMaxRegexNesting + 1;
  auto deep = RegexToGbnf(std::string(n, '(') + "a" + std::string(n, ')'), false);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), "regex at character 101: groups nested more than 100 deep");
  EXPECT_TRUE(RegexToGbnf(std::string(n - 1, '(') + "a" + std::string(n - 1, ')'), false).ok());
}

}  // namespace
}  // namespace lockstep::grammar
