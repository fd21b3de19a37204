// Conversation: the messages of a multi-turn chat (an optional system message, then user and assistant turns)
// and the prompt for the next reply, rendered with a ChatTemplate and kept within a token budget by dropping
// the oldest whole turns (a user message and the reply to it); the system message is always kept. This is
// what `lockstep chat` holds between replies. Not thread-safe: one owner.
//
// Errors: Ask() returns the template's own errors (InvalidArgument), the encoder's, and OutOfRange when the
// system message and the new user message alone exceed the budget; the conversation is unchanged then.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::chat {

// Text to token ids, as the model will see the prompt.
using PromptEncoder = std::function<Result<std::vector<int32_t>>(const std::string& text)>;

// The encoder the server uses for rendered chat prompts: special-token text parsed as special tokens, BOS as
// the vocabulary says, and a BOS doubled by a template that writes bos_token itself kept once.
Result<std::vector<int32_t>> EncodeChatPrompt(const Tokenizer& tokenizer, const std::string& text);

// The text that ends an assistant turn in a template of `family` (DetectChatTemplateFamily's names):
// "<|im_end|>" for chatml / qwen2 / default, "<|eot_id|>" for llama3, "<end_of_turn>" for gemma, "<|end|>"
// for phi3, "</s>" for llama2 / mistral / zephyr; "" when unknown. A model that spells it out as plain text
// (its vocabulary lacks the special token) ends its reply there: use it as a stop string.
std::string_view EndOfTurnText(std::string_view family);

class Conversation {
 public:
  Conversation() = default;
  // A conversation that starts with this system message; an empty one is still sent (some templates write a
  // default system message when there is none, and an empty one is how a user asks for none).
  explicit Conversation(std::string system_message);

  struct Prompt {
    std::string text;           // the rendered conversation, ending with the generation prompt
    std::vector<int32_t> ids;   // text encoded, at most the budget's tokens
    int32_t dropped_turns = 0;  // oldest turns dropped (for good) to fit the budget
  };
  // Adds `user_text` as the next user message and returns the prompt for the reply to it, dropping the oldest
  // turns while the prompt has more than `max_prompt_tokens` tokens. Follow with AddReply().
  Result<Prompt> Ask(const std::string& user_text, const ChatTemplate& chat_template,
                     const PromptEncoder& encode, int64_t max_prompt_tokens);
  // The assistant's reply to the last user message (possibly cut short or empty).
  void AddReply(std::string text);
  // Forgets every turn; the system message stays.
  void Clear();

  int32_t turns() const;  // user messages held
  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  bool has_system_ = false;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace lockstep::chat
