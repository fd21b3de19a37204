// Chat templates with tools: the real templates of Llama 3.1, Qwen2.5, Mistral Nemo, Qwen3-Coder, Mistral
// Small 3.2, DeepSeek V3.1 and R1, GLM-4.6, GLM-4.7-Flash, Kimi K2 and Ministral 3 Reasoning, given `tools`
// and conversations with assistant tool_calls, tool results and an earlier reply's reasoning, must render
// exactly as the reference (Jinja2 with Hugging Face's settings; goldens made by
// testdata/make_tool_template_goldens.py) and raise where it raises. R1's template concatenates the arguments
// as a string: it gets them as JSON text (ChatTemplate::string_arguments), the others as objects. Ministral 3
// Reasoning's shows an earlier reply's reasoning only as a content block: it gets assistant messages' content
// as blocks (ChatTemplate::thinking_blocks). Kimi K2 Thinking's changes lists as it renders (list.append,
// pop): its reference is Jinja2's mutable sandbox. Key order matters (tojson prints it), so everything goes
// through ordered JSON. One deliberate difference: Gemma 4's prompt that ends a turn without opening the next
// gets "<|turn>model\n" (ChatTemplate::reopens_model_turn), as llama.cpp gives it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "reference_case.h"

namespace lockstep::chat {
namespace {

TEST(ToolTemplateTest, RealTemplatesRenderToolsLikeTheReference) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/tool_template_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::ordered_json goldens = nlohmann::ordered_json::parse(in);
  int checked = 0;
  int reopened = 0;
  for (const auto& c : goldens["cases"]) {
    const std::string family = c["family"];
    const ChatTemplate tmpl = ChatTemplate::Create(
        goldens["templates"][family], goldens["tokens"]["bos_token"], goldens["tokens"]["eos_token"]);
    ASSERT_FALSE(tmpl.is_default()) << family << ": " << tmpl.note();
    EXPECT_EQ(tmpl.string_arguments(), family == "deepseek-r1") << family;
    EXPECT_EQ(tmpl.thinking_blocks(), family == "ministral-3-reasoning") << family;
    const bool mistral_think = tmpl.reasoning_tags() && tmpl.reasoning_tags()->open == kMistralThinkTags.open;
    EXPECT_EQ(mistral_think, family == "ministral-3-reasoning") << family;
    const auto& messages = goldens["conversations"][c["conversation"].get<size_t>()];
    auto out = tmpl.Apply(messages, c["add_generation_prompt"].get<bool>(), goldens["tools"]);
    if (out.ok()) *out = testing::ReadTodayAs(*out, goldens["now"]);  // Mistral Small 3.2 shows the date
    EXPECT_EQ(tmpl.reopens_model_turn(), family == "gemma-4") << family;
    nlohmann::ordered_json expected = c;
    // Gemma 4's prompt for a reply after text + tool calls + their results ends with the closed turn:
    // lockstep opens the next one, as llama.cpp does (ChatTemplate::reopens_model_turn).
    if (family == "gemma-4" && c.contains("expected") && c["add_generation_prompt"].get<bool>() &&
        c["expected"].get<std::string>().ends_with("<turn|>\n")) {
      expected["expected"] = c["expected"].get<std::string>() + "<|turn>model\n";
      ++reopened;
    }
    testing::ExpectLikeTheReference(out, expected);
    ++checked;
  }
  EXPECT_EQ(checked, 180);
  EXPECT_EQ(reopened, 1);
}

TEST(ToolTemplateTest, NoToolsMeansToolsUndefined) {
  // Qwen2.5 takes its tool-free branch when `tools` is absent, as with apply_chat_template(tools=None).
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/tool_template_goldens.json");
  const nlohmann::ordered_json goldens = nlohmann::ordered_json::parse(in);
  const ChatTemplate tmpl = ChatTemplate::Create(goldens["templates"]["qwen2.5"], "<s>", "</s>");
  auto out =
      tmpl.Apply(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])"), true, nullptr);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->find("<tools>"), std::string::npos);
  EXPECT_NE(out->find("<|im_start|>user\nHi<|im_end|>"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::chat
