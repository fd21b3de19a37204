// Built-in chat templates and SelectChatTemplate: every built-in renders exactly like the real template it
// copies (the Jinja2 goldens); overrides by name, by file and by tokenizer_config.json; clear errors; the
// warning when the vocabulary lacks the template's special tokens.
#include "chat/template_selection.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/builtin_templates.h"
#include "testing/testdata.h"

namespace lockstep::chat {
namespace {

nlohmann::json LoadSelectionGoldens() {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/chat_template_goldens.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

// The golden template each built-in copies.
std::string GoldenName(const std::string& builtin) { return builtin == "qwen2" ? "qwen2.5" : builtin; }

TEST(BuiltinTemplatesTest, EachRendersLikeTheRealTemplate) {
  const nlohmann::json goldens = LoadSelectionGoldens();
  int checked = 0;
  for (const BuiltinTemplate& builtin : BuiltinTemplates()) {
    const std::string golden = GoldenName(builtin.name);
    ASSERT_TRUE(goldens["templates"].contains(golden)) << builtin.name;
    EXPECT_EQ(std::string(builtin.source), goldens["templates"][golden].get<std::string>()) << builtin.name;
    auto tmpl = ChatTemplate::Parse(builtin.source, builtin.name, goldens["tokens"]["bos_token"],
                                    goldens["tokens"]["eos_token"]);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    for (const auto& c : goldens["cases"]) {
      if (c["family"] != golden) continue;
      ChatTemplateInput input;
      input.messages = goldens["conversations"][c["conversation"].get<int>()];
      input.add_generation_prompt = c["add_generation_prompt"];
      input.extra = goldens["context"];
      auto out = tmpl->Apply(input);
      const bool merged = !tmpl->shows_system() && input.messages[0]["role"] == "system";
      if (c.contains("error") && merged) {  // "System role not supported": merged into the user turn instead
        EXPECT_TRUE(out.ok()) << builtin.name << ": " << out.status().ToString();
      } else if (c.contains("error")) {
        EXPECT_FALSE(out.ok()) << builtin.name;
      } else {
        ASSERT_TRUE(out.ok()) << builtin.name << ": " << out.status().ToString();
        EXPECT_EQ(*out, c["expected"].get<std::string>()) << builtin.name;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 60);
}

TEST(BuiltinTemplatesTest, NamesAndFamilies) {
  for (const char* name : {"chatml", "llama2", "llama3", "mistral", "gemma", "phi3", "qwen2", "zephyr"}) {
    const BuiltinTemplate* t = FindBuiltinTemplate(name);
    ASSERT_NE(t, nullptr) << name;
    const std::string family = DetectChatTemplateFamily(t->source);
    EXPECT_EQ(family, name == std::string("qwen2") ? "chatml" : name);
    EXPECT_NE(BuiltinTemplateNames().find(name), std::string::npos);
  }
  EXPECT_EQ(FindBuiltinTemplate("chatml2"), nullptr);
  EXPECT_EQ(FamilySpecialTokens("default"), (std::vector<std::string>{"<|im_start|>", "<|im_end|>"}));
  EXPECT_TRUE(FamilySpecialTokens("llama2").empty());
}

TEST(ChatTemplateInputTest, ToolsAndExtraVariablesReachTheTemplate) {
  auto tmpl = ChatTemplate::Parse(
      "{{ bos_token }}{% if tools %}{{ tools | length }} tools: {{ tools[0].function.name }}{% endif %}"
      "|{{ enable_thinking }}|{{ messages | length }}",
      "test", "<s>", "</s>");
  ASSERT_TRUE(tmpl.ok());
  ChatTemplateInput input;
  input.messages = nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])");
  input.tools = nlohmann::json::parse(R"([{"type":"function","function":{"name":"get_weather"}}])");
  input.extra = {{"enable_thinking", false}, {"bos_token", "not this"}, {"messages", "nor this"}};
  auto out = tmpl->Apply(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<s>1 tools: get_weather|False|1");
  input.tools = nullptr;  // none: `if tools` is false, `tools is none` true
  auto plain = tmpl->Apply(input);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "<s>|False|1");
}

class SelectChatTemplateTest : public ::testing::Test {
 protected:
  // A vocabulary-only GGUF file of the shared test data (no tokenizer.chat_template).
  void Load(const std::string& vocab) {
    auto file = GgufFile::Open(lockstep::testing::TestDataPath("vocab/ggml-vocab-" + vocab + ".gguf"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(file).value();
    auto tokenizer = Tokenizer::FromGguf(*file_);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
    tokenizer_ = std::move(tokenizer).value();
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = lockstep::testing::MakeTempDir("chat-template") + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(SelectChatTemplateTest, DefaultWarnsWhenTheVocabularyLacksChatMlTokens) {
  LOCKSTEP_REQUIRE_TESTDATA();
  Load("llama-spm");
  auto selected = SelectChatTemplate(*file_, *tokenizer_, "");
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_TRUE(selected->chat_template->is_default());
  EXPECT_EQ(selected->origin, "default");
  ASSERT_EQ(selected->warnings.size(), 2u);  // no template in the file; and no <|im_start|> token
  EXPECT_NE(selected->warnings[0].find("the model has none"), std::string::npos) << selected->warnings[0];
  const std::string& w = selected->warnings[1];
  EXPECT_NE(w.find("<|im_start|>, <|im_end|>"), std::string::npos) << w;
  EXPECT_NE(w.find("--chat-template FILE|NAME"), std::string::npos) << w;
  EXPECT_NE(w.find("llama2"), std::string::npos) << w;  // a built-in without special tokens fits
  EXPECT_EQ(w.find("phi3"), std::string::npos) << w;    // llama-spm has no <|user|>
  EXPECT_EQ(selected->chat_template->bos_token(), "<s>");
  EXPECT_EQ(selected->chat_template->eos_token(), "</s>");
}

TEST_F(SelectChatTemplateTest, BuiltinByNameWithItsTokensInTheVocabularyGivesNoWarning) {
  LOCKSTEP_REQUIRE_TESTDATA();
  Load("phi-3");
  EXPECT_TRUE(MissingSpecialTokens(*tokenizer_, {"<|user|>", "<|assistant|>", "<|end|>"}).empty());
  auto selected = SelectChatTemplate(*file_, *tokenizer_, "phi3");
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_EQ(selected->origin, "built-in phi3");
  EXPECT_EQ(selected->chat_template->family(), "phi3");
  EXPECT_TRUE(selected->warnings.empty()) << selected->warnings[0];
  auto out =
      selected->chat_template->Apply(nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])"), true);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|user|>\nHi<|end|>\n<|assistant|>\n");

  auto chatml = SelectChatTemplate(*file_, *tokenizer_, "llama3");  // phi-3's vocabulary has no <|eot_id|>
  ASSERT_TRUE(chatml.ok());
  ASSERT_EQ(chatml->warnings.size(), 1u);
  EXPECT_NE(chatml->warnings[0].find("<|start_header_id|>"), std::string::npos) << chatml->warnings[0];
  EXPECT_NE(chatml->warnings[0].find("phi3"), std::string::npos) << chatml->warnings[0];
}

TEST_F(SelectChatTemplateTest, FilesAndTokenizerConfigs) {
  LOCKSTEP_REQUIRE_TESTDATA();
  Load("llama-spm");
  const std::string jinja =
      WriteFile("t.jinja", "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}");
  auto from_file = SelectChatTemplate(*file_, *tokenizer_, jinja);
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  EXPECT_EQ(from_file->origin, "file " + jinja);
  EXPECT_EQ(from_file->chat_template->family(), "custom");
  EXPECT_TRUE(from_file->warnings.empty());
  EXPECT_EQ(
      *from_file->chat_template->Apply(nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])"), true),
      "[user] Hi\n");

  const std::string config =
      WriteFile("tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}[INST]"})");
  auto from_config = SelectChatTemplate(*file_, *tokenizer_, config);
  ASSERT_TRUE(from_config.ok()) << from_config.status().ToString();
  EXPECT_EQ(from_config->chat_template->family(), "mistral");
  EXPECT_EQ(*from_config->chat_template->Apply(nlohmann::json::array(), true), "<s>[INST]");
}

TEST_F(SelectChatTemplateTest, BadOverridesAreClearErrors) {
  LOCKSTEP_REQUIRE_TESTDATA();
  Load("llama-spm");
  auto unknown = SelectChatTemplate(*file_, *tokenizer_, "chatml3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'chatml3': no such file, and not a built-in template (chatml, "),
            std::string::npos)
      << unknown.status().ToString();

  const std::string broken = WriteFile("broken.jinja", "{% for x in %}");
  auto unparsable = SelectChatTemplate(*file_, *tokenizer_, broken);
  ASSERT_FALSE(unparsable.ok());
  EXPECT_NE(unparsable.status().message().find("chat template (file " + broken + ") cannot be parsed"),
            std::string::npos)
      << unparsable.status().ToString();

  const std::string bad_json = WriteFile("config.json", R"({"chat_template": 3})");
  auto wrong = SelectChatTemplate(*file_, *tokenizer_, bad_json);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("\"chat_template\" string"), std::string::npos);

  auto empty = SelectChatTemplate(*file_, *tokenizer_, WriteFile("empty.jinja", ""));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("the file is empty"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::chat
