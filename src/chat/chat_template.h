// ChatTemplate: turns OpenAI-style chat messages into a prompt string with a chat template (a Jinja template:
// the model's own GGUF `tokenizer.chat_template`, a built-in one, or a file) rendered by the Jinja-subset
// interpreter (jinja/) with Hugging Face's settings (trim_blocks, lstrip_blocks, raise_exception, tojson,
// namespace, strftime_now, loop controls).
//
// Fallback: Create() on a model with no template, or one this interpreter cannot parse, uses the default
// ChatML template (kDefaultChatTemplate: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n") and note() says so. Which template a model gets, with its warnings, is
// SelectChatTemplate's job (chat/template_selection.h). Immutable after creation; Apply() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "chat/reasoning.h"

namespace lockstep::jinja {
struct Template;
}

namespace lockstep::chat {

// jinja::kMaxRenderSteps (jinja/interpreter.h), the default budget of one rendering.
inline constexpr int64_t kMaxRenderSteps = 1'000'000;

inline constexpr const char* kDefaultChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The variables a template sees, as Hugging Face's apply_chat_template passes them. bos_token and eos_token
// come from the ChatTemplate itself. Ordered JSON: `tojson` prints keys in the order the request gave them.
struct ChatTemplateInput {
  // [{role, content, ...}], passed through as they are; assistant messages may carry tool_calls (arguments
  // as objects) and tool messages tool_call_id.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // null: `tools` is none (as apply_chat_template(tools=None)); else the request's tool definitions
  // (OpenAI's [{type, function: {name, description, parameters}}]).
  nlohmann::ordered_json tools;
  bool add_generation_prompt = true;
  // More variables (a request's chat_template_kwargs, e.g. enable_thinking, date_string); they cannot
  // replace messages, tools, add_generation_prompt, bos_token or eos_token.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// For templates that cannot show a system message (Gemma 2's raises "System role not supported"; Mistral
// v0.1's allows only alternating user/assistant turns): each run of system messages with text content is
// joined by "\n" and put before the next user message's content, with a "\n" between (llama.cpp's server
// does the same); a run with no user message next becomes a user message of its own. Other messages stay.
nlohmann::ordered_json MergeSystemMessages(const nlohmann::ordered_json& messages);

class ChatTemplate {
 public:
  // Parses `source`; origin says where it came from ("the model's own", "built-in llama3", "file x.jinja")
  // for note() and errors. InvalidArgument naming the origin when the interpreter cannot parse it.
  // max_render_steps bounds each rendering, Parse's own (below) included: jinja::Render's budget.
  static Result<ChatTemplate> Parse(const std::string& source, const std::string& origin,
                                    std::string bos_token, std::string eos_token,
                                    int64_t max_render_steps = kMaxRenderSteps);
  // The model's template (`source`, may be empty), or the ChatML fallback when it is empty or cannot be
  // parsed (is_default(), note() says why).
  static ChatTemplate Create(const std::string& source, std::string bos_token, std::string eos_token);

  // Returns the rendered prompt, or an error (for example the template's own raise_exception: "roles must
  // alternate") suitable for a 400 response. A template that cannot show a system message (found once, by
  // Parse, rendering one) gets the messages through MergeSystemMessages.
  Result<std::string> Apply(const ChatTemplateInput& input) const;
  // Shorthand: messages only, no tools.
  Result<std::string> Apply(const nlohmann::json& messages, bool add_generation_prompt) const;
  // Shorthand: messages with their key order kept, and the request's tools (null: none).
  Result<std::string> Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                            const nlohmann::ordered_json& tools) const;

  // Best-guess family of the template for logs, `info` and /props: chatml, llama2, llama3, mistral, gemma,
  // phi3, zephyr, custom; "default" when the fallback is in use.
  const std::string& family() const { return family_; }
  bool is_default() const { return is_default_; }
  // False for a template that cannot show a system message: Apply merges them (MergeSystemMessages).
  bool shows_system() const { return shows_system_; }
  // True for a template that shows an assistant tool call's arguments only as JSON text, not as the object
  // Hugging Face's convention passes (DeepSeek R1's concatenates them to strings; found once, by Parse,
  // rendering a probe call both ways, as llama.cpp's minja does): Apply passes them as compact JSON text.
  bool string_arguments() const { return string_arguments_; }
  // True for gpt-oss's Harmony format (IsHarmonyTemplate, chat/harmony.h), found once by Parse.
  bool harmony() const { return harmony_; }
  // The tags around reasoning the template writes (TemplateReasoningTags), found once by Parse.
  const std::optional<ReasoningTags>& reasoning_tags() const { return reasoning_tags_; }
  // True for a template that shows an earlier reply's reasoning only as a content block of type "thinking"
  // (Ministral 3 Reasoning's; found once by Parse, rendering a probe, as llama.cpp rewrites the messages for
  // it): Apply moves assistant messages' reasoning_content into such a block before their text.
  bool thinking_blocks() const { return thinking_blocks_; }
  // True for Gemma 4's template (its thought-channel tags): after a reply that had text and tool calls, and
  // the tool results it takes into that turn, the template closes the turn ("<turn|>\n") and opens no
  // new one, even with add_generation_prompt. Apply then appends "<|turn>model\n", as llama.cpp does, so
  // that the model answers in a turn of its own.
  bool reopens_model_turn() const { return reopens_model_turn_; }
  // One line for the log: which template is in use and, for the fallback, why.
  const std::string& note() const { return note_; }
  // The Jinja source in use (the default's when is_default()).
  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  Result<std::string> ApplyOrThrow(const ChatTemplateInput& input) const;  // throws jinja::Error

  std::shared_ptr<const jinja::Template> template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  std::string family_;
  bool is_default_ = false;
  bool shows_system_ = true;  // else Apply merges system messages (MergeSystemMessages)
  bool string_arguments_ = false;
  bool harmony_ = false;
  std::optional<ReasoningTags> reasoning_tags_;
  bool thinking_blocks_ = false;
  bool reopens_model_turn_ = false;
  int64_t max_render_steps_ = kMaxRenderSteps;
  std::string note_;
};

// Family detection from the template text (exposed for tests).
std::string DetectChatTemplateFamily(const std::string& source);

}  // namespace lockstep::chat
