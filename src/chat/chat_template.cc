#include "chat/chat_template.h"

#include "chat/harmony.h"
#include "jinja/ast.h"
#include "jinja/interpreter.h"

namespace lockstep::chat {

namespace {

static_assert(kMaxRenderSteps == jinja::kMaxRenderSteps, "one default budget");

// Whether a probe conversation (`messages`, no tools) renders, showing `marker`.
bool RendersMarker(const jinja::Template& tmpl, const std::string& bos, const std::string& eos,
                   int64_t max_render_steps, const nlohmann::json& messages, bool add_generation_prompt,
                   std::string_view marker) {
  jinja::Object context;
  context.emplace_back("messages", jinja::Value::FromJson(messages));
  context.emplace_back("tools", jinja::Value::FromJson(nlohmann::json()));
  context.emplace_back("add_generation_prompt", jinja::Value(add_generation_prompt));
  context.emplace_back("bos_token", jinja::Value(bos));
  context.emplace_back("eos_token", jinja::Value(eos));
  auto out = jinja::Render(tmpl, jinja::Value::MakeObject(std::move(context)), max_render_steps);
  return out.ok() && out->find(marker) != std::string::npos;
}

// Whether the template shows a system message at all: a system turn holding a marker, then a user turn,
// rendered; false when the marker is missing or the template raises (Gemma 2: "System role not supported").
bool RendersSystemMessage(const jinja::Template& tmpl, const std::string& bos, const std::string& eos,
                          int64_t max_render_steps) {
  static constexpr const char* kMarker = "<lockstep system marker>";
  const nlohmann::json messages = {{{"role", "system"}, {"content", kMarker}},
                                   {{"role", "user"}, {"content", "Hi"}}};
  return RendersMarker(tmpl, bos, eos, max_render_steps, messages, true, kMarker);
}

constexpr const char* kToolArgumentsProbe = "lockstep_probe_key";

// Whether the template shows an assistant tool call whose arguments are `arguments` (an object, or its JSON
// text): the probe's key appears in the rendering.
bool ShowsToolArguments(const jinja::Template& tmpl, const std::string& bos, const std::string& eos,
                        int64_t max_render_steps, const nlohmann::json& arguments) {
  const nlohmann::json call = {{"id", "call_probe"},
                               {"type", "function"},
                               {"function", {{"name", "probe"}, {"arguments", arguments}}}};
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}},
                                   {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}};
  return RendersMarker(tmpl, bos, eos, max_render_steps, messages, false, kToolArgumentsProbe);
}

// Whether the template shows an earlier reply's reasoning given as a content block of type "thinking"
// (Ministral 3 Reasoning's: [THINK]...[/THINK] in the turn): the probe's text appears after `tags.open`.
bool ShowsThinkingBlocks(const jinja::Template& tmpl, const std::string& bos, const std::string& eos,
                         int64_t max_render_steps, const ReasoningTags& tags) {
  static constexpr std::string_view kProbe = "lockstep thinking probe";
  const nlohmann::json blocks = {{{"type", "thinking"}, {"thinking", kProbe}},
                                 {{"type", "text"}, {"text", "Hi"}}};
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}},
                                   {{"role", "assistant"}, {"content", blocks}},
                                   {{"role", "user"}, {"content", "Hi"}}};
  return RendersMarker(tmpl, bos, eos, max_render_steps, messages, true,
                       std::string(tags.open) + std::string(kProbe));
}

// Messages with each assistant message's content as blocks (llama.cpp's rewrite for such templates): its
// reasoning_content, if any, as a "thinking" block, then its text content as a "text" block (none for empty
// or null content) or its own blocks.
nlohmann::ordered_json WithThinkingBlocks(nlohmann::ordered_json messages) {
  if (!messages.is_array()) return messages;
  for (auto& m : messages) {
    if (!m.is_object() || m.value("role", nlohmann::ordered_json()) != "assistant") continue;
    nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
      blocks.push_back({{"type", "thinking"}, {"thinking", m["reasoning_content"]}});
      m.erase("reasoning_content");
    }
    const nlohmann::ordered_json content = m.value("content", nlohmann::ordered_json());
    if (content.is_string() && !content.get_ref<const std::string&>().empty()) {
      blocks.push_back({{"type", "text"}, {"text", content}});
    } else if (content.is_array()) {
      for (const auto& block : content) blocks.push_back(block);
    }
    m["content"] = std::move(blocks);
  }
  return messages;
}

// Messages with each assistant tool call's object arguments replaced by their JSON text.
nlohmann::ordered_json WithStringArguments(nlohmann::ordered_json messages) {
  if (!messages.is_array()) return messages;
  for (auto& m : messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (auto& call : m["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      auto& f = call["function"];
      if (f.contains("arguments") && f["arguments"].is_object()) f["arguments"] = f["arguments"].dump();
    }
  }
  return messages;
}

}  // namespace

nlohmann::ordered_json MergeSystemMessages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) return messages;
  nlohmann::ordered_json merged = nlohmann::ordered_json::array();
  std::string pending;
  auto flush = [&] {
    if (pending.empty()) return;
    merged.push_back({{"role", "user"}, {"content", pending}});
    pending.clear();
  };
  for (const auto& message : messages) {
    const bool is_object = message.is_object();
    const std::string role = is_object && message.contains("role") && message["role"].is_string()
                                 ? message["role"].get<std::string>()
                                 : "";
    const bool text = is_object && message.contains("content") && message["content"].is_string();
    if (role == "system" && text) {
      if (!pending.empty()) pending += "\n";
      pending += message["content"].get<std::string>();
    } else if (role == "user" && text && !pending.empty()) {
      nlohmann::ordered_json user = message;
      const std::string content = message["content"].get<std::string>();
      user["content"] = pending + (content.empty() ? "" : "\n" + content);
      pending.clear();
      merged.push_back(std::move(user));
    } else {
      flush();
      merged.push_back(message);
    }
  }
  flush();
  return merged;
}

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

Result<ChatTemplate> ChatTemplate::Parse(const std::string& source, const std::string& origin,
                                         std::string bos_token, std::string eos_token,
                                         int64_t max_render_steps) {
  auto parsed = jinja::Parse(source);
  if (!parsed.ok()) {
    return InvalidArgument("chat template (" + origin + ") cannot be parsed: " + parsed.status().message());
  }
  ChatTemplate result;
  result.template_ = *parsed;
  result.source_ = source;
  result.bos_token_ = std::move(bos_token);
  result.eos_token_ = std::move(eos_token);
  result.family_ = DetectChatTemplateFamily(source);
  result.max_render_steps_ = max_render_steps;
  result.note_ = "chat template: " + origin + " (" + result.family_ + " family)";
  result.shows_system_ =
      RendersSystemMessage(*result.template_, result.bos_token_, result.eos_token_, max_render_steps);
  if (!result.shows_system_) result.note_ += "; system messages merged into the next user message";
  const nlohmann::json probe = {{kToolArgumentsProbe, 1}};
  result.string_arguments_ =
      !ShowsToolArguments(*result.template_, result.bos_token_, result.eos_token_, max_render_steps, probe) &&
      ShowsToolArguments(*result.template_, result.bos_token_, result.eos_token_, max_render_steps,
                         probe.dump());
  if (result.string_arguments_) result.note_ += "; tool-call arguments passed as JSON text";
  result.harmony_ = IsHarmonyTemplate(source);
  result.reasoning_tags_ = TemplateReasoningTags(source);
  result.thinking_blocks_ =
      result.reasoning_tags_ && ShowsThinkingBlocks(*result.template_, result.bos_token_, result.eos_token_,
                                                    max_render_steps, *result.reasoning_tags_);
  if (result.thinking_blocks_) result.note_ += "; earlier replies' reasoning passed as thinking blocks";
  result.reopens_model_turn_ =
      result.reasoning_tags_ && result.reasoning_tags_->open == kGemma4ThoughtTags.open;
  return result;
}

ChatTemplate ChatTemplate::Create(const std::string& source, std::string bos_token, std::string eos_token) {
  std::string why = "the model has none (no tokenizer.chat_template)";
  if (!source.empty()) {
    auto own = Parse(source, "the model's own", bos_token, eos_token);
    if (own.ok()) return *std::move(own);
    why = "the model's template could not be parsed (" + own.status().message() + ")";
  }
  auto fallback = Parse(kDefaultChatTemplate, "default", std::move(bos_token), std::move(eos_token));
  ChatTemplate result = *std::move(fallback);
  result.family_ = "default";
  result.is_default_ = true;
  result.note_ = "chat template: " + why + "; using the default ChatML template";
  return result;
}

Result<std::string> ChatTemplate::Apply(const ChatTemplateInput& input) const {
  try {
    return ApplyOrThrow(input);
  } catch (const jinja::Error& e) {  // JSON nested past jinja::Value::kMaxDepth (requests stop at 128)
    return InvalidArgument(std::string("chat template input: ") + e.what());
  }
}

Result<std::string> ChatTemplate::ApplyOrThrow(const ChatTemplateInput& input) const {
  jinja::Object context;
  nlohmann::ordered_json messages = string_arguments_ ? WithStringArguments(input.messages) : input.messages;
  if (thinking_blocks_) messages = WithThinkingBlocks(std::move(messages));
  context.emplace_back("messages",
                       jinja::Value::FromJson(shows_system_ ? messages : MergeSystemMessages(messages)));
  context.emplace_back("tools", jinja::Value::FromJson(input.tools));
  context.emplace_back("add_generation_prompt", jinja::Value(input.add_generation_prompt));
  context.emplace_back("bos_token", jinja::Value(bos_token_));
  context.emplace_back("eos_token", jinja::Value(eos_token_));
  if (input.extra.is_object()) {
    for (auto it = input.extra.begin(); it != input.extra.end(); ++it) {
      bool taken = false;
      for (const auto& [name, value] : context) taken = taken || name == it.key();
      if (!taken) context.emplace_back(it.key(), jinja::Value::FromJson(it.value()));
    }
  }
  auto prompt = jinja::Render(*template_, jinja::Value::MakeObject(std::move(context)), max_render_steps_);
  if (prompt.ok() && reopens_model_turn_ && input.add_generation_prompt && prompt->ends_with("<turn|>\n")) {
    *prompt += "<|turn>model\n";
  }
  return prompt;
}

Result<std::string> ChatTemplate::Apply(const nlohmann::json& messages, bool add_generation_prompt) const {
  ChatTemplateInput input;
  input.messages = messages;
  input.add_generation_prompt = add_generation_prompt;
  return Apply(input);
}

Result<std::string> ChatTemplate::Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                        const nlohmann::ordered_json& tools) const {
  ChatTemplateInput input;
  input.messages = messages;
  input.tools = tools;
  input.add_generation_prompt = add_generation_prompt;
  return Apply(input);
}

}  // namespace lockstep::chat
