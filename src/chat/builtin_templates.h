// Built-in chat templates, chosen by name with `--chat-template NAME` (serve, info, chat): the verbatim
// templates of well-known model families, for models whose GGUF file has none or a wrong one. Each lists the
// special tokens it needs the vocabulary to have as single tokens (a ChatML prompt for a vocabulary without
// <|im_start|> is tokenized as plain text, which the model was never trained on). Constant data; thread-safe.
//
// Adding a family: one entry in builtin_templates.cc (name, source, special tokens), a golden rendering in
// tests/chat/testdata (make_chat_template_goldens.py), and, if its template text is recognisable, a line in
// DetectChatTemplateFamily (chat_template.cc).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::chat {

struct BuiltinTemplate {
  const char* name;    // chatml, llama2, llama3, llama3.2, mistral, gemma, phi3, qwen2, zephyr
  const char* source;  // Jinja source
  std::vector<const char*> special_tokens;
};

// The built-in template called `name`, or nullptr.
const BuiltinTemplate* FindBuiltinTemplate(std::string_view name);
std::span<const BuiltinTemplate> BuiltinTemplates();
// "chatml, llama2, ..." for help texts and error messages.
std::string BuiltinTemplateNames();

// The special tokens a template of `family` (DetectChatTemplateFamily's names; "default" is ChatML) needs;
// empty for families whose markers are plain text (llama2, mistral, zephyr) or unknown ones.
std::vector<std::string> FamilySpecialTokens(std::string_view family);

}  // namespace lockstep::chat
