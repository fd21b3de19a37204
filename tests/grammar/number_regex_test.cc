// Number ranges (exact, checked over a grid of numbers against decimal comparison) and regex -> grammar.
#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"

namespace lockstep::grammar {
namespace {

bool Accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
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
    ASSERT_EQ(g != nullptr && Accepts(g, t), want)
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

std::shared_ptr<const CompiledGrammar> FromRegex(const std::string& pattern, bool json = false) {
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
    auto g = FromRegex(c.pattern);
    ASSERT_NE(g, nullptr) << c.pattern;
    for (const char* t : c.yes) EXPECT_TRUE(Accepts(g, t)) << c.pattern << " should match " << t;
    for (const char* t : c.no) EXPECT_FALSE(Accepts(g, t)) << c.pattern << " should not match " << t;
  }
}

TEST(RegexToGbnf, JsonStringModeEscapes) {
  auto g = FromRegex("a\"b\\\\c[\\n\"]", /*json=*/true);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(g, "a\\\"b\\\\c\\n"));
  EXPECT_TRUE(Accepts(g, "a\\\"b\\\\c\\\""));
  EXPECT_FALSE(Accepts(g, "a\"b\\c\n"));
  auto any = FromRegex("[^x]{3}", true);
  ASSERT_NE(any, nullptr);
  EXPECT_TRUE(Accepts(any, "a\\u0001\\t"));
  EXPECT_FALSE(Accepts(any, "a\x01\t"));
  EXPECT_FALSE(Accepts(any, "ab\""));
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
  }
}

}  // namespace
}  // namespace lockstep::grammar
