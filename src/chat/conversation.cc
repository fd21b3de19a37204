#include "chat/conversation.h"

#include <utility>

namespace lockstep::chat {
namespace {

bool IsUser(const nlohmann::ordered_json& message) {
  const auto role = message.find("role");
  return role != message.end() && role->is_string() && role->get_ref<const std::string&>() == "user";
}

}  // namespace

Result<std::vector<int32_t>> EncodeChatPrompt(const Tokenizer& tokenizer, const std::string& text) {
  auto ids = tokenizer.Encode(text, tokenizer.add_bos(), /*parse_special=*/true);
  if (!ids.ok()) return ids.status();
  std::vector<int32_t> out = std::move(*ids);
  const int32_t bos = tokenizer.bos_id();
  if (out.size() >= 2 && bos >= 0 && out[0] == bos && out[1] == bos) out.erase(out.begin());
  return out;
}

std::string_view EndOfTurnText(std::string_view family) {
  if (family == "chatml" || family == "qwen2" || family == "default") return "<|im_end|>";
  if (family == "llama3" || family == "llama3.2") return "<|eot_id|>";
  if (family == "gemma") return "<end_of_turn>";
  if (family == "phi3") return "<|end|>";
  if (family == "llama2" || family == "mistral" || family == "zephyr") return "</s>";
  return "";
}

Conversation::Conversation(std::string system_message) : has_system_(true) {
  messages_.push_back({{"role", "system"}, {"content", std::move(system_message)}});
}

Result<Conversation::Prompt> Conversation::Ask(const std::string& user_text,
                                               const ChatTemplate& chat_template, const PromptEncoder& encode,
                                               int64_t max_prompt_tokens) {
  LOCKSTEP_CHECK(messages_.empty() || !IsUser(messages_.back()));  // AddReply() follows Ask()
  nlohmann::ordered_json candidate = messages_;
  candidate.push_back({{"role", "user"}, {"content", user_text}});
  Prompt prompt;
  const size_t first_turn = has_system_ ? 1 : 0;
  while (true) {
    auto text = chat_template.Apply(candidate, /*add_generation_prompt=*/true, nullptr);
    if (!text.ok()) return text.status();
    auto ids = encode(*text);
    if (!ids.ok()) return ids.status();
    if (static_cast<int64_t>(ids->size()) <= max_prompt_tokens) {
      prompt.text = std::move(*text);
      prompt.ids = std::move(*ids);
      break;
    }
    if (candidate.size() == first_turn + 1) {
      return OutOfRange("the message needs a prompt of " + std::to_string(ids->size()) +
                        " tokens with the chat template, more than the " + std::to_string(max_prompt_tokens) +
                        " this conversation has room for");
    }
    // Drop the oldest turn: its user message and everything up to the next user message.
    size_t end = first_turn + 1;
    while (end < candidate.size() - 1 && !IsUser(candidate[end])) ++end;
    candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(first_turn),
                    candidate.begin() + static_cast<std::ptrdiff_t>(end));
    ++prompt.dropped_turns;
  }
  messages_ = std::move(candidate);
  return prompt;
}

void Conversation::AddReply(std::string text) {
  LOCKSTEP_CHECK(!messages_.empty() && IsUser(messages_.back()));
  messages_.push_back({{"role", "assistant"}, {"content", std::move(text)}});
}

void Conversation::Clear() { messages_.erase(messages_.begin() + (has_system_ ? 1 : 0), messages_.end()); }

int32_t Conversation::turns() const {
  int32_t n = 0;
  for (const auto& m : messages_) n += IsUser(m) ? 1 : 0;
  return n;
}

}  // namespace lockstep::chat
