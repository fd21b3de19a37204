// gpt-oss's Harmony replies end to end (chat/harmony.h, server/harmony_reply.h): under a template that writes
// Harmony, a random-weight model made to write Harmony messages by a GBNF grammar (the tiny model's
// vocabulary spells the special tokens as text) answers /v1/chat/completions with the analysis channel as
// reasoning_content, the final channel as content and messages to functions.* as tool_calls, whole and
// streamed alike, with usage's reasoning_tokens; an earlier reply's reasoning reaches the template as
// `thinking`; reasoning_format none, JSON outputs and forced tool choices keep the reply as it is.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace harmony_routes_test {

// Harmony's shape, as gpt-oss's template writes it: the earlier reasoning as an analysis message, a call's
// recipient in the role's header, and the generation prompt <|start|>assistant.
const char* const kTemplate =
    "{% for m in messages %}{% if m['role'] == 'assistant' %}{% if m['thinking'] is defined %}<|start|>"
    "assistant<|channel|>analysis<|message|>{{ m['thinking'] }}<|end|>{% endif %}{% if m['tool_calls'] is "
    "defined %}<|start|>assistant to=functions.{{ m['tool_calls'][0]['function']['name'] }}<|channel|>"
    "commentary json<|message|>{{ m['tool_calls'][0]['function']['arguments'] | tojson }}<|call|>{% endif "
    "%}{% if m['content'] is defined %}<|start|>assistant<|channel|>final<|message|>{{ m['content'] "
    "}}<|end|>{% endif %}{% else %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{% endif "
    "%}{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}";

const std::string& TemplateFile() {
  static const std::string path = [] {
    const std::string file = ::lockstep::testing::MakeTempDir("lockstep-harmony") + "/harmony.jinja";
    std::ofstream(file) << kTemplate;
    return file;
  }();
  return path;
}

class HarmonyRoutesTest : public SharedServerTest<HarmonyRoutesTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--chat-template", TemplateFile()}; }
};

nlohmann::json Chat(uint64_t seed, const std::string& grammar) {
  return {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_tokens", 190},
          {"grammar", grammar}};
}

const nlohmann::json& Tools() {
  static const nlohmann::json tools =
      nlohmann::json::parse(R"([{"type": "function", "function": {"name": "get",
      "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}])");
  return tools;
}

// A reasoning message, then the answer.
const char* const kAnswerGrammar =
    R"(root ::= "<|channel|>analysis<|message|>" [a-z ]{3,12} "<|end|><|start|>assistant<|channel|>final<|message|>" [a-z]{1,8})";
// A reasoning message, then a call to get.
const char* const kCallGrammar =
    R"(root ::= "<|channel|>analysis<|message|>" [a-z ]{3,12} "<|end|><|start|>assistant<|channel|>commentary to=functions.get <|constrain|>json<|message|>{\"x\": 1}")";

struct Streamed {
  std::string reasoning, content, names, arguments, finish_reason;
  bool has_reasoning = false;
  int calls = 0;
  nlohmann::json usage;
};

Streamed StreamChat(int port, nlohmann::json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  Streamed out;
  for (const std::string& data : Stream(port, "/v1/chat/completions", body)) {
    const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (chunk["usage"].is_object()) out.usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;
    const nlohmann::json& choice = chunk["choices"][0];
    const nlohmann::json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) {
      out.reasoning += delta["reasoning_content"].get<std::string>();
      out.has_reasoning = true;
    }
    if (delta.contains("content") && delta["content"].is_string()) out.content += delta["content"];
    for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
      ++out.calls;
      out.names += call["function"].value("name", "");
      out.arguments += call["function"].value("arguments", "");
    }
    if (choice["finish_reason"].is_string()) out.finish_reason = choice["finish_reason"];
  }
  return out;
}

TEST_F(HarmonyRoutesTest, AnalysisIsReasoningFinalIsContentWholeAndStreamed) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const nlohmann::json body = Chat(seed, kAnswerGrammar);
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const nlohmann::json& choice = whole["choices"][0];
    const nlohmann::json& message = choice["message"];
    EXPECT_EQ(choice["finish_reason"], "stop") << r.body;
    ASSERT_TRUE(message["reasoning_content"].is_string()) << r.body;
    EXPECT_TRUE(std::regex_match(message["reasoning_content"].get<std::string>(), std::regex("[a-z ]{3,12}")))
        << r.body;
    EXPECT_TRUE(std::regex_match(message["content"].get<std::string>(), std::regex("[a-z]{1,8}"))) << r.body;
    EXPECT_FALSE(message.contains("tool_calls")) << r.body;
    // The analysis message's tokens (its header and end included) are the reasoning.
    const nlohmann::json& usage = whole["usage"];
    const int reasoning_tokens = usage["completion_tokens_details"]["reasoning_tokens"];
    EXPECT_GT(reasoning_tokens, 3) << r.body;
    EXPECT_LT(reasoning_tokens, usage["completion_tokens"].get<int>()) << r.body;

    const Streamed streamed = StreamChat(port(), body);
    EXPECT_EQ(streamed.reasoning, message["reasoning_content"]);
    EXPECT_EQ(streamed.content, message["content"]);
    EXPECT_EQ(streamed.calls, 0);
    EXPECT_EQ(streamed.finish_reason, "stop");
    EXPECT_EQ(streamed.usage["completion_tokens_details"], usage["completion_tokens_details"]);
  }
}

TEST_F(HarmonyRoutesTest, CallToAFunctionIsAToolCallWholeAndStreamed) {
  nlohmann::json body = Chat(4, kCallGrammar);
  body["tools"] = Tools();
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json choice = r.Json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  EXPECT_TRUE(choice["message"]["content"].is_null()) << r.body;
  EXPECT_TRUE(choice["message"]["reasoning_content"].is_string()) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  const nlohmann::json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function") << r.body;
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << r.body;
  EXPECT_EQ(call["function"]["name"], "get") << r.body;
  EXPECT_EQ(nlohmann::json::parse(call["function"]["arguments"].get<std::string>()),
            nlohmann::json({{"x", 1}}))
      << r.body;

  const Streamed streamed = StreamChat(port(), body);
  EXPECT_EQ(streamed.reasoning, choice["message"]["reasoning_content"]);
  EXPECT_EQ(streamed.content, "");
  EXPECT_EQ(streamed.calls, 1);
  EXPECT_EQ(streamed.names, "get");
  EXPECT_EQ(streamed.arguments, call["function"]["arguments"]);
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
}

// A preamble (commentary without a recipient) is content; a call to an undeclared function, or any call
// under tool_choice "none", is the message's text as content.
TEST_F(HarmonyRoutesTest, PreamblesAndCallsThatAreNotToolsAreContent) {
  nlohmann::json body =
      Chat(5, R"(root ::= "<|channel|>commentary<|message|>one moment<|end|><|start|>assistant<|channel|>)"
              R"(commentary to=functions.get<|message|>{\"x\": 2}")");
  body["tools"] = Tools();
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json message = r.Json()["choices"][0]["message"];
  EXPECT_EQ(message["content"], "one moment") << r.body;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << r.body;
  EXPECT_FALSE(message.contains("reasoning_content")) << r.body;

  body["tool_choice"] = "none";
  const HttpResponse none = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(none.status, 200) << none.body;
  message = none.Json()["choices"][0]["message"];
  EXPECT_EQ(message["content"], "one moment\n\n{\"x\": 2}") << none.body;
  EXPECT_FALSE(message.contains("tool_calls")) << none.body;
  EXPECT_EQ(none.Json()["choices"][0]["finish_reason"], "stop") << none.body;
  EXPECT_EQ(StreamChat(port(), body).content, message["content"]);
}

// reasoning_format none: the reply as generated, Harmony's markup and all, in content.
TEST_F(HarmonyRoutesTest, ReasoningFormatNoneKeepsTheReply) {
  nlohmann::json body = Chat(1, kAnswerGrammar);
  body["reasoning_format"] = "none";
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json message = r.Json()["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << r.body;
  EXPECT_EQ(message["content"].get<std::string>().rfind("<|channel|>analysis<|message|>", 0), 0u) << r.body;
  EXPECT_FALSE(r.Json()["usage"].contains("completion_tokens_details")) << r.body;
}

// Output constrained from the first token: a JSON reply is content, a forced call is the call (its grammar
// writes the arguments, not a Harmony message).
TEST_F(HarmonyRoutesTest, ConstrainedRepliesAreNotHarmony) {
  nlohmann::json body = Chat(2, "");
  body.erase("grammar");
  body["response_format"] = {{"type", "json_object"}};
  const HttpResponse json = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(json.status, 200) << json.body;
  const nlohmann::json message = json.Json()["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << json.body;
  EXPECT_EQ(message["content"].get<std::string>().rfind("{", 0), 0u) << json.body;

  body.erase("response_format");
  body["tools"] = Tools();
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get"}}}};
  const HttpResponse named = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(named.status, 200) << named.body;
  const nlohmann::json choice = named.Json()["choices"][0];
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << named.body;
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get") << named.body;
  body["tool_choice"] = "required";
  const HttpResponse required = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(required.status, 200) << required.body;
  EXPECT_GE(required.Json()["choices"][0]["message"]["tool_calls"].size(), 1u) << required.body;
}

// An earlier reply's reasoning (reasoning_content, or Ollama's `thinking`) reaches the template as
// `thinking`; beside tool calls its content is dropped (gpt-oss's template refuses both).
TEST_F(HarmonyRoutesTest, EarlierReasoningReachesTheTemplateAsThinking) {
  const auto rendered = [](const nlohmann::json& messages) {
    const HttpResponse r = Post(port(), "/apply-template", {{"messages", messages}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["prompt"].get<std::string>() : "";
  };
  const nlohmann::json reply = {{"role", "assistant"}, {"content", "Hello"}, {"reasoning_content", "greet"}};
  EXPECT_NE(
      rendered({{{"role", "user"}, {"content", "Hi"}}, reply})
          .find("<|channel|>analysis<|message|>greet<|end|><|start|>assistant<|channel|>final<|message|>"
                "Hello<|end|>"),
      std::string::npos);
  const nlohmann::json call = {
      {"role", "assistant"},
      {"content", "calling"},
      {"thinking", "need x"},
      {"tool_calls",
       {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "get"}, {"arguments", "{\"x\":3}"}}}}}}};
  const std::string prompt = rendered({{{"role", "user"}, {"content", "x?"}}, call});
  EXPECT_NE(prompt.find("<|channel|>analysis<|message|>need x<|end|><|start|>assistant to=functions.get"
                        "<|channel|>commentary json<|message|>{\"x\": 3}<|call|>"),
            std::string::npos)
      << prompt;
  EXPECT_EQ(prompt.find("calling"), std::string::npos) << prompt;
}

// The Responses API: the reasoning item and the message, whole and streamed alike (a random reply: the route
// takes no grammar), and reasoning_tokens within output_tokens.
TEST_F(HarmonyRoutesTest, ResponsesApiWholeAndStreamedAgree) {
  const nlohmann::json body = {{"input", "Hi"}, {"temperature", 1.0}, {"seed", 3}, {"max_output_tokens", 12}};
  const HttpResponse r = Post(port(), "/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json whole = r.Json();
  EXPECT_LE(whole["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>(),
            whole["usage"]["output_tokens"].get<int>())
      << r.body;
  nlohmann::json streamed = body;
  streamed["stream"] = true;
  nlohmann::json last;
  for (const std::string& data : Stream(port(), "/v1/responses", streamed)) {
    const nlohmann::json e = nlohmann::json::parse(data, nullptr, false);
    if (e.is_object() && e.contains("response")) last = e["response"];
  }
  nlohmann::json output = last["output"];
  nlohmann::json whole_output = whole["output"];
  for (nlohmann::json* items : {&output, &whole_output}) {
    for (nlohmann::json& o : *items) o.erase("id");
  }
  EXPECT_EQ(output, whole_output) << r.body;
}

}  // namespace harmony_routes_test
}  // namespace lockstep::server::testing
