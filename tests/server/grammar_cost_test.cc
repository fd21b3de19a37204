// Regex and GBNF grammars that once cost seconds to minutes of CPU per request (issue 15: a 447-byte TGI
// body with `.****...` took 35 s on a 49k vocabulary) answer quickly with constrained output, over the TGI
// and OpenAI routes. The server runs a tiny random-weight model with the StarCoder vocabulary (49152 tokens,
// the size of SmolLM2's). What stays costly is refused with a 400 by the masker's work bound. Deadlines are
// the test client's (60 s per request, far above what these take on any machine now: a bounded amount of
// grammar work each); the work counts themselves are asserted by the grammar unit tests.
#include <gtest/gtest.h>

#include <regex>

#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

class GrammarCostTest : public SharedServerTest<GrammarCostTest> {
 public:
  static std::string Model() {
    if (::lockstep::testing::TestDataDir().empty()) return TinyModel();  // the tests skip
    const std::string path =
        ::lockstep::testing::MakeTempDir("lockstep-grammar-cost") + "/tiny-starcoder.gguf";
    const std::string make = ::lockstep::testing::LockstepBinary() +
                             " make-model --shape tiny-256 --vocab-from " +
                             ::lockstep::testing::TestDataPath("vocab/ggml-vocab-starcoder.gguf") + " -o " +
                             path + " > /dev/null 2>&1";
    EXPECT_EQ(::lockstep::testing::RunCommand(make), 0) << make;
    return path;
  }

 protected:
  void SetUp() override {
    LOCKSTEP_REQUIRE_TESTDATA();
    SharedServerTest::SetUp();
  }
};

// The reproducer's pattern (tgi_regex_dfa_slow.json): stacked quantifiers after `h` and `.`.
std::string ReproducerPattern() {
  return "[a-z]{6,{{{{{{s{{{{{hhhhhhhrepetition_penhhhhhhhhhhh" + std::string(14, '*') + "." +
         std::string(135, '*') + std::string(90, 'h') + std::string(35, '{') + std::string(37, 's') +
         std::string(10, '{') + ".{{{5}";
}

TEST_F(GrammarCostTest, TgiReproducerAnswers) {
  const HttpResponse r = Post(port(), "/generate",
                              {{"inputs", "hi"},
                               {"parameters",
                                {{"grammar", {{"type", "regex"}, {"value", ReproducerPattern()}}},
                                 {"best_of", 2},
                                 {"do_sample", true},
                                 {"max_new_tokens", 12}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  // `[a-z]` then the literal "{6,{{{{{{s{{{{{hhhhhhhrepetition_pen" + 10 'h' (`{6,{` is no count), then `h*`,
  // `.*`, ...: 12 tokens end inside or after that literal.
  const std::string text = r.Json()["generated_text"];
  const std::string literal = "{6,{{{{{{s{{{{{hhhhhhhrepetition_pen" + std::string(10, 'h');
  ASSERT_FALSE(text.empty());
  EXPECT_TRUE(text[0] >= 'a' && text[0] <= 'z') << text;
  const std::string rest = text.substr(1);
  EXPECT_EQ(rest.substr(0, literal.size()), literal.substr(0, rest.size())) << text;
}

TEST_F(GrammarCostTest, StackedAndNestedQuantifiersAnswerWithMatchingText) {
  std::string dots, nested = ".*", nested_ab = "(ab)";
  for (int i = 0; i < 200; ++i) dots += ".*";
  for (int i = 0; i < 100; ++i) nested = "(" + nested + ")*";
  for (int i = 0; i < 100; ++i) nested_ab = "(" + nested_ab + ")*";
  struct Case {
    std::string pattern;
    std::string check;  // ECMAScript regex the (possibly cut short) text must match
  };
  const Case cases[] = {
      {"x" + std::string(1000, '*') + "y", "x*y?"},
      {"a" + dots + "b", "(a.*)?"},
      {nested_ab + "c", "(ab)*(a|c)?"},  // `(ab)` under 100 levels of `( ... )*`
      {"[a-z]{1000}", "[a-z]*"},
      {"((([a-c]+)+)+)+-", "[a-c]*-?"},
  };
  for (const Case& c : cases) {
    const HttpResponse r =
        Post(port(), "/v1/completions",
             {{"prompt", "x"}, {"seed", 3}, {"max_tokens", 16}, {"guided_regex", c.pattern}});
    ASSERT_EQ(r.status, 200) << c.pattern.substr(0, 40) << ": " << r.body;
    const std::string text = r.Json()["choices"][0]["text"];
    EXPECT_TRUE(std::regex_match(text, std::regex(c.check))) << c.pattern.substr(0, 40) << " gave " << text;
  }
  // The same patterns through the other regex fields: structured_outputs and a JSON schema "pattern".
  const HttpResponse so =
      Post(port(), "/v1/completions",
           {{"prompt", "x"}, {"max_tokens", 8}, {"structured_outputs", {{"regex", nested}}}});
  EXPECT_EQ(so.status, 200) << so.body;
  nlohmann::json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 8}};
  const nlohmann::json schema = {{"type", "string"}, {"pattern", "a" + dots}};
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}};
  const HttpResponse r = Post(port(), "/v1/chat/completions", chat);
  EXPECT_EQ(r.status, 200) << r.body;
}

// What no rewriting makes cheap is refused up front by the masker's work bound (grammar/token_masker.h):
// a 400 (TGI: 422) naming the field and the limit, after a bounded amount of work, and at once when the same
// grammar comes again (it stays cached as refused).
TEST_F(GrammarCostTest, CostlyGrammarsAreRefusedNamingTheField) {
  std::string alternatives;
  for (int i = 0; i < 100; ++i) alternatives += "(.*|x)";
  for (int attempt = 0; attempt < 2; ++attempt) {
    const HttpResponse r =
        Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 8}, {"guided_regex", alternatives}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], "guided_regex") << r.body;
    EXPECT_NE(r.body.find("too costly"), std::string::npos) << r.body;
  }
  const HttpResponse tgi =
      Post(port(), "/generate",
           {{"inputs", "hi"},
            {"parameters",
             {{"grammar", {{"type", "regex"}, {"value", "a" + alternatives}}}, {"max_new_tokens", 8}}}});
  EXPECT_EQ(tgi.status, 422) << tgi.body;
  EXPECT_NE(tgi.body.find("too costly"), std::string::npos) << tgi.body;
  // The server still serves.
  const HttpResponse ok = Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lockstep::server::testing
