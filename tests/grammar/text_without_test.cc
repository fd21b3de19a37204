// GbnfBuilder::AddTextWithout: the rule accepts exactly the texts that contain none of the stop strings, for
// one stop and several (sharing prefixes, one inside another, overlapping), with and without self-overlap
// (borders) and with multi-byte characters: every text of up to 7 characters over the stops' own characters
// and one other, checked against std::string::find; excluded characters and reset units (JSON's escapes).
#include <gtest/gtest.h>

#include <functional>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_builder.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

bool Contains(const std::string& text, const std::vector<std::string>& stops) {
  for (const std::string& stop : stops) {
    if (text.find(stop) != std::string::npos) return true;
  }
  return false;
}

TEST(TextWithout, AcceptsExactlyTheTextsWithoutTheStops) {
  const std::vector<std::vector<std::string>> cases = {
      {"<|\"|>"},
      {"aab"},
      {"abab"},
      {"</｜DSML｜parameter>"},
      {"x"},
      // Qwen3-Coder's tags: shared prefixes; one stop inside another; overlapping ones.
      {"</p>", "<p=", "</f>"},
      {"abc", "b"},
      {"ab", "bc", "ca"},
      {"aab", "ab"},
      {"<｜a", "｜b"}};
  for (const std::vector<std::string>& stops : cases) {
    GbnfBuilder b("p-");
    const std::string rule = b.AddTextWithout("text", stops);
    auto g = CompiledGrammar::FromGbnf("root ::= " + rule + "\n" + b.Text());
    ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << b.Text();
    std::vector<std::string> alphabet = {"y"};
    for (const std::string& stop : stops) {
      for (size_t p = 0; p < stop.size();) {
        std::string c;
        utf8::Append(utf8::DecodeAt(stop, &p), &c);
        if (std::find(alphabet.begin(), alphabet.end(), c) == alphabet.end()) alphabet.push_back(c);
      }
    }
    const size_t max_len = alphabet.size() > 6 ? 4 : 7;
    int checked = 0;
    std::function<void(const std::string&, size_t)> all = [&](const std::string& text, size_t len) {
      GrammarMatcher m(*g);
      const bool accepted = m.AcceptBytes(text) && m.accepting();
      ASSERT_EQ(accepted, !Contains(text, stops)) << stops[0] << ": " << text;
      ++checked;
      if (len == max_len) return;
      for (const std::string& c : alphabet) all(text + c, len + 1);
    };
    all("", 0);
    // Each stop inside a longer text.
    for (const std::string& stop : stops) {
      GrammarMatcher m(*g);
      EXPECT_FALSE(m.AcceptBytes("yy" + stop + "yy") && m.accepting()) << stop;
    }
    EXPECT_GT(checked, 100) << stops[0];
  }
}

TEST(TextWithout, ExcludedCharactersAndResetUnits) {
  // JSON's string body: no raw quote or backslash, escapes anywhere, and no "</t>" written out.
  GbnfBuilder b("p-");
  const std::string rule = b.AddTextWithout("text", {"</t>"}, "\"\\\\", "[\\\\] [\"\\\\/n]");
  auto g = CompiledGrammar::FromGbnf("root ::= " + rule + "\n" + b.Text());
  ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << b.Text();
  auto accepts = [&](std::string_view text) {
    GrammarMatcher m(*g);
    return m.AcceptBytes(text) && m.accepting();
  };
  EXPECT_TRUE(accepts(R"(a < b </x> <\/t> \" \\ \n)"));
  EXPECT_TRUE(accepts(R"(<\n/t>)"));
  EXPECT_FALSE(accepts(R"(a </t>)"));
  EXPECT_FALSE(accepts(R"(a<\n</t>)"));
  EXPECT_FALSE(accepts(R"(a"b)"));
  EXPECT_FALSE(accepts(R"(a\b)"));
  EXPECT_FALSE(accepts(R"(a\)"));
}

}  // namespace
}  // namespace lockstep::grammar
