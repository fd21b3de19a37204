// Forced tool choices in the model's own call syntax end to end (server/tool_grammar.h), through a real
// `lockstep serve` of the tiny model with a vocabulary whose markers are control tokens, as the families'
// GGUFs have them: Gemma 4 (<|tool_call>call:NAME{...}<tool_call|>, values in its own syntax, a template
// that writes its thought channel) and Ministral 3 (its own template: [TOOL_CALLS]NAME[ARGS]{...}). The
// random-weight model, held to the grammar, writes its family's markers as those tokens (the reply's
// logprobs show them), the response has tool_calls with arguments valid against the schema, streamed alike,
// and a reasoning block may come first (Gemma 4's thought channel, made likely by logit_bias).
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "gguf/gguf_writer.h"
#include "test_client.h"
#include "testing/vocab/test_vocab.h"

namespace lockstep::server::testing {
namespace tool_syntax_routes_test {

// Byte-level vocabulary: the 256 byte characters, then `pieces` as control tokens from id 256 (the first
// is EOS).
GgufWriter Vocabulary(const std::vector<std::string>& pieces, const std::string& chat_template) {
  std::vector<std::pair<std::string, int32_t>> tokens;
  for (const std::string& piece : pieces) tokens.emplace_back(piece, 3);
  GgufWriter w = ::lockstep::testing::ByteLevelToyVocabulary(tokens);
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(256));
  w.Set("tokenizer.ggml.add_bos_token", GgufValue::Bool(false));
  w.Set("tokenizer.chat_template", GgufValue::String(chat_template));
  return w;
}

// A short template in Gemma 4's form (the real one's tool declarations do not fit the tiny model's 256
// positions): turns, an earlier reply's calls as its template writes them, the thought channel closed
// after the generation prompt.
constexpr const char* kGemma4Template =
    "{%- for m in messages -%}<|turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{%- if m.tool_calls -%}{%- for c in m.tool_calls -%}<|tool_call>call:{{ c.function.name }}{}<tool_call|>"
    "{%- endfor -%}{%- else -%}{{ m.content }}{%- endif -%}<turn|>\n{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|turn>model\n{%- if not enable_thinking | default(false) -%}"
    "<|channel>thought\n<channel|>{%- endif -%}{%- endif -%}";
// Gemma 4's markers: ids 257.. after EOS.
constexpr int32_t kToolCall = 257, kToolCallEnd = 258, kQuote = 259, kChannel = 260, kChannelEnd = 261;
// The grammar lets a marker be written as its control token or spelled out in byte tokens, as a model
// may; the random-weight model is nudged to the tokens a trained one writes.
const nlohmann::json kMarkerBias = {
    {std::to_string(kToolCall), 4}, {std::to_string(kToolCallEnd), 4}, {std::to_string(kQuote), 4}};

const nlohmann::json kAddTool = {{"type", "function"},
                                 {"function",
                                  {{"name", "add"},
                                   {"parameters",
                                    {{"type", "object"},
                                     {"properties",
                                      {{"a", {{"type", "integer"}, {"maximum", 99}}},
                                       {"b", {{"type", "string"}, {"pattern", "^[a-z]{1,3}$"}}}}},
                                     {"required", {"a", "b"}}}}}}};

nlohmann::json Forced(uint64_t seed, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
          {"tools", nlohmann::json::array({kAddTool})},
          {"tool_choice", {{"type", "function"}, {"function", {{"name", "add"}}}}},
          {"parallel_tool_calls", false},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_tokens", max_tokens},
          {"logprobs", true}};
}

// The call's arguments: {a: integer <= 99, b: 1-3 of a-z}.
void ExpectValidAdd(const nlohmann::json& message, const std::string& where) {
  ASSERT_TRUE(message["tool_calls"].is_array()) << where;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << where;
  const nlohmann::json& f = message["tool_calls"][0]["function"];
  EXPECT_EQ(f["name"], "add") << where;
  const nlohmann::json args = nlohmann::json::parse(f["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << where;
  EXPECT_EQ(args.size(), 2u) << where;
  EXPECT_TRUE(args["a"].is_number_integer() && args["a"].get<int64_t>() <= 99) << where;
  ASSERT_TRUE(args["b"].is_string()) << where;
  const std::string b = args["b"].get<std::string>();
  EXPECT_TRUE(!b.empty() && b.size() <= 3 &&
              b.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos)
      << where;
}

std::string Tokens(const nlohmann::json& choice) {
  std::string text;
  for (const nlohmann::json& t : choice["logprobs"]["content"]) text += t["token"].get<std::string>() + "|";
  return text;
}

class Gemma4ToolRoutesTest : public SharedServerTest<Gemma4ToolRoutesTest> {
 public:
  static std::string Model() {
    return TinyModelWithVocabulary(Vocabulary(
        {"<eos>", "<|tool_call>", "<tool_call|>", "<|\"|>", "<|channel>", "<channel|>", "<|turn>", "<turn|>"},
        kGemma4Template));
  }
  static std::vector<std::string> Args() { return {"-t", "1"}; }
};

TEST_F(Gemma4ToolRoutesTest, ANamedChoiceIsACallInGemmasSyntax) {
  for (uint64_t seed = 0; seed < 4; ++seed) {
    nlohmann::json body = Forced(seed, 60);
    body["logit_bias"] = kMarkerBias;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const nlohmann::json& choice = whole["choices"][0];
    const std::string where = "seed " + std::to_string(seed) + ": " + r.body;
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << where;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << where;
    ExpectValidAdd(choice["message"], where);
    // Written as Gemma writes it: the call marker token first, then call:add{a:..,b:<|"|>..<|"|>}.
    const std::string tokens = Tokens(choice);
    EXPECT_EQ(tokens.rfind("<|tool_call>|c|a|l|l|:|a|d|d|{|a|:|", 0), 0u) << tokens;
    EXPECT_NE(tokens.find("b|:|<|\"|>|"), std::string::npos) << tokens;
    EXPECT_NE(tokens.find("<tool_call|>|"), std::string::npos) << tokens;
    // Streamed alike.
    body.erase("logprobs");
    const StreamedChat streamed = StreamChat(port(), body);
    EXPECT_EQ(streamed.names, "add") << where;
    EXPECT_EQ(
        nlohmann::json::parse(streamed.arguments),
        nlohmann::json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()))
        << where;
    EXPECT_EQ(streamed.finish_reason, "tool_calls") << where;
  }
}

TEST_F(Gemma4ToolRoutesTest, TheThoughtChannelMayComeBeforeTheCall) {
  nlohmann::json body = Forced(3, 80);
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  body["logit_bias"] = kMarkerBias;
  body["logit_bias"][std::to_string(kChannel)] = 50;      // opens the block
  body["logit_bias"][std::to_string(kChannelEnd)] = 100;  // and closes it at once
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json whole = r.Json();
  const nlohmann::json& choice = whole["choices"][0];
  const std::string tokens = Tokens(choice);
  EXPECT_EQ(tokens.rfind("<|channel>|t|h|o|u|g|h|t|", 0), 0u) << tokens;
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  EXPECT_TRUE(choice["message"]["reasoning_content"].is_string()) << r.body;
  ExpectValidAdd(choice["message"], r.body);
  // The block closes, and the call (no bias on its marker) follows: the grammar allows nothing else.
  EXPECT_NE(tokens.find("<channel|>|<|tool_call>|"), std::string::npos) << tokens;
}

class MinistralToolRoutesTest : public SharedServerTest<MinistralToolRoutesTest> {
 public:
  static std::string Model() {
    GgufWriter vocabulary =
        Vocabulary({"</s>", "<s>", "[THINK]", "[/THINK]", "[INST]", "[/INST]", "[SYSTEM_PROMPT]",
                    "[/SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]"},
                   GoldenChatTemplate("ministral-3-reasoning"));
    vocabulary.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(257));
    return TinyModelWithVocabulary(vocabulary);
  }
  static std::vector<std::string> Args() { return {"-t", "1"}; }
};

TEST_F(MinistralToolRoutesTest, ANamedChoiceIsACallInMistralsSyntax) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    nlohmann::json body = Forced(seed, 40);
    body["messages"] = {{{"role", "system"}, {"content", "."}}, {{"role", "user"}, {"content", "Hi"}}};
    body["tools"][0]["function"]["parameters"]["properties"].erase("b");
    body["tools"][0]["function"]["parameters"]["required"] = nlohmann::json::array({"a"});
    body["logit_bias"] = {{"264", 10}, {"265", 10}};  // [TOOL_CALLS], [ARGS] as tokens (see kMarkerBias)
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const nlohmann::json& choice = whole["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
    const nlohmann::json& calls = choice["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << r.body;
    EXPECT_EQ(calls[0]["function"]["name"], "add");
    EXPECT_EQ(calls[0]["id"].get<std::string>().size(), 9u) << r.body;  // Mistral's ids
    const nlohmann::json args = nlohmann::json::parse(calls[0]["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(args["a"].is_number_integer() && args["a"].get<int64_t>() <= 99) << r.body;
    const std::string tokens = Tokens(choice);
    EXPECT_EQ(tokens.rfind("[TOOL_CALLS]|a|d|d|", 0), 0u) << tokens;
    EXPECT_NE(tokens.find("[ARGS]|{|"), std::string::npos) << tokens;
  }
}

}  // namespace tool_syntax_routes_test
}  // namespace lockstep::server::testing
