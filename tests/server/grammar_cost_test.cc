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
  for (int i = 0; i < 99; ++i) nested_ab = "(" + nested_ab + ")*";  // 100 groups: the regex limit
  struct Case {
    std::string pattern;
    std::string check;  // ECMAScript regex the (possibly cut short) text must match
  };
  const Case cases[] = {
      {"x" + std::string(1000, '*') + "y", "x*y?"},
      {"a" + dots + "b", "(a.*)?"},
      {nested_ab + "c", "(ab)*(a|c)?"},  // `(ab)` under 99 levels of `( ... )*`
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

std::string Repeated(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// Issue 15: 200 nested levels of `(...){1,50}` took 7-14 s and 2.6 GB to compile. Every entry point of a
// grammar refuses what compiles past the size bound (grammar/compiled_grammar.h, 16 M entries) with a 400
// (TGI: 422) naming the field and the limit, and the server still serves.
TEST_F(GrammarCostTest, GrammarsTooLargeToCompileAreRefusedNamingTheField) {
  const std::string gbnf = "root ::= " + Repeated("(", 200) + "\"a\"" + Repeated("){1,50}", 200) + "\n";
  std::string regex = "a";  // at the regex nesting limit (100 groups), 47 M entries
  for (int i = 0; i < 100; ++i) regex = "(" + regex + "){1,50}";
  const nlohmann::json pattern_schema = {{"type", "object"},
                                         {"properties", {{"code", {{"type", "string"}, {"pattern", regex}}}}},
                                         {"required", {"code"}}};
  const nlohmann::json tool = {{"type", "function"},
                               {"function", {{"name", "lookup"}, {"parameters", pattern_schema}}}};
  const nlohmann::json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
  struct Case {
    std::string path;
    nlohmann::json body;
    std::string param;
  };
  std::vector<Case> cases = {
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}, {"grammar", gbnf}}, "grammar"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}, {"guided_regex", regex}}, "guided_regex"},
      {"/v1/completions",
       {{"prompt", "x"}, {"max_tokens", 4}, {"structured_outputs", {{"regex", regex}}}},
       "structured_outputs.regex"},
      {"/v1/completions",
       {{"prompt", "x"}, {"max_tokens", 4}, {"json_schema", pattern_schema}},
       "json_schema"},
  };
  nlohmann::json rf = chat;
  rf["response_format"] = {{"type", "json_schema"},
                           {"json_schema", {{"name", "s"}, {"schema", pattern_schema}}}};
  cases.push_back({"/v1/chat/completions", rf, "response_format.json_schema.schema"});
  nlohmann::json tools = chat;
  tools["tools"] = nlohmann::json::array({tool});  // not {tool}: clang takes that for a copy of tool
  tools["tool_choice"] = "required";
  cases.push_back({"/v1/chat/completions", tools, "tool_choice"});
  for (const Case& c : cases) {
    const HttpResponse r = Post(port(), c.path, c.body);
    EXPECT_EQ(r.status, 400) << c.param << ": " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], c.param) << r.body;
    const std::string message = r.Json()["error"]["message"].is_string() ? r.Json()["error"]["message"] : "";
    EXPECT_EQ(message.rfind(c.param + ": grammar too large to compile", 0), 0u) << r.body;
    EXPECT_NE(message.find("more than 16000000 parse-table entries"), std::string::npos) << r.body;
  }
  for (const nlohmann::json& grammar : {nlohmann::json{{"type", "regex"}, {"value", regex}},
                                        nlohmann::json{{"type", "json"}, {"value", pattern_schema}}}) {
    const HttpResponse tgi =
        Post(port(), "/generate",
             {{"inputs", "hi"}, {"parameters", {{"grammar", grammar}, {"max_new_tokens", 4}}}});
    EXPECT_EQ(tgi.status, 422) << tgi.body;
    EXPECT_NE(tgi.body.find("grammar too large to compile"), std::string::npos) << tgi.body;
    EXPECT_NE(tgi.body.find("16000000"), std::string::npos) << tgi.body;
  }
  const HttpResponse ok = Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// Nesting deep enough to overflow a parser's stack (GBNF groups: ~30000 levels; a regex: ~10^5; a schema
// sent as a JSON string, which the body's nesting limit does not see, has the same limit of its own) is a 400
// naming the limit, not a crash.
TEST_F(GrammarCostTest, DeepNestingIsRefusedNotACrash) {
  std::string schema_text;
  for (int i = 0; i < 100'000; ++i) schema_text += R"({"type":"array","items":)";
  schema_text += R"({"type":"string"})" + Repeated("}", 100'000);
  const struct {
    nlohmann::json body;
    std::string param;
    std::string message;
  } cases[] = {
      {{{"prompt", "x"},
        {"grammar", "root ::= " + Repeated("(", 100'000) + "\"a\"" + Repeated(")", 100'000)}},
       "grammar",
       "grammar: grammar line 1, column 510: groups nested more than 500 deep"},
      {{{"prompt", "x"}, {"guided_regex", Repeated("(", 100'000) + "a" + Repeated(")", 100'000)}},
       "guided_regex",
       "guided_regex: regex at character 101: groups nested more than 100 deep"},
      {{{"prompt", "x"}, {"json_schema", schema_text}},
       "json_schema",
       "json_schema nests arrays or objects deeper than 128 levels"},
  };
  for (const auto& c : cases) {
    const HttpResponse r = Post(port(), "/v1/completions", c.body);
    EXPECT_EQ(r.status, 400) << r.body.substr(0, 200);
    EXPECT_EQ(r.Json()["error"]["param"], c.param) << r.body.substr(0, 200);
    EXPECT_EQ(r.Json()["error"]["message"], c.message) << r.body.substr(0, 200);
  }
  const HttpResponse ok = Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lockstep::server::testing
