// Server-wide sampling defaults (server/sampling_defaults.h): the flags' checks, and on a real `lockstep
// serve --temp 0 --top-k 7 --min-p 0.2 --dry-multiplier 1000 --dry-sequence-breaker ☃` that requests leaving
// the fields out get them on llama.cpp's and the OpenAI routes, that a request's own fields win, and that
// /props reports them.
#include "server/sampling_defaults.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

// FromFlags' error message for the flags `set` sets ("" when it accepts them).
template <typename Set>
std::string DefaultsError(const Set& set, const std::vector<std::string>& breakers = {}) {
  SamplingDefaults flags;
  set(flags);
  auto r = SamplingDefaults::FromFlags(std::move(flags), breakers);
  return r.ok() ? "" : r.status().message();
}

TEST(SamplingDefaults, OutOfRangeValuesNameTheFlag) {
  EXPECT_NE(DefaultsError([](SamplingDefaults& d) { d.top_p = 0.0f; }).find("--top-p must be"),
            std::string::npos);
  EXPECT_NE(DefaultsError([](SamplingDefaults& d) { d.temperature = std::nanf(""); }).find("--temp must be"),
            std::string::npos);
  EXPECT_NE(DefaultsError([](SamplingDefaults& d) { d.top_k = -1; }).find("--top-k must be"),
            std::string::npos);
  EXPECT_NE(DefaultsError([](SamplingDefaults& d) { d.repetition_penalty = 0.0f; }).find("--repeat-penalty"),
            std::string::npos);
  EXPECT_NE(DefaultsError([](SamplingDefaults& d) { d.dry_base = 0.5f; }).find("--dry-base must be"),
            std::string::npos);
  EXPECT_NE(
      DefaultsError([](SamplingDefaults& d) { d.dry_penalty_last_n = -2; }).find("--dry-penalty-last-n"),
      std::string::npos);
  EXPECT_NE(
      DefaultsError([](SamplingDefaults&) {}, std::vector<std::string>(33, "x")).find("at most 32 times"),
      std::string::npos);
  EXPECT_EQ(DefaultsError([](SamplingDefaults& d) {
              d.temperature = 0.7f;
              d.top_k = 20;
              d.top_p = 0.8f;
              d.min_p = 0.0f;
            }),
            "");
}

TEST(SamplingDefaults, BreakersReplaceLlamaCppsAndNoneClearsThem) {
  EXPECT_EQ(SamplingDefaults::FromFlags({}, {})->dry_breakers, DefaultDryBreakers());
  EXPECT_EQ(SamplingDefaults::FromFlags({}, {"Bob:", ""})->dry_breakers, std::vector<std::string>{"Bob:"});
  EXPECT_TRUE(SamplingDefaults::FromFlags({}, {"none"})->dry_breakers.empty());
  // Cut at 40 bytes, not inside a character (as the request field).
  const std::string long_breaker = std::string(39, 'a') + "\u00e9";
  EXPECT_EQ(SamplingDefaults::FromFlags({}, {long_breaker})->dry_breakers[0], std::string(39, 'a'));
}

TEST(SamplingDefaults, ApplyToSetsOnlyTheSetValues) {
  SamplingParams s;
  s.temperature = 0.8f;
  s.top_k = 40;
  SamplingDefaults d;
  d.top_k = 7;
  d.dry_multiplier = 0.5f;
  d.ApplyTo(s);
  EXPECT_EQ(s.temperature, 0.8f);
  EXPECT_EQ(s.top_k, 7);
  EXPECT_EQ(s.dry.multiplier, 0.5f);
  EXPECT_EQ(s.dry.allowed_length, DryParams().allowed_length);
}

TEST(SamplingDefaults, ServeRefusesABadFlagBeforeLoading) {
  std::string out;
  const int rc = ::lockstep::testing::RunCommand(
      ::lockstep::testing::LockstepBinary() + " serve -m /nonexistent.gguf --top-p 0 2>&1", &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("--top-p must be above 0 and at most 1, got 0\n"), std::string::npos) << out;
}

class SamplingDefaultsRoutesTest : public SharedServerTest<SamplingDefaultsRoutesTest> {
 public:
  static std::vector<std::string> Args() {
    return {"-t",
            "1",
            "--temp",
            "0",
            "--top-k",
            "7",
            "--min-p",
            "0.2",
            "--dry-multiplier",
            "1000",
            "--dry-sequence-breaker",
            "\u2603"};
  }

 protected:
  static constexpr const char* kRepetitive =
      "one two three four one two three four one two three four one two";

  static nlohmann::json Completion(const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/completion", body);
    EXPECT_EQ(r.status, 200) << body.dump() << " -> " << r.body;
    return r.Json();
  }
  static std::string OpenAiText(const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << body.dump() << " -> " << r.body;
    const nlohmann::json j = r.Json();
    return j["choices"][0]["text"].get<std::string>();
  }
};

TEST_F(SamplingDefaultsRoutesTest, PropsAndGenerationSettingsReportTheServersDefaults) {
  const HttpResponse props = Request(port(), "GET", "/props");
  ASSERT_EQ(props.status, 200) << props.body;
  const nlohmann::json d = props.Json()["default_generation_settings"]["params"];
  EXPECT_EQ(d["temperature"], 0.0) << d;
  EXPECT_EQ(d["top_k"], 7) << d;
  EXPECT_FLOAT_EQ(d["min_p"].get<float>(), 0.2f) << d;
  EXPECT_EQ(d["top_p"], 0.949999988079071) << d;  // llama.cpp's 0.95 (a float), not set
  EXPECT_EQ(d["dry_multiplier"], 1000.0) << d;
  EXPECT_EQ(d["dry_sequence_breakers"], nlohmann::json({"\u2603"})) << d;

  const nlohmann::json plain = Completion({{"prompt", "x"}, {"n_predict", 1}});
  const nlohmann::json s = plain["generation_settings"];
  EXPECT_EQ(s["temperature"], 0.0) << s;
  EXPECT_EQ(s["top_k"], 7) << s;
  EXPECT_EQ(s["dry_multiplier"], 1000.0) << s;
  // A request's own fields win.
  const nlohmann::json own = Completion({{"prompt", "x"},
                                         {"n_predict", 1},
                                         {"temperature", 0.5},
                                         {"top_k", 3},
                                         {"dry_multiplier", 0},
                                         {"dry_sequence_breakers", {"\n"}}})["generation_settings"];
  EXPECT_EQ(own["temperature"], 0.5) << own;
  EXPECT_EQ(own["top_k"], 3) << own;
  EXPECT_EQ(own["dry_multiplier"], 0.0) << own;
  EXPECT_EQ(own["dry_sequence_breakers"], nlohmann::json({"\n"})) << own;
}

TEST_F(SamplingDefaultsRoutesTest, RequestsLeavingFieldsOutSampleWithTheDefaults) {
  // The server's temperature 0 makes a bare request greedy, and its DRY defaults keep the tiny model's greedy
  // text from repeating: a bare request equals one that spells those values out, and differs from one that
  // turns DRY off (which repeats, as DryRoutesTest shows), on both routes.
  const nlohmann::json bare = {{"prompt", kRepetitive}, {"n_predict", 40}};
  nlohmann::json spelled = bare;
  spelled.update({{"temperature", 0},
                  {"top_k", 7},
                  {"min_p", 0.2},
                  {"dry_multiplier", 1000.0},
                  {"dry_sequence_breakers", {"\u2603"}}});
  nlohmann::json no_dry = spelled;
  no_dry["dry_multiplier"] = 0;
  const std::string bare_text = Completion(bare)["content"].get<std::string>();
  EXPECT_EQ(bare_text, Completion(bare)["content"]);  // greedy: deterministic
  EXPECT_EQ(bare_text, Completion(spelled)["content"]);
  EXPECT_NE(bare_text, Completion(no_dry)["content"]);

  const nlohmann::json openai_bare = {{"prompt", kRepetitive}, {"max_tokens", 40}};
  nlohmann::json openai_no_dry = openai_bare;
  openai_no_dry.update({{"temperature", 0}, {"dry_multiplier", 0}});
  const std::string openai_text = OpenAiText(openai_bare);
  EXPECT_EQ(openai_text, OpenAiText(openai_bare));
  EXPECT_EQ(openai_text, bare_text);
  EXPECT_NE(openai_text, OpenAiText(openai_no_dry));
}

}  // namespace
}  // namespace lockstep::server::testing
