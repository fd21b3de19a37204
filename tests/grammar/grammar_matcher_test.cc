// GBNF parsing and incremental matching: a corpus of grammars (arithmetic, JSON, lists, nested repetition,
// UTF-8 ranges) against texts that must and must not match, byte by byte and as prefixes; errors with line
// and column for bad grammars.
#include "grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar_corpus.h"

namespace lockstep::grammar {
namespace {

std::shared_ptr<const CompiledGrammar> MustCompile(std::string_view gbnf) {
  auto g = CompiledGrammar::FromGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  return g.ok() ? *g : nullptr;
}

enum class Outcome { kComplete, kPrefix, kRejected };

// Feeds `text` in pieces of `piece` bytes; a piece that is rejected ends the match.
Outcome Match(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text, size_t piece = 1) {
  GrammarMatcher m(g);
  for (size_t i = 0; i < text.size(); i += piece) {
    if (!m.AcceptBytes(text.substr(i, piece))) return Outcome::kRejected;
  }
  return m.accepting() ? Outcome::kComplete : Outcome::kPrefix;
}

void ExpectOutcome(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text, Outcome want) {
  for (size_t piece : {size_t(1), size_t(3), text.size() + 1}) {
    EXPECT_EQ(Match(g, text, piece), want) << "text: " << text << " piece: " << piece;
  }
}

TEST(GrammarMatcher, Arithmetic) {
  auto g = MustCompile(testing::kArithmeticGbnf);
  for (const char* ok : {"1", "1+2*3", "(1 + 2) * -3", "( 4 )", "10/(2-3)*7"}) {
    ExpectOutcome(g, ok, Outcome::kComplete);
  }
  for (const char* prefix : {"", "1+", "(1", "((", "1 *"}) ExpectOutcome(g, prefix, Outcome::kPrefix);
  for (const char* bad : {"+1", "1**2", "()", "1)", "a", "1 2"}) ExpectOutcome(g, bad, Outcome::kRejected);
}

TEST(GrammarMatcher, Json) {
  auto g = MustCompile(testing::kJsonGbnf);
  for (const char* ok :
       {R"({"a": [1, 2.5e3, "x\"y", true, null], "b": {}})", R"([])", R"("h\u00e9llo \\ /")", "-0.5E-7",
        "{\"k\":\n\t[ [ [] ] ]}", "\"h\xC3\xA9llo \xE2\x98\x83 \xF0\x9D\x84\x9E\""}) {
    ExpectOutcome(g, ok, Outcome::kComplete);
  }
  for (const char* prefix : {"{", R"({"a")", "[1,", "\"abc", "tr", "1.", "\"\xE2\x98"}) {
    ExpectOutcome(g, prefix, Outcome::kPrefix);
  }
  for (const char* bad : {R"({"a" 1})", "[1,]", "\"\x01\"", "01", "truex", "{,}", "\"\\x\"", "\"\xC3\x28\"",
                          "\"\xED\xA0\x80\"", "\"\xC0\xAF\""}) {
    ExpectOutcome(g, bad, Outcome::kRejected);
  }
}

TEST(GrammarMatcher, ListsAndNestedRepetition) {
  auto list = MustCompile(testing::kListGbnf);
  ExpectOutcome(list, "- milk\n- eggs and ham\n", Outcome::kComplete);
  ExpectOutcome(list, "- milk\n- ", Outcome::kPrefix);
  ExpectOutcome(list, "- \n", Outcome::kRejected);
  ExpectOutcome(list, "milk\n", Outcome::kRejected);

  auto nested = MustCompile(R"(root ::= ("a" ("b"{2,3})? "c"){1,2})");
  for (const char* ok : {"ac", "abbc", "abbbc", "acac", "abbbcabbc"})
    ExpectOutcome(nested, ok, Outcome::kComplete);
  for (const char* bad : {"abc", "abbbbc", "acacac", "c", "aac"})
    ExpectOutcome(nested, bad, Outcome::kRejected);

  auto counts = MustCompile(R"(root ::= "x"{3} "-" [0-9]{2,} "-" ("ab"){0,2} "!"?)");
  for (const char* ok : {"xxx-12-", "xxx-1234-abab!", "xxx-00-ab"})
    ExpectOutcome(counts, ok, Outcome::kComplete);
  for (const char* bad : {"xx-12-", "xxx-1-", "xxx-12-ababab", "xxx-12-a!"}) {
    ExpectOutcome(counts, bad, Outcome::kRejected);
  }
  // Repetition of something that can be empty, and a rule that refers to itself in tail position only.
  auto empty_items = MustCompile("root ::= (\"a\"?)* \"b\"\nself ::= self | \"s\"");
  ExpectOutcome(empty_items, "aaab", Outcome::kComplete);
  ExpectOutcome(empty_items, "b", Outcome::kComplete);
  auto tail = MustCompile("root ::= item\nitem ::= item | \"s\"");
  ExpectOutcome(tail, "s", Outcome::kComplete);
  ExpectOutcome(tail, "ss", Outcome::kRejected);
}

TEST(GrammarMatcher, Utf8Ranges) {
  auto hiragana = MustCompile("root ::= [ぁ-ゟ]+ [0-9]?");
  ExpectOutcome(hiragana, "ひらがな", Outcome::kComplete);
  ExpectOutcome(hiragana, "ひらがな7", Outcome::kComplete);
  ExpectOutcome(hiragana, "カ", Outcome::kRejected);
  ExpectOutcome(hiragana, "\xE3\x81", Outcome::kPrefix);  // half of a code point

  auto negated = MustCompile(R"(root ::= [^a\n]+)");
  for (const char* ok : {"b", "\xC3\xA9", "\xF0\x9D\x84\x9E", "\xEF\xBF\xBF", "\x7F", "\xF4\x8F\xBF\xBF"}) {
    ExpectOutcome(negated, ok, Outcome::kComplete);
  }
  // a, newline, a surrogate (CESU), an overlong form, past U+10FFFF, a lone continuation byte.
  for (const char* bad : {"a", "\n", "\xED\xB0\x80", "\xE0\x80\xAF", "\xF4\x90\x80\x80", "\x80"}) {
    ExpectOutcome(negated, bad, Outcome::kRejected);
  }
  auto escapes = MustCompile(R"(root ::= [\u00e9-\u00ea] [\U0001F600-\U0001F64F] "\x41" .)");
  ExpectOutcome(escapes,
                "\xC3\xAA\xF0\x9F\x98\x80"
                "A\xE2\x82\xAC",
                Outcome::kComplete);
  ExpectOutcome(escapes, "\xC3\xAB", Outcome::kRejected);
  // Wide ranges across every UTF-8 length boundary.
  auto wide = MustCompile(R"(root ::= [\x70-\U00010010]*)");
  for (const char* ok :
       {"p", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x90"}) {
    ExpectOutcome(wide, ok, Outcome::kComplete);
  }
  for (const char* bad : {"o", "\xF0\x90\x80\x91", "\xED\xBF\xBF"})
    ExpectOutcome(wide, bad, Outcome::kRejected);
}

TEST(GrammarMatcher, RejectedInputLeavesStateUnchanged) {
  auto g = MustCompile(R"(root ::= "ab" "c"+)");
  GrammarMatcher m(g);
  EXPECT_TRUE(m.AcceptBytes("a"));
  EXPECT_FALSE(m.AcceptBytes("bx"));
  EXPECT_FALSE(m.accepting());
  EXPECT_TRUE(m.AcceptBytes("bc"));
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(m.CanContinue());
  auto fixed = MustCompile(R"(root ::= "done")");
  GrammarMatcher f(fixed);
  EXPECT_TRUE(f.AcceptBytes("done"));
  EXPECT_TRUE(f.accepting());
  EXPECT_FALSE(f.CanContinue());
}

TEST(GrammarMatcher, LongTextsKeepStateSmall) {
  auto g = MustCompile(testing::kJsonGbnf);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes("{\"a\": ["));
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(m.AcceptBytes("[1, \"xyz\"], "));
  EXPECT_LT(m.nodes().size(), 64u);
  ASSERT_TRUE(m.AcceptBytes("0]}"));
  EXPECT_TRUE(m.accepting());
}

// Regression (issue 15, a TGI regex `.***...` pinning a core): nested nullable repetition reaches equal
// stacks by many paths; before nodes were hash-consed (grammar/stack_walker.h) each was a distinct stack and
// one multi-byte piece cost exponential work in its length (16 bytes under 10 levels: over a second). With
// hash-consing the work per byte is bounded by the grammar, whatever the piece length or nesting.
TEST(GrammarMatcher, NestedNullableRepetitionIsLinearInThePiece) {
  std::string gbnf = "\"a\"";
  for (int level = 0; level < 12; ++level) gbnf = "( " + gbnf + " )*";
  auto g = MustCompile("root ::= " + gbnf);
  ASSERT_NE(g, nullptr);
  uint64_t work_16 = 0;
  for (size_t length : {16, 64}) {
    GrammarMatcher m(g);
    ASSERT_TRUE(m.AcceptBytes(std::string(length, 'a')));
    EXPECT_TRUE(m.accepting());
    EXPECT_EQ(m.tops().size(), 1u);
    if (length == 16) work_16 = m.work();
    EXPECT_LT(m.work(), 400 * length) << length << " bytes";  // ~100 per byte at 12 levels
  }
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes(std::string(64, 'a')));
  EXPECT_LT(m.work(), 5 * work_16);  // linear: 4x the bytes, about 4x the work
}

// Issue 15: following a token had no work bound of its own. Nested counted repetition keeps every way of
// counting the text alive, so the live stacks (and the work of the next token) grow with every `a`; past
// max_accept_work the call fails, leaves the state as it was, and the matcher stays over budget.
TEST(GrammarMatcher, AcceptWorkIsBounded) {
  auto expr = RegexToGbnf("(((((a){1,50}){1,50}){1,50}){1,50}){1,50}", false);
  ASSERT_TRUE(expr.ok());
  auto g = MustCompile("root ::= " + *expr);
  ASSERT_NE(g, nullptr);
  // Unbounded, the work of each 4-byte piece grows: 0.9 K, 14 K, 74 K, 253 K, ...
  std::vector<uint64_t> work;
  GrammarMatcher free_matcher(g, UINT64_MAX);
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = free_matcher.work();
    ASSERT_TRUE(free_matcher.AcceptBytes("aaaa"));
    work.push_back(free_matcher.work() - before);
  }
  EXPECT_GT(work[4], 100 * work[0]);
  EXPECT_FALSE(free_matcher.over_budget());
  // A bound between the third and fourth pieces' work stops the fourth, deterministically.
  const uint64_t bound = (work[2] + work[3]) / 2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    GrammarMatcher m(g, bound);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.AcceptBytes("aaaa")) << i;
    const std::vector<int32_t> tops = m.tops();
    const size_t nodes = m.nodes().size();
    EXPECT_FALSE(m.AcceptBytes("aaaa"));
    EXPECT_TRUE(m.over_budget());
    EXPECT_EQ(m.tops(), tops);
    EXPECT_EQ(m.nodes().size(), nodes);
    EXPECT_FALSE(m.CanContinue());
    EXPECT_FALSE(m.AcceptBytes("a"));  // sticky
    EXPECT_NE(m.over_budget_message().find("too costly to follow"), std::string::npos);
    EXPECT_NE(m.over_budget_message().find(std::to_string(bound)), std::string::npos);
  }
  // The default bound stops the same grammar within a few long tokens, each after a bounded amount of work.
  GrammarMatcher m(g);
  int accepted = 0;
  while (accepted < 20 && m.AcceptBytes(std::string(16, 'a'))) ++accepted;
  EXPECT_LT(accepted, 20);
  EXPECT_TRUE(m.over_budget());
  EXPECT_LE(m.work(), uint64_t(accepted + 1) * GrammarMatcher::kDefaultMaxAcceptWork);
  // A real grammar stays far below it: a long JSON text, 4 bytes at a time.
  auto json = MustCompile(testing::kJsonGbnf);
  GrammarMatcher j(json);
  std::string text = "{\"items\": [";
  for (int i = 0; i < 500; ++i)
    text += "{\"id\": " + std::to_string(i) + ", \"name\": \"n\\u00e9\", \"ok\": true}, ";
  text += "null]}";
  uint64_t largest = 0;
  for (size_t i = 0; i < text.size(); i += 4) {
    const uint64_t before = j.work();
    ASSERT_TRUE(j.AcceptBytes(text.substr(i, 4)));
    largest = std::max(largest, j.work() - before);
  }
  EXPECT_TRUE(j.accepting());
  EXPECT_LT(largest, GrammarMatcher::kDefaultMaxAcceptWork / 1000);
}

struct BadGrammar {
  const char* text;
  const char* message;  // expected substring
};

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  const BadGrammar cases[] = {
      {"root ::= \"abc", "line 1, column 10: unterminated string literal"},
      {"root ::= foo", "line 1, column 10: undefined rule 'foo'"},
      {"root ::= [b-a]", "line 1, column 13: character range ends before it starts"},
      {"root ::= *", "line 1, column 10: '*' must follow a symbol"},
      {"root ::= (\"a\"", "line 1, column 14: expected ')'"},
      {"root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'"},
      {"root : \"a\"", "line 1, column 6: expected '::=' after rule name 'root'"},
      {"root ::= \"a\"\n\n  item ::= \"b\" )", "line 3, column 16: unexpected ')'"},
      {"# comment\nroot ::= \"a\"\nroot ::= \"b\"", "line 3, column 1: rule 'root' is defined twice"},
      {"root ::= \"a\"{3,2}", "line 1, column 13: repetition {m,n} with n < m"},
      {"root ::= \"a\"{3", "line 1, column 15: expected '}'"},
      {"root ::= \"a\"{20000}", "repetition bound above 10000"},
      {"root ::= \"\\x4\"", "line 1, column 11: expected 2 hex digits"},
      {"root ::= [\\uD800]", "not a Unicode scalar value"},
      {"item ::= \"a\"", "grammar has no 'root' rule"},
      {"root ::= \"\xC3\"", "line 1, column 11: invalid UTF-8"},
      {"root ::= é", "line 1, column 10: unexpected 'é'"},
      {"root ::= root \"a\"", "left recursion: rule 'root'"},
      {"root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]", "left recursion: rule 'expr'"},
      {"root ::= a\na ::= b? a \"x\"\nb ::= \"b\"", "left recursion: rule 'a'"},
  };
  for (const BadGrammar& c : cases) {
    auto g = CompiledGrammar::FromGbnf(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(c.message), std::string::npos)
        << "grammar: " << c.text << "\nerror: " << g.status().message() << "\nwanted: " << c.message;
  }
}

TEST(GbnfParser, SyntaxDetails) {
  // Newlines inside parentheses and after '|', comments everywhere, empty alternatives, names with digits
  // and dashes and capitals (llama.cpp's C grammar uses dataType).
  auto g = MustCompile(R"(
# leading comment
root ::= | greeting-2 | # trailing comment
  ( "x"
      "y" )
greeting-2 ::= dataType "!"   # more
dataType ::= "hi" | "hey"
)");
  for (const char* ok : {"hi!", "hey!", "xy", ""}) ExpectOutcome(g, ok, Outcome::kComplete);
  ExpectOutcome(g, "x y", Outcome::kRejected);
  auto escapes = MustCompile(R"(root ::= "\"\\\t\r\n\[\]" [\]\[-] [-a] [a-])");
  ExpectOutcome(escapes, "\"\\\t\r\n[]]-a", Outcome::kComplete);
  ExpectOutcome(escapes, "\"\\\t\r\n[][a-", Outcome::kComplete);
  // An empty class matches nothing, a negated empty class anything.
  auto empty = MustCompile(R"(root ::= [] | [^] "!")");
  ExpectOutcome(empty, "z!", Outcome::kComplete);
  ExpectOutcome(empty, "!", Outcome::kPrefix);
}

}  // namespace
}  // namespace lockstep::grammar
