// End-to-end: every route of a real `lockstep serve` process over loopback sockets — OpenAI completions and
// chat (whole and streamed, n > 1, logprobs, echo, usage chunk), TGI /generate, /generate_stream and POST /,
// /info, /v1/models, /health and /metrics.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "e2e_util.h"
#include "server/sse.h"

namespace lockstep::server::testing {
namespace {

class ServerRoutesTest : public SharedServerTest<ServerRoutesTest> {};

TEST_F(ServerRoutesTest, HealthModelsInfo) {
  auto health = Request(port(), "GET", "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.Json()["status"], "ok");
  auto models = Request(port(), "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.Json()["object"], "list");
  EXPECT_EQ(models.Json()["data"][0]["id"], "tiny");
  EXPECT_EQ(Request(port(), "GET", "/v1/models/tiny").status, 200);
  EXPECT_EQ(Request(port(), "GET", "/v1/models/nope").status, 404);
  auto info = Request(port(), "GET", "/info");
  ASSERT_EQ(info.status, 200);
  EXPECT_EQ(info.Json()["model_id"], "tiny");
  EXPECT_EQ(info.Json()["max_total_tokens"], 256);
}

TEST_F(ServerRoutesTest, CompletionGreedyIsDeterministicAndWellFormed) {
  const nlohmann::json body = {
      {"model", "tiny"}, {"prompt", "Hello world"}, {"max_tokens", 8}, {"temperature", 0}};
  auto a = Post(port(), "/v1/completions", body);
  auto b = Post(port(), "/v1/completions", body);
  ASSERT_EQ(a.status, 200) << a.body;
  const auto j = a.Json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_TRUE(j["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 8);
  EXPECT_EQ(j["choices"][0]["text"], b.Json()["choices"][0]["text"]);
}

TEST_F(ServerRoutesTest, CompletionPromptFormsNAndEcho) {
  auto ids =
      Post(port(), "/v1/completions", {{"prompt", {1, 20, 30}}, {"max_tokens", 3}, {"temperature", 0}});
  ASSERT_EQ(ids.status, 200) << ids.body;
  EXPECT_EQ(ids.Json()["usage"]["prompt_tokens"], 3);
  auto many =
      Post(port(), "/v1/completions",
           {{"prompt", {"one", "two"}}, {"n", 2}, {"max_tokens", 3}, {"temperature", 0.8}, {"seed", 5}});
  ASSERT_EQ(many.status, 200) << many.body;
  const auto choices = many.Json()["choices"];
  ASSERT_EQ(choices.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(choices[i]["index"], i);
  EXPECT_EQ(many.Json()["usage"]["completion_tokens"], 12);
  auto nested = Post(port(), "/v1/completions", {{"prompt", {{1, 2}, {1, 3, 4}}}, {"max_tokens", 2}});
  ASSERT_EQ(nested.status, 200) << nested.body;
  EXPECT_EQ(nested.Json()["choices"].size(), 2u);
  auto echo = Post(port(), "/v1/completions", {{"prompt", "Echo me"}, {"max_tokens", 2}, {"echo", true}});
  ASSERT_EQ(echo.status, 200);
  EXPECT_EQ(echo.Json()["choices"][0]["text"].get<std::string>().rfind("Echo me", 0), 0u);
}

TEST_F(ServerRoutesTest, CompletionLogprobs) {
  auto r = Post(port(), "/v1/completions",
                {{"prompt", "Hi"}, {"max_tokens", 4}, {"logprobs", 2}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto lp = r.Json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u);
  ASSERT_EQ(lp["token_logprobs"].size(), 4u);
  ASSERT_EQ(lp["text_offset"].size(), 4u);
  ASSERT_EQ(lp["top_logprobs"].size(), 4u);
  for (const auto& v : lp["token_logprobs"]) EXPECT_LE(v.get<double>(), 0.0);
  EXPECT_GE(lp["top_logprobs"][0].size(), 1u);
}

TEST_F(ServerRoutesTest, CompletionTextOffsetsCountCharacters) {
  // A schema that allows one string only: the text starts "Привет, мир, Привет" with its quotes (21
  // characters, 37 bytes), then whitespace the random model picks. Offsets count characters of the text, as
  // OpenAI and vLLM do, so the last token starts that token's length before the text's last character.
  const auto characters = [](const std::string& s) {
    return std::count_if(s.begin(), s.end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; });
  };
  const nlohmann::json schema = {{"type", "string"}, {"enum", {"Привет, мир, Привет"}}};
  const nlohmann::json body = {
      {"prompt", "Say hello"},
      {"max_tokens", 40},
      {"logprobs", 0},
      {"temperature", 0},
      {"response_format",
       {{"type", "json_schema"}, {"json_schema", {{"name", "hello"}, {"schema", schema}}}}}};
  auto r = Post(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json j = r.Json();  // (a reference into a temporary would dangle)
  const std::string text = j["choices"][0]["text"];
  ASSERT_EQ(text.rfind("\"Привет, мир, Привет\"", 0), 0u) << r.body;
  const auto& logprobs = j["choices"][0]["logprobs"];
  const auto& offsets = logprobs["text_offset"];
  ASSERT_GE(offsets.size(), 2u) << r.body;
  EXPECT_EQ(offsets[0], 0);
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LE(offsets[i - 1], offsets[i]) << r.body;
  const std::string last = logprobs["tokens"].back();
  EXPECT_EQ(offsets.back().get<int64_t>(), characters(text) - characters(last)) << r.body;
}

TEST_F(ServerRoutesTest, LogitBiasSteersTheChoice) {
  // The token of "a" with a bias of 100 wins every greedy step; with -100 it is never chosen.
  auto tokenized = Post(port(), "/tokenize", {{"content", "a"}, {"add_special", false}});
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const auto ids = tokenized.Json()["tokens"];
  ASSERT_EQ(ids.size(), 1u) << tokenized.body;
  const std::string a = std::to_string(ids[0].get<int>());
  auto biased =
      Post(port(), "/v1/completions",
           {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0}, {"logit_bias", {{a, 100}}}});
  ASSERT_EQ(biased.status, 200) << biased.body;
  EXPECT_EQ(biased.Json()["choices"][0]["text"], "aaaa") << biased.body;
  auto chat = Post(port(), "/v1/chat/completions",
                   {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                    {"max_tokens", 3},
                    {"temperature", 0.8},
                    {"seed", 3},
                    {"logit_bias", {{a, 100}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.Json()["choices"][0]["message"]["content"], "aaa") << chat.body;
}

TEST_F(ServerRoutesTest, StopTokenIdsAndMinTokens) {
  // "a" is favoured by 100 (it wins every greedy step) and is a stop token: the request ends at its first
  // token; with min_tokens 3 the stop token cannot be sampled before 3 tokens, so it ends at the fourth.
  auto tokenized = Post(port(), "/tokenize", {{"content", "a"}, {"add_special", false}});
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const int a = tokenized.Json()["tokens"][0];
  nlohmann::json body = {{"prompt", "Hello"},
                         {"max_tokens", 8},
                         {"temperature", 0},
                         {"logit_bias", {{std::to_string(a), 100}}},
                         {"stop_token_ids", {a}}};
  auto first = Post(port(), "/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.Json()["choices"][0]["finish_reason"], "stop") << first.body;
  EXPECT_EQ(first.Json()["usage"]["completion_tokens"], 1) << first.body;
  body["min_tokens"] = 3;
  auto held = Post(port(), "/v1/completions", body);
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(held.Json()["choices"][0]["finish_reason"], "stop") << held.body;
  EXPECT_EQ(held.Json()["usage"]["completion_tokens"], 4) << held.body;
  EXPECT_EQ(held.Json()["choices"][0]["text"].get<std::string>().find('a'), std::string::npos) << held.body;
  body["min_tokens"] = 9;  // more than max_tokens
  EXPECT_EQ(Post(port(), "/v1/completions", body).status, 400);
  // A grammar that allows nothing but its end after "ab": the end stays allowed (else no token would be).
  auto regex = Post(port(), "/v1/completions",
                    {{"prompt", "Hello"}, {"max_tokens", 8}, {"min_tokens", 6}, {"guided_regex", "ab"}});
  ASSERT_EQ(regex.status, 200) << regex.body;
  EXPECT_EQ(regex.Json()["choices"][0]["text"], "ab") << regex.body;
  EXPECT_EQ(regex.Json()["choices"][0]["finish_reason"], "stop") << regex.body;
}

TEST_F(ServerRoutesTest, ChatWholeAndStreamedAgree) {
  const nlohmann::json messages = {{{"role", "system"}, {"content", "Be brief."}},
                                   {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Hello"}}}}}};
  auto whole =
      Post(port(), "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  const auto j = whole.Json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0].contains("logprobs"));
  int status = 0;
  auto events = Stream(port(), "/v1/chat/completions",
                       {{"messages", messages},
                        {"max_tokens", 6},
                        {"temperature", 0},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}},
                       nullptr, &status);
  EXPECT_EQ(status, 200);
  ASSERT_GE(events.size(), 3u);
  bool done = false;
  auto text = CollectOpenAiText(events, true, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(text[0], j["choices"][0]["message"]["content"].get<std::string>());
  const auto first = nlohmann::json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const auto usage = nlohmann::json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  const auto last_choice = nlohmann::json::parse(events[events.size() - 3]);
  EXPECT_EQ(last_choice["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerRoutesTest, ChatLogprobsAndParallelChoices) {
  auto r = Post(port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                 {"max_completion_tokens", 3},
                 {"logprobs", true},
                 {"top_logprobs", 3},
                 {"n", 3},
                 {"seed", 1}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto choices = r.Json()["choices"];
  ASSERT_EQ(choices.size(), 3u);
  const auto content = choices[0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0]["top_logprobs"].size(), 3u);
  EXPECT_TRUE(content[0]["bytes"].is_array());
  bool done = false;
  auto events = Stream(
      port(), "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}, {"n", 2}, {"stream", true}});
  auto text = CollectOpenAiText(events, true, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(text.size(), 2u);
}

TEST_F(ServerRoutesTest, CompletionStreamMatchesWhole) {
  const nlohmann::json body = {{"prompt", "Once upon"}, {"max_tokens", 10}, {"temperature", 0}};
  auto whole = Post(port(), "/v1/completions", body);
  nlohmann::json streamed = body;
  streamed["stream"] = true;
  bool done = false;
  auto text = CollectOpenAiText(Stream(port(), "/v1/completions", streamed), false, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(text[0], whole.Json()["choices"][0]["text"].get<std::string>());
}

TEST_F(ServerRoutesTest, TgiGenerateAndStream) {
  const nlohmann::json body = {
      {"inputs", "Hello"}, {"parameters", {{"max_new_tokens", 5}, {"details", true}, {"top_n_tokens", 2}}}};
  auto r = Post(port(), "/generate", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.Json();
  EXPECT_EQ(j["details"]["finish_reason"], "length");
  EXPECT_EQ(j["details"]["generated_tokens"], 5);
  EXPECT_EQ(j["details"]["tokens"].size(), 5u);
  EXPECT_TRUE(j["details"]["prefill"].empty());  // without decoder_input_details
  EXPECT_EQ(j["details"]["top_tokens"].size(), 5u);
  EXPECT_FALSE(r.headers["x-compute-time"].empty());
  int status = 0;
  auto events = Stream(port(), "/generate_stream", body, nullptr, &status);
  EXPECT_EQ(status, 200);
  ASSERT_EQ(events.size(), 5u);
  std::string concat;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto e = nlohmann::json::parse(events[i]);
    EXPECT_EQ(e["index"], i);
    EXPECT_TRUE(e["token"].contains("logprob"));
    concat += e["token"]["text"].get<std::string>();
    if (i + 1 < events.size()) {
      EXPECT_TRUE(e["generated_text"].is_null());
      EXPECT_TRUE(e["details"].is_null());
    } else {
      EXPECT_EQ(e["generated_text"], j["generated_text"]);
      EXPECT_EQ(e["details"]["finish_reason"], "length");
    }
  }
  EXPECT_EQ(concat, j["generated_text"].get<std::string>());
  auto root = Post(port(), "/", {{"inputs", "Hello"}, {"parameters", {{"max_new_tokens", 5}}}});
  ASSERT_EQ(root.status, 200);
  ASSERT_TRUE(root.Json().is_array());
  EXPECT_EQ(root.Json()[0]["generated_text"], j["generated_text"]);
  auto root_stream =
      Stream(port(), "/", {{"inputs", "Hello"}, {"stream", true}, {"parameters", {{"max_new_tokens", 5}}}});
  EXPECT_EQ(root_stream.size(), 5u);
  auto full =
      Post(port(), "/generate",
           {{"inputs", "Hello"}, {"parameters", {{"max_new_tokens", 2}, {"return_full_text", true}}}});
  EXPECT_EQ(full.Json()["generated_text"].get<std::string>().rfind("Hello", 0), 0u);
}

TEST_F(ServerRoutesTest, TgiReportsTheSeedItSampledWithAndEachSequencesTokens) {
  const nlohmann::json body = {
      {"inputs", "Hello"},
      {"parameters", {{"max_new_tokens", 4}, {"do_sample", true}, {"details", true}, {"best_of", 2}}}};
  auto r = Post(port(), "/generate", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.Json();
  // No seed given: the one drawn is reported (TGI does so when sampling), exactly readable as a double.
  ASSERT_TRUE(j["details"]["seed"].is_number_unsigned()) << r.body;
  const uint64_t seed = j["details"]["seed"];
  EXPECT_LT(seed, uint64_t{1} << 53);
  ASSERT_EQ(j["details"]["best_of_sequences"].size(), 1u);
  const auto& other = j["details"]["best_of_sequences"][0];
  EXPECT_TRUE(other["seed"].is_number_unsigned()) << r.body;
  EXPECT_TRUE(other["prefill"].is_array());
  ASSERT_TRUE(other["tokens"].is_array()) << r.body;
  EXPECT_EQ(other["tokens"].size(), other["generated_tokens"].get<size_t>());
  // The reported seed gives the same sequence again.
  nlohmann::json again = body;
  again["parameters"].erase("best_of");
  again["parameters"]["seed"] = seed;
  auto a = Post(port(), "/generate", again);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Json()["generated_text"], j["generated_text"]);
  // Greedy decoding uses no seed.
  auto greedy = Post(port(), "/generate", {{"inputs", "Hello"}, {"parameters", {{"details", true}}}});
  EXPECT_TRUE(greedy.Json()["details"]["seed"].is_null()) << greedy.body;
}

TEST_F(ServerRoutesTest, StopStringsEndGeneration) {
  auto base =
      Post(port(), "/v1/completions", {{"prompt", "Hello world"}, {"max_tokens", 12}, {"temperature", 0}});
  const std::string text = base.Json()["choices"][0]["text"];
  // A stop string on a character boundary: the first printable ASCII character after the start.
  std::string stop;
  for (size_t i = 1; i < text.size() && stop.empty(); ++i) {
    if (text[i] > 32 && text[i] < 127) stop = text.substr(i, 1);
  }
  if (stop.empty()) GTEST_SKIP() << "no ASCII character in the greedy output";
  auto r = Post(port(), "/v1/completions",
                {{"prompt", "Hello world"}, {"max_tokens", 12}, {"temperature", 0}, {"stop", stop}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.Json()["choices"][0]["text"], text.substr(0, text.find(stop)));
  // Up to 16 stop strings (editor plugins send many; OpenAI's own API takes 4): the one that matches ends it.
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 15; ++i) many.push_back("\x7f" + std::to_string(i) + "\x7f");
  many.push_back(stop);
  auto sixteen =
      Post(port(), "/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}, {"stop", many}});
  EXPECT_EQ(sixteen.status, 200) << sixteen.body;
  r = Post(port(), "/v1/completions",
           {{"prompt", "Hello world"}, {"max_tokens", 12}, {"temperature", 0}, {"stop", many}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["choices"][0]["text"], text.substr(0, text.find(stop)));
  many.push_back("one too many");
  auto seventeen = Post(port(), "/v1/completions", {{"prompt", "Hello world"}, {"stop", many}});
  EXPECT_EQ(seventeen.status, 400) << seventeen.body;
  EXPECT_EQ(seventeen.Json()["error"]["param"], "stop") << seventeen.body;
  auto tgi = Post(port(), "/generate",
                  {{"inputs", "Hello world"},
                   {"parameters", {{"max_new_tokens", 12}, {"stop", {stop}}, {"details", true}}}});
  EXPECT_EQ(tgi.Json()["details"]["finish_reason"], "stop_sequence");
  // TGI keeps the stop sequence: generated_text is the decode of every generated token, the last one
  // included.
  const std::string through_stop = text.substr(0, text.find(stop) + stop.size());
  const std::string generated = tgi.Json()["generated_text"];
  EXPECT_EQ(generated.rfind(through_stop, 0), 0u) << generated;
  EXPECT_EQ(text.rfind(generated, 0), 0u) << generated;
}

TEST_F(ServerRoutesTest, MetricsExposeTheRequiredFamilies) {
  Post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  auto r = Request(port(), "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers["content-type"].find("text/plain"), std::string::npos);
  for (const char* name : {"lockstep_time_to_first_token_seconds", "lockstep_inter_token_latency_seconds",
                           "lockstep_e2e_request_latency_seconds", "lockstep_request_queue_time_seconds"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " histogram"), std::string::npos) << name;
    EXPECT_NE(r.body.find(std::string(name) + "_bucket{le=\"+Inf\"}"), std::string::npos) << name;
  }
  for (const char* name : {"lockstep_num_requests_running", "lockstep_num_requests_waiting",
                           "lockstep_kv_cache_usage_ratio", "lockstep_batch_rows",
                           "lockstep_recurrent_state_slots_used", "lockstep_recurrent_state_slots_total"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " gauge"), std::string::npos) << name;
  }
  EXPECT_EQ(MetricValue(r.body, "lockstep_recurrent_state_slots_total"), 0);  // no recurrent layers
  for (const char* name : {"lockstep_prompt_tokens_total", "lockstep_generation_tokens_total",
                           "lockstep_num_preemptions_total", "lockstep_requests_total"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " counter"), std::string::npos) << name;
  }
  EXPECT_GE(MetricValue(r.body, "lockstep_requests_total{status=\"200\"}"), 1);
  EXPECT_GT(MetricValue(r.body, "lockstep_generation_tokens_total"), 0);
}

TEST_F(ServerRoutesTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  const int fd = Connect(port());
  ASSERT_GE(fd, 0);
  std::string all;
  for (int i = 0; i < 3; ++i) {
    const std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    char buf[4096];
    std::string got;
    while (got.find("\"ok\"}") == std::string::npos) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      ASSERT_GT(n, 0) << "connection closed after " << i << " responses";
      got.append(buf, static_cast<size_t>(n));
    }
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u);
  }
  close(fd);
}

}  // namespace
}  // namespace lockstep::server::testing
