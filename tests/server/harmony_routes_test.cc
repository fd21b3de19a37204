// gpt-oss's Harmony replies end to end (chat/harmony.h, server/harmony_reply.h), on the tiny model with a
// vocabulary whose Harmony tokens are control tokens and a Harmony template in the file, as a gpt-oss GGUF
// has them. Made to write Harmony messages by a GBNF grammar (spelled as text: a grammar writes no control
// token), it answers /v1/chat/completions with the analysis channel as reasoning_content, the final channel
// as content and messages to functions.* as tool_calls, whole and streamed alike, with usage's
// reasoning_tokens; an earlier reply's reasoning reaches the template as `thinking`; a forced tool choice's
// grammar writes its call as a Harmony message (the header's tokens as control tokens); reasoning_format none
// and JSON outputs keep the reply as it is, Harmony's tokens included, tools or not. Made to write the
// control tokens by logit_bias: <|end|> does not end a reply, <|return|> does, and the tokens' text reaches
// the split.
#include <gtest/gtest.h>

#include <regex>

#include "e2e_util.h"
#include "gguf/gguf_writer.h"
#include "test_client.h"
#include "testing/vocab/test_vocab.h"

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

// The tiny model with a byte-level vocabulary whose Harmony tokens are control tokens (<|return|> its EOS)
// and the Harmony template in the file, as a gpt-oss GGUF has them. (A grammar writes Harmony as text, of
// byte tokens: it cannot write control tokens; logit_bias can.)
class HarmonyRoutesTest : public SharedServerTest<HarmonyRoutesTest> {
 public:
  static std::string Model() {
    std::vector<std::pair<std::string, int32_t>> pieces;
    for (const char* piece : {"<|return|>", "<|start|>", "<|channel|>", "<|message|>", "<|end|>",
                              "<|constrain|>", "<|call|>", "<|endoftext|>"}) {
      pieces.emplace_back(piece, 3);
    }
    GgufWriter vocabulary = ::lockstep::testing::ByteLevelToyVocabulary(pieces);
    vocabulary.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(256));
    vocabulary.Set("tokenizer.chat_template", GgufValue::String(kTemplate));
    return TinyModelWithVocabulary(vocabulary);
  }
  static std::vector<std::string> Args() { return {"-t", "1"}; }
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

constexpr int32_t kReturn = 256, kStart = 257, kChannel = 258, kMessage = 259, kEnd = 260;

nlohmann::json Biased(uint64_t seed, const nlohmann::json& bias, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_tokens", max_tokens},
          {"logit_bias", bias}};
}

// A reasoning message, then the answer.
const char* const kAnswerGrammar =
    R"(root ::= "<|channel|>analysis<|message|>" [a-z ]{3,12} "<|end|><|start|>assistant<|channel|>final<|message|>" [a-z]{1,8})";
// A reasoning message, then a call to get.
const char* const kCallGrammar =
    R"(root ::= "<|channel|>analysis<|message|>" [a-z ]{3,12} "<|end|><|start|>assistant<|channel|>commentary to=functions.get <|constrain|>json<|message|>{\"x\": 1}")";

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

    const StreamedChat streamed = StreamChat(port(), body);
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

  const StreamedChat streamed = StreamChat(port(), body);
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

// Output constrained from the first token to JSON is content, not Harmony.
TEST_F(HarmonyRoutesTest, JsonRepliesAreNotHarmony) {
  nlohmann::json body = Chat(2, "");
  body.erase("grammar");
  body["response_format"] = {{"type", "json_object"}};
  const HttpResponse json = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(json.status, 200) << json.body;
  const nlohmann::json message = json.Json()["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << json.body;
  EXPECT_EQ(message["content"].get<std::string>().rfind("{", 0), 0u) << json.body;
}

// A forced choice (a named function or "required") writes its call as a Harmony message to functions.get,
// the generated tokens show (server/tool_grammar.h kHarmony), perhaps after an analysis message where
// reasoning is split (its <|end|> favoured so that it stays short): one call with valid arguments,
// whole and streamed alike; reasoning_format none gives the same call and no reasoning.
TEST_F(HarmonyRoutesTest, ForcedCallsAreHarmonyMessages) {
  const nlohmann::json named = {{"type", "function"}, {"function", {{"name", "get"}}}};
  int analysed = 0;
  for (const nlohmann::json& choice_field : {named, nlohmann::json("required")}) {
    for (const char* format : {"auto", "none"}) {
      for (uint64_t seed = 0; seed < 3; ++seed) {
        // Seed 0 favours <|channel|> and 'a' as well: an analysis message where reasoning is split.
        nlohmann::json bias = {{std::to_string(kEnd), 8}};
        if (seed == 0) bias.update({{std::to_string(kChannel), 6}, {std::to_string('a'), 6}});
        nlohmann::json body = Biased(seed, bias, 190);
        body["tools"] = Tools();
        body["tool_choice"] = choice_field;
        body["reasoning_format"] = format;
        body["logprobs"] = true;
        const HttpResponse r = Post(port(), "/v1/chat/completions", body);
        ASSERT_EQ(r.status, 200) << r.body;
        const nlohmann::json choice = r.Json()["choices"][0];
        const nlohmann::json& message = choice["message"];
        std::string text;
        for (const nlohmann::json& t : choice["logprobs"]["content"]) text += t["token"].get<std::string>();
        EXPECT_NE(text.find("to=functions.get"), std::string::npos) << r.body;
        EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
        ASSERT_EQ(message["tool_calls"].size(), 1u) << r.body;
        const nlohmann::json& function = message["tool_calls"][0]["function"];
        EXPECT_EQ(function["name"], "get") << r.body;
        const nlohmann::json args =
            nlohmann::json::parse(function["arguments"].get<std::string>(), nullptr, false);
        ASSERT_TRUE(args.is_object()) << r.body;
        if (args.contains("x")) {
          EXPECT_TRUE(args["x"].is_number_integer()) << r.body;
        }
        EXPECT_TRUE(message["content"].is_null()) << r.body;
        if (std::string(format) == "none") {
          EXPECT_FALSE(message.contains("reasoning_content")) << r.body;
          EXPECT_EQ(text.find("<|channel|>analysis"), std::string::npos) << r.body;
        } else {
          analysed += message.contains("reasoning_content");
          EXPECT_EQ(message.contains("reasoning_content"), text.rfind("<|channel|>analysis", 0) == 0)
              << r.body;
        }

        body.erase("logprobs");
        const StreamedChat streamed = StreamChat(port(), body);
        EXPECT_EQ(streamed.reasoning, message.value("reasoning_content", "")) << r.body;
        EXPECT_EQ(streamed.content, "") << r.body;
        EXPECT_EQ(streamed.calls, 1) << r.body;
        EXPECT_EQ(streamed.names, "get") << r.body;
        EXPECT_EQ(streamed.arguments, function["arguments"]) << r.body;
        EXPECT_EQ(streamed.finish_reason, "tool_calls") << r.body;
      }
    }
  }
  EXPECT_EQ(analysed, 2);  // seed 0's: the grammar lets an analysis message come first
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

TEST_F(HarmonyRoutesTest, EndGoesOnReturnStopsAndTheTokensReachTheSplit) {
  const HttpResponse rendered = Post(port(), "/apply-template", Biased(0, nlohmann::json::object(), 1));
  ASSERT_EQ(rendered.status, 200) << rendered.body;
  const std::string prompt = rendered.Json()["prompt"];
  EXPECT_EQ(prompt.substr(prompt.size() - 18), "<|start|>assistant") << prompt;
  // <|end|> every time: the reply goes on to max_tokens, its text kept (no message header: content).
  nlohmann::json body = Biased(1, {{std::to_string(kEnd), 100}}, 6);
  const HttpResponse end = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(end.status, 200) << end.body;
  EXPECT_EQ(end.Json()["choices"][0]["finish_reason"], "length") << end.body;
  EXPECT_EQ(end.Json()["usage"]["completion_tokens"], 6) << end.body;
  EXPECT_EQ(end.Json()["choices"][0]["message"]["content"], "<|end|><|end|><|end|><|end|><|end|><|end|>")
      << end.body;
  // <|return|>: the reply ends there.
  body = Biased(1, {{std::to_string(kReturn), 100}}, 6);
  const HttpResponse ret = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(ret.status, 200) << ret.body;
  EXPECT_EQ(ret.Json()["choices"][0]["finish_reason"], "stop") << ret.body;
  EXPECT_EQ(ret.Json()["usage"]["completion_tokens"], 1) << ret.body;
  EXPECT_EQ(ret.Json()["choices"][0]["message"]["content"], "") << ret.body;
}

// The Responses API's forced choices take the same grammar: the call is a function_call item, after a
// reasoning item where the model wrote an analysis message (seed 0, favoured as above).
TEST_F(HarmonyRoutesTest, ResponsesForcedCallIsAFunctionCallItem) {
  const nlohmann::json tool = {
      {"type", "function"}, {"name", "get"}, {"parameters", Tools()[0]["function"]["parameters"]}};
  for (uint64_t seed = 0; seed < 2; ++seed) {
    nlohmann::json bias = {{std::to_string(kEnd), 8}};
    if (seed == 0) bias.update({{std::to_string(kChannel), 6}, {std::to_string('a'), 6}});
    const nlohmann::json body = {
        {"input", "Hi"},
        {"temperature", 1.0},
        {"seed", seed},
        {"max_output_tokens", 190},
        {"logit_bias", bias},
        {"tools", {tool}},
        {"tool_choice",
         seed == 0 ? nlohmann::json("required") : nlohmann::json({{"type", "function"}, {"name", "get"}})}};
    const HttpResponse r = Post(port(), "/v1/responses", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json output = r.Json()["output"];
    ASSERT_EQ(output.size(), seed == 0 ? 2u : 1u) << r.body;
    if (seed == 0) {
      EXPECT_EQ(output[0]["type"], "reasoning") << r.body;
    }
    const nlohmann::json& call = output.back();
    EXPECT_EQ(call["type"], "function_call") << r.body;
    EXPECT_EQ(call["name"], "get") << r.body;
    EXPECT_TRUE(nlohmann::json::parse(call["arguments"].get<std::string>(), nullptr, false).is_object())
        << r.body;
  }
}

// reasoning_format none keeps the reply as generated, Harmony's control tokens spelled out, with or without
// tools (llama.cpp preserves them for gpt-oss in every request): the same text either way.
TEST_F(HarmonyRoutesTest, ReasoningFormatNoneKeepsHarmonysTokensToolsOrNot) {
  nlohmann::json body = Biased(2, {{std::to_string(kChannel), 100}, {std::to_string(kMessage), 100}}, 4);
  body["reasoning_format"] = "none";
  for (bool tools : {false, true}) {
    if (tools) body["tools"] = Tools();
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string content = r.Json()["choices"][0]["message"]["content"];
    EXPECT_EQ(content.size(), 4 * std::string("<|channel|>").size()) << r.body;
    EXPECT_EQ(content.find_first_not_of("<|channelmsg>"), std::string::npos) << r.body;
    EXPECT_EQ(StreamChat(port(), body).content, content) << r.body;
  }
}

// Random replies of Harmony's structural tokens alone (their bias drowns every other token): whatever their
// shape, the stream gives the whole response's reasoning, content, calls and usage, and the messages are
// taken apart (the content is not the reply's text).
TEST_F(HarmonyRoutesTest, RandomRepliesStreamAsTheyAnswerWhole) {
  const nlohmann::json bias = {{std::to_string(kStart), 100},
                               {std::to_string(kChannel), 100},
                               {std::to_string(kMessage), 100},
                               {std::to_string(kEnd), 100}};
  int parsed = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    nlohmann::json body = Biased(seed, bias, 40);
    body["tools"] = Tools();
    body["logprobs"] = true;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const nlohmann::json& choice = whole["choices"][0];
    const nlohmann::json& message = choice["message"];
    const std::string content = message["content"].is_string() ? message["content"].get<std::string>() : "";
    const StreamedChat streamed = StreamChat(port(), body);
    EXPECT_EQ(streamed.reasoning, message.value("reasoning_content", "")) << r.body;
    EXPECT_EQ(streamed.has_reasoning, message.contains("reasoning_content")) << r.body;
    EXPECT_EQ(streamed.content, content) << r.body;
    EXPECT_EQ(streamed.calls, message.contains("tool_calls") ? message["tool_calls"].size() : 0u) << r.body;
    EXPECT_EQ(streamed.finish_reason, choice["finish_reason"]) << r.body;
    EXPECT_EQ(streamed.usage["completion_tokens_details"], whole["usage"]["completion_tokens_details"])
        << r.body;
    std::string text;
    for (const nlohmann::json& t : choice["logprobs"]["content"]) text += t["token"].get<std::string>();
    parsed += content != text;
  }
  EXPECT_GE(parsed, 2);  // 4 of the 12 (a reply may open with <|end|>: not a header, all content)
}

}  // namespace harmony_routes_test
}  // namespace lockstep::server::testing
