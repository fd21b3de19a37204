// End-to-end: llama.cpp's DRY fields on a real `lockstep serve` with the tiny model. On a repetitive prompt,
// greedy text repeats itself without DRY and not with it (no generated token extends a repeat of the text's
// suffix longer than dry_allowed_length), on /completion and the OpenAI routes; generation_settings and
// /props report the fields; bad values are 400s naming the field on every route.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "e2e_util.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

class DryRoutesTest : public SharedServerTest<DryRoutesTest> {
 protected:
  static constexpr const char* kRepetitive =
      "one two three four one two three four one two three four one two";

  static nlohmann::json DryComplete(const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/completion", body);
    EXPECT_EQ(r.status, 200) << body.dump() << " → " << r.body;
    return r.Json();
  }
  static std::vector<int32_t> DryPromptTokens(const std::string& text) {
    const HttpResponse r = Post(port(), "/tokenize", {{"content", text}, {"add_special", true}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["tokens"].get<std::vector<int32_t>>();
  }
  // How many generated tokens (those from `first` on) extend a repeat of `length` or more tokens: the
  // `length` tokens before them, and they, appeared earlier in `tokens` in that order.
  static int RepeatExtensions(const std::vector<int32_t>& tokens, size_t first, size_t length) {
    int count = 0;
    for (size_t i = std::max(first, length); i < tokens.size(); ++i) {
      for (size_t j = length; j < i; ++j) {
        if (std::equal(tokens.begin() + std::ptrdiff_t(j - length), tokens.begin() + std::ptrdiff_t(j + 1),
                       tokens.begin() + std::ptrdiff_t(i - length))) {
          ++count;
          break;
        }
      }
    }
    return count;
  }
};

TEST_F(DryRoutesTest, DryStopsGreedyTextFromRepeatingItself) {
  const nlohmann::json plain_body = {
      {"prompt", kRepetitive}, {"n_predict", 40}, {"temperature", 0}, {"return_tokens", true}};
  const nlohmann::json plain = DryComplete(plain_body);
  nlohmann::json dry_body = plain_body;
  // A large multiplier: every token that would extend a repeat of 2 tokens or more is out of reach. The
  // breaker (a character the text never holds) replaces the defaults, so nothing stops a match.
  dry_body.update({{"dry_multiplier", 1000.0},
                   {"dry_base", 1.75},
                   {"dry_allowed_length", 2},
                   {"dry_penalty_last_n", -1},
                   {"dry_sequence_breakers", {"\u2603"}}});
  const nlohmann::json dry = DryComplete(dry_body);
  EXPECT_NE(dry["content"], plain["content"]) << plain["content"];

  const std::vector<int32_t> prompt = DryPromptTokens(kRepetitive);
  const auto all_tokens = [&](const nlohmann::json& j) {
    std::vector<int32_t> tokens = prompt;
    for (const auto& t : j["tokens"]) tokens.push_back(t.get<int32_t>());
    return tokens;
  };
  const std::vector<int32_t> plain_tokens = all_tokens(plain), dry_tokens = all_tokens(dry);
  ASSERT_EQ(plain_tokens.size(), prompt.size() + 40) << plain.dump();
  ASSERT_EQ(dry_tokens.size(), prompt.size() + 40) << dry.dump();
  // Without DRY the tiny model's greedy text repeats (else this test could not fail); with it, no token
  // extends a repeat of 2.
  EXPECT_GT(RepeatExtensions(plain_tokens, prompt.size(), 2), 0) << plain["content"];
  EXPECT_EQ(RepeatExtensions(dry_tokens, prompt.size(), 2), 0) << dry["content"];
  // Greedy with DRY is deterministic.
  EXPECT_EQ(DryComplete(dry_body)["content"], dry["content"]);
  // Off (multiplier 0), the other DRY fields change nothing.
  nlohmann::json off_body = dry_body;
  off_body["dry_multiplier"] = 0;
  EXPECT_EQ(DryComplete(off_body)["content"], plain["content"]);
  // A window of 0 is off too.
  nlohmann::json no_window = dry_body;
  no_window["dry_penalty_last_n"] = 0;
  EXPECT_EQ(DryComplete(no_window)["content"], plain["content"]);

  // The OpenAI routes take the same fields (llama.cpp's server passes them through).
  const nlohmann::json openai_plain = {{"prompt", kRepetitive}, {"max_tokens", 40}, {"temperature", 0}};
  nlohmann::json openai_dry = openai_plain;
  openai_dry.update({{"dry_multiplier", 1000.0}, {"dry_sequence_breakers", {"\u2603"}}});
  const HttpResponse a = Post(port(), "/v1/completions", openai_plain);
  const HttpResponse b = Post(port(), "/v1/completions", openai_dry);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(a.Json()["choices"][0]["text"], plain["content"]);
  EXPECT_EQ(b.Json()["choices"][0]["text"], dry["content"]);
  const nlohmann::json messages = {{{"role", "user"}, {"content", kRepetitive}}};
  const HttpResponse chat_plain =
      Post(port(), "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 40}, {"temperature", 0}});
  const HttpResponse chat_dry = Post(port(), "/v1/chat/completions",
                                     {{"messages", messages},
                                      {"max_tokens", 40},
                                      {"temperature", 0},
                                      {"dry_multiplier", 1000.0},
                                      {"dry_sequence_breakers", {"\u2603"}}});
  ASSERT_EQ(chat_plain.status, 200) << chat_plain.body;
  ASSERT_EQ(chat_dry.status, 200) << chat_dry.body;
  EXPECT_NE(chat_dry.Json()["choices"][0]["message"]["content"],
            chat_plain.Json()["choices"][0]["message"]["content"]);
}

TEST_F(DryRoutesTest, GenerationSettingsAndPropsReportDry) {
  const nlohmann::json j = DryComplete({{"prompt", "x"},
                                        {"n_predict", 2},
                                        {"dry_multiplier", 0.8},
                                        {"dry_base", 0.5},  // below 1: llama.cpp's server reads 1.75
                                        {"dry_allowed_length", 3},
                                        {"dry_penalty_last_n", 128},
                                        {"dry_sequence_breakers", {"\n", "Bob:"}}});
  const nlohmann::json& s = j["generation_settings"];
  EXPECT_FLOAT_EQ(s["dry_multiplier"].get<float>(), 0.8f) << s;
  EXPECT_EQ(s["dry_base"], 1.75) << s;
  EXPECT_EQ(s["dry_allowed_length"], 3) << s;
  EXPECT_EQ(s["dry_penalty_last_n"], 128) << s;
  EXPECT_EQ(s["dry_sequence_breakers"], nlohmann::json({"\n", "Bob:"})) << s;
  const std::vector<std::string> samplers = s["samplers"].get<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(samplers.begin(), samplers.end()).count("dry"), 1u) << s;
  // /props: llama.cpp's defaults.
  const HttpResponse props = Request(port(), "GET", "/props");
  ASSERT_EQ(props.status, 200) << props.body;
  const nlohmann::json d =
      props.Json()["default_generation_settings"]["params"];  // a copy: Json() is a temporary
  EXPECT_EQ(d["dry_multiplier"], 0.0) << d;
  EXPECT_EQ(d["dry_base"], 1.75) << d;
  EXPECT_EQ(d["dry_allowed_length"], 2) << d;
  EXPECT_EQ(d["dry_penalty_last_n"], -1) << d;
  EXPECT_EQ(d["dry_sequence_breakers"], nlohmann::json({"\n", ":", "\"", "*"})) << d;
}

TEST_F(DryRoutesTest, BadDryFieldsAre400sNamingTheField) {
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"dry_multiplier", "x"}}, "dry_multiplier"},
      {{{"dry_multiplier", -1}}, "dry_multiplier"},
      {{{"dry_base", true}}, "dry_base"},
      {{{"dry_allowed_length", -1}}, "dry_allowed_length"},
      {{{"dry_penalty_last_n", -2}}, "dry_penalty_last_n"},
      {{{"dry_penalty_last_n", 0.5}}, "dry_penalty_last_n"},
      {{{"dry_sequence_breakers", "\n"}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", nlohmann::json::array()}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", {"\n", nullptr}}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", nlohmann::json(33, ":")}}, "dry_sequence_breakers"},
  };
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}}};
  for (const auto& [fields, param] : cases) {
    const std::pair<std::string, nlohmann::json> routes[] = {
        {"/completion", {{"prompt", "x"}, {"n_predict", 1}}},
        {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}},
        {"/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}}},
    };
    for (auto [path, body] : routes) {
      body.update(fields);
      const HttpResponse r = Post(port(), path, body);
      EXPECT_EQ(r.status, 400) << path << " " << body.dump() << " → " << r.body;
      const nlohmann::json error = r.Json()["error"];
      EXPECT_EQ(error["param"], param) << path << " " << body.dump() << " → " << r.body;
      EXPECT_NE(error["message"].get<std::string>().find(param), std::string::npos) << r.body;
    }
  }
}

}  // namespace
}  // namespace lockstep::server::testing
