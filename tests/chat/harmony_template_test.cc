// gpt-oss's chat template (Harmony): the real template, given tools or none, reasoning_effort, builtin_tools
// and model_identity, and conversations as the server hands them to it (earlier reasoning as `thinking`,
// calls, tool results), must render exactly as the reference (Jinja2 with Hugging Face's settings; goldens
// made by testdata/make_harmony_template_goldens.py) and raise where it raises (its own checks of the
// messages). Key order matters (tojson prints it), so everything goes through ordered JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/harmony.h"
#include "reference_case.h"

namespace lockstep::chat {
namespace harmony_template_test {

nlohmann::ordered_json Goldens() {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/harmony_template_goldens.json");
  EXPECT_TRUE(in.good());
  return in.good() ? nlohmann::ordered_json::parse(in) : nlohmann::ordered_json::object();
}

TEST(HarmonyTemplateTest, GptOssTemplateRendersLikeTheReference) {
  const nlohmann::ordered_json goldens = Goldens();
  ASSERT_TRUE(goldens.contains("cases"));
  const std::string& source = goldens["templates"]["gpt-oss"].get_ref<const std::string&>();
  EXPECT_TRUE(IsHarmonyTemplate(source));
  const ChatTemplate tmpl =
      ChatTemplate::Create(source, goldens["tokens"]["bos_token"], goldens["tokens"]["eos_token"]);
  ASSERT_FALSE(tmpl.is_default()) << tmpl.note();
  EXPECT_TRUE(tmpl.harmony());
  EXPECT_FALSE(ChatTemplate::Create("{{ messages[0].content }}", "", "").harmony());
  int checked = 0;
  for (const auto& c : goldens["cases"]) {
    nlohmann::ordered_json variables = goldens["variants"][c["variant"].get<size_t>()];
    ChatTemplateInput input;
    input.messages = goldens["conversations"][c["conversation"].get<size_t>()];
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    input.tools = variables["tools"];
    variables.erase("tools");
    input.extra = variables;
    auto out = tmpl.Apply(input);
    if (out.ok()) *out = testing::ReadTodayAs(*out, goldens["now"]);  // "Current date: ..."
    SCOPED_TRACE("variant " + c["variant"].dump());
    testing::ExpectLikeTheReference(out, c);
    ++checked;
  }
  EXPECT_EQ(checked, 64);
}

}  // namespace harmony_template_test
}  // namespace lockstep::chat
