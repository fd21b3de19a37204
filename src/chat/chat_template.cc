#include "chat/chat_template.h"

#include "jinja/ast.h"
#include "jinja/interpreter.h"

namespace lockstep::chat {

std::string DetectChatTemplateFamily(const std::string& source) {
  const auto has = [&](const char* s) { return source.find(s) != std::string::npos; };
  if (source.empty()) return "default";
  if (has("<|im_start|>")) return "chatml";
  if (has("<|start_header_id|>")) return "llama3";
  if (has("<start_of_turn>")) return "gemma";
  if (has("<|end|>") && has("<|assistant|>")) return "phi3";
  if (has("<|assistant|>") && has("<|user|>")) return "zephyr";
  if (has("<<SYS>>")) return "llama2";
  if (has("[INST]")) return "mistral";
  return "custom";
}

ChatTemplate ChatTemplate::Create(const std::string& source, std::string bos_token, std::string eos_token) {
  ChatTemplate result;
  result.bos_token_ = std::move(bos_token);
  result.eos_token_ = std::move(eos_token);
  if (!source.empty()) {
    auto parsed = jinja::Parse(source);
    if (parsed.ok()) {
      result.template_ = *parsed;
      result.source_ = source;
      result.family_ = DetectChatTemplateFamily(source);
      result.note_ = "chat template: the model's own (" + result.family_ + " family)";
      return result;
    }
    result.note_ = "chat template: the model's template could not be parsed (" + parsed.status().message() +
                   "); using the default ChatML template";
  } else {
    result.note_ =
        "chat template: the model has none (no tokenizer.chat_template); using the default ChatML template";
  }
  auto fallback = jinja::Parse(kDefaultChatTemplate);
  result.template_ = *fallback;
  result.source_ = kDefaultChatTemplate;
  result.family_ = "default";
  result.is_default_ = true;
  return result;
}

Result<std::string> ChatTemplate::Apply(const nlohmann::json& messages, bool add_generation_prompt) const {
  jinja::Object context;
  context.emplace_back("messages", jinja::Value::FromJson(messages));
  context.emplace_back("add_generation_prompt", jinja::Value(add_generation_prompt));
  context.emplace_back("bos_token", jinja::Value(bos_token_));
  context.emplace_back("eos_token", jinja::Value(eos_token_));
  return jinja::Render(*template_, jinja::Value::MakeObject(std::move(context)));
}

Result<std::string> ChatTemplate::Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                        const nlohmann::ordered_json& tools) const {
  jinja::Object context;
  context.emplace_back("messages", jinja::Value::FromJson(messages));
  if (!tools.is_null()) context.emplace_back("tools", jinja::Value::FromJson(tools));
  context.emplace_back("add_generation_prompt", jinja::Value(add_generation_prompt));
  context.emplace_back("bos_token", jinja::Value(bos_token_));
  context.emplace_back("eos_token", jinja::Value(eos_token_));
  return jinja::Render(*template_, jinja::Value::MakeObject(std::move(context)));
}

}  // namespace lockstep::chat
