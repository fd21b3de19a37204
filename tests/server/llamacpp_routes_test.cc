// End-to-end: llama.cpp's native POST /completion (and /completions) and GET /props on a real `lockstep
// serve` with the tiny model: greedy text equal to /v1/completions', n_predict and stop types, stop words,
// completion_probabilities, grammar / json_schema, token-id, mixed and multiple prompts, logit_bias forms,
// streaming (no [DONE]; the chunks concatenate to the whole content), /props, and a 400 naming every bad
// field.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "e2e_util.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

class LlamaCppRoutesTest : public SharedServerTest<LlamaCppRoutesTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--max-seqs", "3"}; }

 protected:
  static nlohmann::json Greedy(const nlohmann::json& prompt, int n_predict) {
    return {{"prompt", prompt}, {"n_predict", n_predict}, {"temperature", 0}};
  }
  static nlohmann::json Complete(const nlohmann::json& body, const std::string& path = "/completion") {
    const HttpResponse r = Post(port(), path, body);
    EXPECT_EQ(r.status, 200) << body.dump() << " → " << r.body;
    return r.Json();
  }
  static std::vector<int32_t> Tokens(const nlohmann::json& content, bool add_special) {
    const HttpResponse r = Post(port(), "/tokenize", {{"content", content}, {"add_special", add_special}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["tokens"].get<std::vector<int32_t>>();
  }
};

TEST_F(LlamaCppRoutesTest, GreedyEqualsOpenAiCompletions) {
  const nlohmann::json j = Complete(Greedy("Hello world", 12));
  const HttpResponse openai =
      Post(port(), "/v1/completions", {{"prompt", "Hello world"}, {"max_tokens", 12}, {"temperature", 0}});
  ASSERT_EQ(openai.status, 200) << openai.body;
  EXPECT_EQ(j["content"], openai.Json()["choices"][0]["text"]) << j.dump();
  EXPECT_EQ(j["stop"], true);
  EXPECT_EQ(j["stop_type"], "limit");
  EXPECT_EQ(j["stopping_word"], "");
  EXPECT_EQ(j["tokens_predicted"], 12);
  EXPECT_EQ(j["tokens_evaluated"], Tokens("Hello world", true).size());
  EXPECT_EQ(j["tokens_evaluated"], openai.Json()["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["tokens"], nlohmann::json::array());  // only with return_tokens
  EXPECT_FALSE(j.contains("completion_probabilities"));
  EXPECT_EQ(j["model"], openai.Json()["model"]);
  EXPECT_EQ(j["has_new_line"], j["content"].get<std::string>().find('\n') != std::string::npos);
  EXPECT_EQ(j["generation_settings"]["n_predict"], 12);
  EXPECT_EQ(j["generation_settings"]["temperature"], 0.0);
  EXPECT_EQ(j["generation_settings"]["top_k"], 40);  // llama.cpp's default
  EXPECT_EQ(j["timings"]["predicted_n"], 12);
  for (const char* key : {"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_ms",
                          "predicted_per_token_ms", "predicted_per_second"}) {
    EXPECT_TRUE(j["timings"][key].is_number()) << key;
  }
  EXPECT_TRUE(j["tokens_cached"].is_number_integer());
  EXPECT_FALSE(j.contains("cut_short"));
  // The alias answers the same.
  EXPECT_EQ(Complete(Greedy("Hello world", 12), "/completions")["content"], j["content"]);
  // return_tokens: the generated ids, which decode to the content.
  nlohmann::json body = Greedy("Hello world", 12);
  body["return_tokens"] = true;
  const nlohmann::json with_tokens = Complete(body);
  ASSERT_EQ(with_tokens["tokens"].size(), 12u) << with_tokens.dump();
  EXPECT_EQ(Post(port(), "/detokenize", {{"tokens", with_tokens["tokens"]}}).Json()["content"], j["content"]);
}

TEST_F(LlamaCppRoutesTest, NPredictLimitsAndContext) {
  const nlohmann::json five = Complete(Greedy("Once", 5));
  EXPECT_EQ(five["tokens_predicted"], 5);
  EXPECT_EQ(five["stop_type"], "limit");
  // n_predict -1 with ignore_eos: until the 256-token context is full.
  nlohmann::json body = Greedy("Once", -1);
  body["ignore_eos"] = true;
  const nlohmann::json full = Complete(body);
  EXPECT_EQ(full["stop_type"], "limit");
  EXPECT_EQ(full["tokens_predicted"].get<int>() + full["tokens_evaluated"].get<int>(), 256) << full.dump();
  // More than the context leaves stops there too, as llama.cpp's does.
  body["n_predict"] = 100000;
  EXPECT_EQ(Complete(body)["tokens_predicted"], full["tokens_predicted"]);
  // n_predict 0: the prompt is evaluated, nothing generated.
  const nlohmann::json none = Complete(Greedy("Once", 0));
  EXPECT_EQ(none["content"], "");
  EXPECT_EQ(none["tokens_predicted"], 0);
  EXPECT_EQ(none["stop_type"], "limit");
}

TEST_F(LlamaCppRoutesTest, StopWordIsCutAndReported) {
  // A grammar makes the text known: "ab" and then c's; the stop word "b" ends it after "a".
  nlohmann::json body = Greedy("x", 20);
  body["grammar"] = "root ::= \"ab\" \"c\"*";
  const nlohmann::json plain = Complete(body);
  ASSERT_EQ(plain["content"].get<std::string>().rfind("ab", 0), 0u) << plain.dump();
  body["stop"] = {"zz", "b"};
  const nlohmann::json j = Complete(body);
  EXPECT_EQ(j["content"], "a");
  EXPECT_EQ(j["stop_type"], "word");
  EXPECT_EQ(j["stopping_word"], "b");
  EXPECT_EQ(j["generation_settings"]["stop"], nlohmann::json({"zz", "b"}));
}

TEST_F(LlamaCppRoutesTest, CompletionProbabilities) {
  nlohmann::json body = Greedy("Hello", 4);
  body["n_probs"] = 3;
  body["return_tokens"] = true;
  const nlohmann::json j = Complete(body);
  const nlohmann::json& probs = j["completion_probabilities"];
  ASSERT_EQ(probs.size(), 4u) << j.dump();
  for (size_t i = 0; i < probs.size(); ++i) {
    const nlohmann::json& p = probs[i];
    EXPECT_EQ(p["id"], j["tokens"][i]);
    EXPECT_TRUE(p["token"].is_string());
    EXPECT_TRUE(p["bytes"].is_array());
    EXPECT_LE(p["logprob"].get<double>(), 0.0);
    ASSERT_EQ(p["top_logprobs"].size(), 3u);
    EXPECT_EQ(p["top_logprobs"][0]["id"], p["id"]);  // greedy: the most likely token
    EXPECT_EQ(p["top_logprobs"][0]["logprob"], p["logprob"]);
    EXPECT_GE(p["top_logprobs"][0]["logprob"].get<double>(), p["top_logprobs"][1]["logprob"].get<double>());
    for (const char* key : {"id", "token", "logprob", "bytes"})
      EXPECT_TRUE(p["top_logprobs"][2].contains(key));
  }
}

TEST_F(LlamaCppRoutesTest, GrammarAndJsonSchemaConstrain) {
  const nlohmann::json schema = nlohmann::json::parse(
      R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
          "required": ["n"], "additionalProperties": false})");
  for (int seed = 0; seed < 4; ++seed) {
    nlohmann::json body = {{"prompt", "x"}, {"seed", seed}, {"temperature", 1.0}, {"n_predict", 30}};
    body["grammar"] = "root ::= \"v\" [0-9]{2} (\"!\" | \"?\")";
    const nlohmann::json g = Complete(body);
    EXPECT_TRUE(std::regex_match(g["content"].get<std::string>(), std::regex("v[0-9]{2}[!?]"))) << g.dump();
    EXPECT_EQ(g["stop_type"], "eos");  // a complete grammar ends the text as EOS does
    body.erase("grammar");
    body.erase("n_predict");  // until the schema is complete
    body["json_schema"] = schema;
    const nlohmann::json s = Complete(body);
    const nlohmann::json v = nlohmann::json::parse(s["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(v.is_object()) << s.dump();
    EXPECT_TRUE(v["n"].is_number_integer()) << s.dump();
    EXPECT_EQ(v.size(), 1u);
  }
}

TEST_F(LlamaCppRoutesTest, TokenIdMixedAndSeveralPrompts) {
  const std::string text = Complete(Greedy("Hello world", 6))["content"];
  EXPECT_EQ(Complete(Greedy(Tokens("Hello world", true), 6))["content"], text);
  // Mixed strings and ids: BOS before a leading string, as /tokenize's add_special.
  const nlohmann::json mixed = {"Hello", 5, " world"};
  const nlohmann::json m = Complete(Greedy(mixed, 6));
  EXPECT_EQ(m["content"], Complete(Greedy(Tokens(mixed, true), 6))["content"]);
  EXPECT_EQ(m["tokens_evaluated"], Tokens(mixed, true).size());
  // Several prompts: an array of results, in order.
  const nlohmann::json several =
      Complete(Greedy({"Hello world", Tokens("Bye", true), {"Hello", 5, " world"}}, 6));
  ASSERT_TRUE(several.is_array()) << several.dump();
  ASSERT_EQ(several.size(), 3u);
  EXPECT_EQ(several[0]["content"], text);
  EXPECT_EQ(several[1]["content"], Complete(Greedy("Bye", 6))["content"]);
  EXPECT_EQ(several[2]["content"], m["content"]);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(several[i]["index"], i);
  // A one-element list answers one object, as llama.cpp does.
  EXPECT_TRUE(Complete(Greedy(nlohmann::json::array({"Hello world"}), 6)).is_object());
}

TEST_F(LlamaCppRoutesTest, LogitBiasForms) {
  const std::vector<int32_t> q = Tokens("Q", false);
  ASSERT_EQ(q.size(), 1u);
  const std::string forced(8, 'Q');
  nlohmann::json body = Greedy("Hello", 8);
  body["logit_bias"] = {{q[0], 100}};
  EXPECT_EQ(Complete(body)["content"], forced);
  body["logit_bias"] =
      nlohmann::json::array({nlohmann::json::array({"Q", 100})});  // text: each of its tokens
  EXPECT_EQ(Complete(body)["content"], forced);
  body["logit_bias"] = {{std::to_string(q[0]), 100}};  // object form
  EXPECT_EQ(Complete(body)["content"], forced);
  // false: never sampled.
  nlohmann::json first = Greedy("Hello", 1);
  first["return_tokens"] = true;
  const int32_t top = Complete(first)["tokens"][0];
  first["logit_bias"] = nlohmann::json::array({nlohmann::json::array({top, false})});
  EXPECT_NE(Complete(first)["tokens"][0], top);
}

TEST_F(LlamaCppRoutesTest, StreamConcatenatesToContent) {
  nlohmann::json body = Greedy("Hello world", 10);
  body["n_probs"] = 2;
  const nlohmann::json whole = Complete(body);
  body["stream"] = true;
  body["id_slot"] = 2;  // every chunk names it, the first too
  int status = 0;
  const std::vector<std::string> events = Stream(port(), "/completion", body, nullptr, &status);
  EXPECT_EQ(status, 200);
  ASSERT_GE(events.size(), 2u);
  std::string text;
  int probs = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_NE(events[i], "[DONE]");  // not on llama.cpp's native route
    const nlohmann::json e = nlohmann::json::parse(events[i]);
    EXPECT_EQ(e["stop"], i + 1 == events.size()) << events[i];
    EXPECT_EQ(e["id_slot"], 2) << events[i];
    text += e["content"].get<std::string>();
    if (e.contains("completion_probabilities"))
      probs += static_cast<int>(e["completion_probabilities"].size());
  }
  EXPECT_EQ(text, whole["content"]);
  EXPECT_EQ(probs, 10);
  const nlohmann::json last = nlohmann::json::parse(events.back());
  EXPECT_EQ(last["content"], "");
  EXPECT_EQ(last["stop_type"], "limit");
  EXPECT_EQ(last["tokens_predicted"], 10);
  EXPECT_TRUE(last["timings"].is_object());
}

TEST_F(LlamaCppRoutesTest, Props) {
  const HttpResponse r = Request(port(), "GET", "/props");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["default_generation_settings"]["n_ctx"], 256);
  const nlohmann::json& params = j["default_generation_settings"]["params"];
  EXPECT_EQ(params["n_predict"], -1);
  EXPECT_NEAR(params["temperature"].get<double>(), 0.8, 1e-6);
  EXPECT_EQ(params["top_k"], 40);
  EXPECT_EQ(j["total_slots"], 3);
  EXPECT_EQ(j["model_path"], TinyModel());
  EXPECT_TRUE(j["chat_template"].is_string());
  EXPECT_FALSE(j["chat_template"].get<std::string>().empty());
  EXPECT_EQ(j["modalities"]["vision"], false);
  EXPECT_TRUE(j["build_info"].is_string());
  EXPECT_EQ(Request(port(), "POST", "/props", "{}").status, 405);
}

TEST_F(LlamaCppRoutesTest, EveryBadFieldIsA400NamingIt) {
  const nlohmann::json cases[][2] = {
      {{{"n_predict", 3}}, "prompt"},
      {{{"prompt", 5}}, "prompt"},
      {{{"prompt", nlohmann::json::array()}}, "prompt"},
      {{{"prompt", nlohmann::json::array({"a", nlohmann::json::array({1, -4})})}}, "prompt[1][1]"},
      {{{"prompt", {{"prompt_string", 3}}}}, "prompt.prompt_string"},
      {{{"prompt", "x"}, {"n_predict", "many"}}, "n_predict"},
      {{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {{{"prompt", "x"}, {"top_k", 1.5}}, "top_k"},
      {{{"prompt", "x"}, {"top_p", 2}}, "top_p"},
      {{{"prompt", "x"}, {"min_p", -1}}, "min_p"},
      {{{"prompt", "x"}, {"typical_p", "x"}}, "typical_p"},
      {{{"prompt", "x"}, {"xtc_probability", 2}}, "xtc_probability"},
      {{{"prompt", "x"}, {"xtc_threshold", -0.1}}, "xtc_threshold"},
      {{{"prompt", "x"}, {"top_n_sigma", "wide"}}, "top_n_sigma"},
      {{{"prompt", "x"}, {"min_keep", -1}}, "min_keep"},
      {{{"prompt", "x"}, {"repeat_penalty", 0}}, "repeat_penalty"},
      {{{"prompt", "x"}, {"repeat_last_n", -2}}, "repeat_last_n"},
      {{{"prompt", "x"}, {"presence_penalty", "a"}}, "presence_penalty"},
      {{{"prompt", "x"}, {"frequency_penalty", true}}, "frequency_penalty"},
      {{{"prompt", "x"}, {"seed", "s"}}, "seed"},
      {{{"prompt", "x"}, {"stop", 5}}, "stop"},
      {{{"prompt", "x"}, {"ignore_eos", "yes"}}, "ignore_eos"},
      {{{"prompt", "x"}, {"logit_bias", 5}}, "logit_bias"},
      {{{"prompt", "x"}, {"logit_bias", {{1}}}}, "logit_bias"},
      {{{"prompt", "x"}, {"logit_bias", {{99999999, 1}}}}, "logit_bias"},
      {{{"prompt", "x"}, {"logit_bias", {{"1", "x"}}}}, "logit_bias"},
      {{{"prompt", "x"}, {"n_probs", 100}}, "n_probs"},
      {{{"prompt", "x"}, {"grammar", 5}}, "grammar"},
      {{{"prompt", "x"}, {"grammar", "root ::= foo"}}, "grammar"},
      {{{"prompt", "x"}, {"json_schema", 5}}, "json_schema"},
      {{{"prompt", "x"}, {"grammar", "root ::= \"a\""}, {"json_schema", nlohmann::json::object()}},
       "json_schema"},
      {{{"prompt", "x"}, {"stream", "y"}}, "stream"},
      {{{"prompt", "x"}, {"cache_prompt", 1}}, "cache_prompt"},
      {{{"prompt", "x"}, {"id_slot", "a"}}, "id_slot"},
      {{{"prompt", "x"}, {"return_tokens", 1}}, "return_tokens"},
      {{{"prompt", "x"}, {"samplers", 5}}, "samplers"},
      {{{"prompt", "x"}, {"mirostat", 3}}, "mirostat"},
      {{{"prompt", "x"}, {"mirostat_tau", "x"}}, "mirostat_tau"},
      {{{"prompt", "x"}, {"dynatemp_range", -1}}, "dynatemp_range"},
      {{{"prompt", "x"}, {"dry_multiplier", -0.8}}, "dry_multiplier"},
      {{{"prompt", "x"}, {"dry_allowed_length", "2"}}, "dry_allowed_length"},
      {{{"prompt", "x"}, {"dry_penalty_last_n", -2}}, "dry_penalty_last_n"},
      {{{"prompt", "x"}, {"dry_sequence_breakers", nlohmann::json::array()}}, "dry_sequence_breakers"},
      {{{"prompt", "x"}, {"post_sampling_probs", true}}, "post_sampling_probs"},
      {{{"prompt", "x"}, {"lora", {{{"id", 0}, {"scale", 1}}}}}, "lora"},
      {{{"prompt", "x"}, {"n_cmpl", 0}}, "n_cmpl"},
      {{{"prompt", "x"}, {"response_fields", 3}}, "response_fields"},
  };
  for (const auto& c : cases) {
    const HttpResponse r = Post(port(), "/completion", c[0]);
    const std::string param = c[1];
    EXPECT_EQ(r.status, 400) << c[0].dump() << " → " << r.body;
    const nlohmann::json error = r.Json()["error"];
    EXPECT_EQ(error["code"], 400) << r.body;
    EXPECT_EQ(error["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(error["param"], param) << c[0].dump() << " → " << r.body;
    const std::string field = param.substr(0, param.find_first_of("[."));
    EXPECT_NE(error["message"].get<std::string>().find(field), std::string::npos) << r.body;
  }
  const HttpResponse malformed = Request(port(), "POST", "/completion", "{\"prompt\": ");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(malformed.Json()["error"]["code"], 400) << malformed.body;
  // Accepted at llama.cpp's defaults, where they do nothing.
  nlohmann::json defaults = Greedy("x", 2);
  const nlohmann::json no_ops = {{"typical_p", 1.0},
                                 {"mirostat", 0},
                                 {"dry_multiplier", 0.0},
                                 {"xtc_probability", 0.0},
                                 {"cache_prompt", true},
                                 {"id_slot", -1},
                                 {"samplers", {"dry", "top_k", "typ_p", "top_p", "min_p", "temperature"}},
                                 {"lora", nlohmann::json::array()},
                                 {"grammar", ""}};
  defaults.update(no_ops);
  Complete(defaults);
  // llama.cpp's further filters (engine/sampler.h): taken, and reported in generation_settings.
  nlohmann::json filtered = {{"prompt", "Once upon a time"},
                             {"n_predict", 4},
                             {"temperature", 1.0},
                             {"seed", 3},
                             {"typical_p", 0.5},
                             {"top_n_sigma", 1.5},
                             {"xtc_probability", 0.5},
                             {"xtc_threshold", 0.2},
                             {"min_keep", 2}};
  const nlohmann::json j = Complete(filtered);
  const nlohmann::json& settings = j["generation_settings"];
  EXPECT_EQ(settings["typical_p"], 0.5) << j;
  EXPECT_EQ(settings["top_n_sigma"], 1.5) << j;
  EXPECT_EQ(settings["xtc_probability"], 0.5) << j;
  EXPECT_FLOAT_EQ(settings["xtc_threshold"].get<float>(), 0.2f) << j;
  EXPECT_EQ(settings["min_keep"], 2) << j;
  EXPECT_EQ(Complete(filtered)["content"], j["content"]);  // seeded: the same draws
  nlohmann::json mirostat = {{"prompt", "Once upon a time"},
                             {"n_predict", 6},
                             {"temperature", 1.0},
                             {"seed", 5},
                             {"mirostat", 2},
                             {"mirostat_tau", 4.0},
                             {"mirostat_eta", 0.2}};
  const nlohmann::json m = Complete(mirostat);
  EXPECT_EQ(m["generation_settings"]["mirostat"], 2) << m;
  EXPECT_EQ(m["generation_settings"]["mirostat_tau"], 4.0) << m;
  EXPECT_FLOAT_EQ(m["generation_settings"]["mirostat_eta"].get<float>(), 0.2f) << m;
  // The chain it ran: mirostat's truncation in place of top_k and the filters.
  EXPECT_EQ(m["generation_settings"]["samplers"],
            nlohmann::json({"penalties", "dry", "temperature", "mirostat_v2"}))
      << m;
  EXPECT_EQ(j["generation_settings"]["samplers"].size(), 9u) << j;
  EXPECT_EQ(Complete(mirostat)["content"], m["content"]);
  const nlohmann::json dynatemp = Complete({{"prompt", "Once upon a time"},
                                            {"n_predict", 4},
                                            {"temperature", 0.8},
                                            {"dynatemp_range", 0.5},
                                            {"dynatemp_exponent", 2.0}});
  EXPECT_EQ(dynatemp["generation_settings"]["dynatemp_range"], 0.5) << dynatemp;
  EXPECT_EQ(dynatemp["generation_settings"]["dynatemp_exponent"], 2.0) << dynatemp;
  // The OpenAI routes take them too (llama.cpp's server does), and TGI its typical_p.
  const HttpResponse chat = Post(port(), "/v1/chat/completions",
                                 {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                  {"max_tokens", 3},
                                  {"typical_p", 0.9},
                                  {"xtc_probability", 1.0},
                                  {"min_keep", 3}});
  EXPECT_EQ(chat.status, 200) << chat.body;
  const HttpResponse bad_chat =
      Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}, {"typical_p", -1}});
  EXPECT_EQ(bad_chat.status, 400) << bad_chat.body;
  EXPECT_EQ(bad_chat.Json()["error"]["param"], "typical_p") << bad_chat.body;
  const HttpResponse tgi = Post(
      port(), "/generate", {{"inputs", "Hi"}, {"parameters", {{"max_new_tokens", 3}, {"typical_p", 0.5}}}});
  EXPECT_EQ(tgi.status, 200) << tgi.body;
}

// A request the server cuts short (--timeout) has no llama.cpp stop type: stop_type "none" and lockstep's
// cut_short say so, whole and streamed.
TEST(LlamaCppCutShortTest, ATimeoutSaysNoneAndCutShort) {
  // As FinishReasonTest: the timeout passes after the first token and long before the 240th (the time of a
  // measured 24-token request, at least 50 ms).
  const auto body = [](int n_predict, bool stream) {
    return nlohmann::json{{"prompt", "Once upon a time"},
                          {"n_predict", n_predict},
                          {"ignore_eos", true},
                          {"temperature", 0},
                          {"stream", stream}};
  };
  double timeout_s = 0;
  {
    ServerProcess timing(SlowModel(), {"-t", "1"});
    ASSERT_TRUE(timing.ok()) << timing.log();
    timeout_s = std::max(SecondsForOneRequest(timing.port(), "/completion", body(24, false)), 0.05);
    ASSERT_FALSE(HasFailure());
  }
  ServerProcess server(SlowModel(), {"-t", "1", "--timeout", std::to_string(timeout_s)});
  ASSERT_TRUE(server.ok()) << server.log();
  const HttpResponse whole = Post(server.port(), "/completion", body(240, false));
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.Json()["stop_type"], "none") << whole.body;
  EXPECT_EQ(whole.Json()["cut_short"], "timeout") << whole.body;
  EXPECT_LT(whole.Json()["tokens_predicted"].get<int>(), 240);
  const std::vector<std::string> events = Stream(server.port(), "/completion", body(240, true));
  ASSERT_FALSE(events.empty());
  const nlohmann::json last = nlohmann::json::parse(events.back(), nullptr, false);
  EXPECT_EQ(last["stop"], true) << events.back();
  EXPECT_EQ(last["stop_type"], "none") << events.back();
  EXPECT_EQ(last["cut_short"], "timeout") << events.back();
  EXPECT_TRUE(WaitForIdleEngine(server.port()));
}

}  // namespace
}  // namespace lockstep::server::testing
