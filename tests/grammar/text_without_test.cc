// GbnfBuilder::AddTextWithout: the rule accepts exactly the texts that do not contain the stop string, for
// stops with and without self-overlap (borders) and with multi-byte characters: every text of up to 7
// characters over the stop's own characters and one other, checked against std::string::find.
#include <gtest/gtest.h>

#include <functional>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_builder.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

TEST(TextWithout, AcceptsExactlyTheTextsWithoutTheStop) {
  for (const std::string stop : {"<|\"|>", "aab", "abab", "</｜DSML｜parameter>", "x"}) {
    GbnfBuilder b("p-");
    const std::string rule = b.AddTextWithout("text", stop);
    auto g = CompiledGrammar::FromGbnf("root ::= " + rule + "\n" + b.Text());
    ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << b.Text();
    std::vector<std::string> alphabet = {"y"};
    for (size_t p = 0; p < stop.size();) {
      std::string c;
      utf8::Append(utf8::DecodeAt(stop, &p), &c);
      if (std::find(alphabet.begin(), alphabet.end(), c) == alphabet.end()) alphabet.push_back(c);
    }
    const size_t max_len = alphabet.size() > 6 ? 4 : 7;
    int checked = 0;
    std::function<void(const std::string&, size_t)> all = [&](const std::string& text, size_t len) {
      GrammarMatcher m(*g);
      const bool accepted = m.AcceptBytes(text) && m.accepting();
      ASSERT_EQ(accepted, text.find(stop) == std::string::npos) << stop << ": " << text;
      ++checked;
      if (len == max_len) return;
      for (const std::string& c : alphabet) all(text + c, len + 1);
    };
    all("", 0);
    // The stop itself inside a longer text.
    GrammarMatcher m(*g);
    EXPECT_FALSE(m.AcceptBytes("yy" + stop + "yy") && m.accepting()) << stop;
    EXPECT_GT(checked, 100) << stop;
  }
}

}  // namespace
}  // namespace lockstep::grammar
