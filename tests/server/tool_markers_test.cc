// Tool-call markers that are control tokens (Mistral's [TOOL_CALLS], [ARGS], [CALL_ID]; Llama's
// <|python_tag|>; DeepSeek's, GLM's and Kimi's): ToolMarkerTokens finds them in a vocabulary, and through a
// real `lockstep serve` a chat request whose tools may be called (auto) keeps their text in its output, where
// a request without tools does not (control tokens give no text), so the parser sees what Mistral v11 writes.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "gguf/gguf_writer.h"
#include "server/tool_calls.h"
#include "test_client.h"
#include "testing/vocab/test_vocab.h"

namespace lockstep::server::testing {
namespace {

// A byte-level vocabulary: the 256 byte characters, then Mistral's markers and <|python_tag|> as control
// tokens, <tool_call> as a plain token (as Qwen2.5's), and <|endoftext|> (EOS).
GgufWriter MarkerVocabulary() {
  GgufWriter w = ::lockstep::testing::ByteLevelToyVocabulary({{"[TOOL_CALLS]", 3},
                                                              {"[ARGS]", 3},
                                                              {"[CALL_ID]", 3},
                                                              {"<|python_tag|>", 3},
                                                              {"<|endoftext|>", 3},
                                                              {"<tool_call>", 1}});
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(260));
  w.Set("tokenizer.ggml.add_bos_token", GgufValue::Bool(false));
  return w;
}

TEST(ToolMarkers, ControlTokenMarkersOfAVocabulary) {
  auto tokenizer = ::lockstep::testing::ToyTokenizer(MarkerVocabulary());
  ASSERT_NE(tokenizer, nullptr);
  // [TOOL_CALLS] [ARGS] [CALL_ID] <|python_tag|>; not <tool_call> (plain text already), not <|endoftext|>.
  EXPECT_EQ(ToolMarkerTokens(*tokenizer), (std::vector<int32_t>{256, 257, 258, 259}));
}

TEST(ToolMarkers, DeepSeekGlmAndKimiMarkersOfAVocabulary) {
  // Their markers as control tokens (ids 256..), with <tool_call> plain again and <|endoftext|> last.
  const std::vector<std::string> markers = {"<｜tool▁calls▁begin｜>",
                                            "<｜tool▁calls▁end｜>",
                                            "<｜tool▁call▁begin｜>",
                                            "<｜tool▁call▁end｜>",
                                            "<｜tool▁sep｜>",
                                            "<arg_key>",
                                            "</arg_key>",
                                            "<arg_value>",
                                            "</arg_value>",
                                            "<|tool_calls_section_begin|>",
                                            "<|tool_calls_section_end|>",
                                            "<|tool_call_begin|>",
                                            "<|tool_call_argument_begin|>",
                                            "<|tool_call_end|>"};
  std::vector<std::pair<std::string, int32_t>> tokens;
  for (const std::string& m : markers) tokens.push_back({m, 3});
  tokens.push_back({"<tool_call>", 1});
  tokens.push_back({"<|endoftext|>", 3});
  auto tokenizer = ::lockstep::testing::ToyTokenizer(::lockstep::testing::ByteLevelToyVocabulary(tokens));
  ASSERT_NE(tokenizer, nullptr);
  std::vector<int32_t> want;
  for (size_t i = 0; i < markers.size(); ++i) want.push_back(int32_t(256 + i));
  EXPECT_EQ(ToolMarkerTokens(*tokenizer), want);
}

class ToolMarkersServerTest : public SharedServerTest<ToolMarkersServerTest> {
 public:
  static std::string Model() { return TinyModelWithVocabulary(MarkerVocabulary()); }
};

TEST_F(ToolMarkersServerTest, AutoToolsKeepMarkerTextOthersDoNot) {
  // [TOOL_CALLS] (id 256) forced for every token: the text is three markers (not a call: no name), kept as
  // content with tools, and nothing without.
  nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                         {"max_tokens", 3},
                         {"logit_bias", {{"256", 100}}}};
  const HttpResponse plain = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.Json()["choices"][0]["message"]["content"], "");
  body["tools"] = {{{"type", "function"}, {"function", {{"name", "add"}}}}};
  const HttpResponse tools = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(tools.status, 200) << tools.body;
  EXPECT_EQ(tools.Json()["choices"][0]["message"]["content"], "[TOOL_CALLS][TOOL_CALLS][TOOL_CALLS]")
      << tools.body;
  // A forced choice is grammar-constrained JSON: no markers to keep.
  body["tool_choice"] = "required";
  body["logit_bias"] = nlohmann::json::object();
  EXPECT_EQ(Post(port(), "/v1/chat/completions", body).status, 200);
}

}  // namespace
}  // namespace lockstep::server::testing
