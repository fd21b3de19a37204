// ChatTemplate: turns OpenAI-style chat messages into a prompt string using the model's own chat template
// (GGUF `tokenizer.chat_template`, a Jinja template) rendered by the Jinja-subset interpreter with Hugging
// Face's settings (trim_blocks, lstrip_blocks, raise_exception, tojson, namespace, strftime_now, loop
// controls).
//
// Fallback: a model with no template, or one this interpreter cannot parse, uses the default ChatML template
// (kDefaultChatTemplate: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n") and note() says so (the server logs it). Immutable after Create(); Apply() is
// thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace lockstep::jinja {
struct Template;
}

namespace lockstep::chat {

inline constexpr const char* kDefaultChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

class ChatTemplate {
 public:
  // `source` may be empty (no template in the model). bos/eos are exposed to the template as
  // bos_token/eos_token.
  static ChatTemplate Create(const std::string& source, std::string bos_token, std::string eos_token);

  // messages: a JSON array of {role, content (string), ...}. Returns the rendered prompt, or an error (for
  // example the template's own raise_exception: "roles must alternate") suitable for a 400 response.
  Result<std::string> Apply(const nlohmann::json& messages, bool add_generation_prompt) const;
  // The same with the messages' key order kept (what `tojson` prints) and, when `tools` is not null, the
  // request's tool definitions (OpenAI's [{type, function: {name, description, parameters}}]) exposed to
  // the template as `tools`, as Hugging Face's apply_chat_template(tools=...) does. Assistant messages may
  // carry tool_calls (arguments as objects) and tool messages tool_call_id.
  Result<std::string> Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                            const nlohmann::ordered_json& tools) const;
  // The template text in use (the default's when is_default()).
  const std::string& source() const { return source_; }

  // Best-guess family of the template for logs and /info: chatml, llama2, llama3, mistral, gemma, phi3,
  // zephyr, custom; "default" when the fallback is in use.
  const std::string& family() const { return family_; }
  bool is_default() const { return is_default_; }
  // One line for the log: which template is in use and, for the fallback, why.
  const std::string& note() const { return note_; }

 private:
  std::shared_ptr<const jinja::Template> template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  std::string family_;
  bool is_default_ = false;
  std::string note_;
};

// Family detection from the template text (exposed for tests).
std::string DetectChatTemplateFamily(const std::string& source);

}  // namespace lockstep::chat
