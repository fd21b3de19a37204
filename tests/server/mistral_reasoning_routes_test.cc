// Ministral 3 Reasoning's [THINK] ... [/THINK] replies end to end (chat/reasoning.h), on the tiny model with
// a vocabulary whose Mistral tokens are control tokens and Ministral 3 Reasoning's own template in the file,
// as its GGUF has them. Made to write the tags by logit_bias (a grammar writes no control token), /v1/chat/
// completions returns the block as reasoning_content, whole and streamed alike, with usage's
// reasoning_tokens; reasoning_format none keeps the tags in the content; an earlier reply's reasoning reaches
// the template as a thinking block ([THINK]...[/THINK] in the prompt).
#include <gtest/gtest.h>

#include "chat/reasoning.h"
#include "e2e_util.h"
#include "gguf/gguf_writer.h"
#include "test_client.h"
#include "testing/vocab/test_vocab.h"

namespace lockstep::server::testing {
namespace mistral_reasoning_routes_test {

constexpr int32_t kThink = 258, kEndThink = 259;

class MistralReasoningRoutesTest : public SharedServerTest<MistralReasoningRoutesTest> {
 public:
  static std::string Model() {
    std::vector<std::pair<std::string, int32_t>> pieces;
    for (const char* piece : {"</s>", "<s>", "[THINK]", "[/THINK]", "[INST]", "[/INST]", "[SYSTEM_PROMPT]",
                              "[/SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]"}) {
      pieces.emplace_back(piece, 3);
    }
    GgufWriter vocabulary = ::lockstep::testing::ByteLevelToyVocabulary(pieces);
    vocabulary.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(256));
    vocabulary.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(257));
    vocabulary.Set("tokenizer.chat_template", GgufValue::String(GoldenChatTemplate("ministral-3-reasoning")));
    return TinyModelWithVocabulary(vocabulary);
  }
  static std::vector<std::string> Args() { return {"-t", "1"}; }
};

// A short system message: the template's default one is longer than the tiny model's context.
nlohmann::json Biased(uint64_t seed, const nlohmann::json& bias, int max_tokens) {
  return {
      {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
      {"temperature", 1.0},
      {"seed", seed},
      {"max_tokens", max_tokens},
      {"logit_bias", bias}};
}

// [THINK] every time: the reply opens a block that never closes, all reasoning; with reasoning_format none
// the tags are the content.
TEST_F(MistralReasoningRoutesTest, ThinkTokensOpenTheBlockOrStayInTheContent) {
  nlohmann::json body = Biased(1, {{std::to_string(kThink), 100}}, 3);
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json whole = r.Json();
  const nlohmann::json& message = whole["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "[THINK][THINK]") << r.body;
  EXPECT_EQ(message["content"], "") << r.body;
  EXPECT_EQ(whole["usage"]["completion_tokens_details"]["reasoning_tokens"], 3) << r.body;
  body["reasoning_format"] = "none";
  const HttpResponse raw = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.Json()["choices"][0]["message"]["content"], "[THINK][THINK][THINK]") << raw.body;
  EXPECT_FALSE(raw.Json()["choices"][0]["message"].contains("reasoning_content")) << raw.body;
}

// Random replies of the two tags and text: whatever their shape, the whole response splits the reply's text
// (its tokens, from logprobs) as SplitReasoning does, and the stream gives the same reasoning, content and
// reasoning_tokens.
TEST_F(MistralReasoningRoutesTest, RandomRepliesSplitAndStreamAsTheyAnswerWhole) {
  const nlohmann::json bias = {{std::to_string(kThink), 9}, {std::to_string(kEndThink), 9}};
  int with_reasoning = 0, with_content = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    nlohmann::json body = Biased(seed, bias, 12);
    body["logprobs"] = true;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const nlohmann::json& choice = whole["choices"][0];
    const nlohmann::json& message = choice["message"];
    std::string text;
    for (const nlohmann::json& t : choice["logprobs"]["content"]) text += t["token"].get<std::string>();
    const chat::ReasoningSplit split = chat::SplitReasoning(text, chat::kMistralThinkTags, false, true);
    EXPECT_EQ(message.contains("reasoning_content"), split.reasoning.has_value()) << r.body;
    EXPECT_EQ(message.value("reasoning_content", ""), split.reasoning.value_or("")) << r.body;
    EXPECT_EQ(message["content"], split.content) << r.body;
    const StreamedChat streamed = StreamChat(port(), body);
    EXPECT_EQ(streamed.reasoning, message.value("reasoning_content", "")) << r.body;
    // (An empty reasoning has no delta to stream.)
    EXPECT_EQ(streamed.has_reasoning, !message.value("reasoning_content", "").empty()) << r.body;
    EXPECT_EQ(streamed.content, message["content"]) << r.body;
    EXPECT_EQ(streamed.usage["completion_tokens_details"], whole["usage"]["completion_tokens_details"])
        << r.body;
    with_reasoning += split.reasoning.has_value();
    with_content += !split.content.empty();
  }
  EXPECT_GE(with_reasoning, 2);
  EXPECT_GE(with_content, 2);
}

// An earlier reply's reasoning_content goes back to the template as a thinking block, which it shows.
TEST_F(MistralReasoningRoutesTest, EarlierReasoningReachesTheTemplate) {
  const nlohmann::json body = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "What is 2 + 2?"}},
        {{"role", "assistant"}, {"reasoning_content", "A simple sum."}, {"content", "4"}},
        {{"role", "user"}, {"content", "And 3 + 3?"}}}}};
  const HttpResponse r = Post(port(), "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt = r.Json()["prompt"];
  EXPECT_NE(
      prompt.find("[INST]What is 2 + 2?[/INST][THINK]A simple sum.[/THINK]4</s>[INST]And 3 + 3?[/INST]"),
      std::string::npos)
      << prompt;
}

}  // namespace mistral_reasoning_routes_test
}  // namespace lockstep::server::testing
