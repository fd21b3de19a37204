// Reasoning ("thinking") blocks: a reply that opens with <think> carries the model's reasoning up to
// </think>, then its answer. Split apart, they are returned as OpenAI-style `reasoning_content` beside
// `content` (llama.cpp's --reasoning-format deepseek, vLLM's qwen3 / deepseek_r1 reasoning parsers).
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::chat {

inline constexpr std::string_view kReasoningOpen = "<think>";
inline constexpr std::string_view kReasoningClose = "</think>";

// Whether replies are split: kNone never, kDeepSeek always, kAuto when the chat template writes reasoning
// blocks (its text holds <think>: Qwen3, DeepSeek-R1 and their distillations, SmolLM3).
enum class ReasoningFormat { kNone, kDeepSeek, kAuto };

// "none" | "deepseek" | "auto" (llama.cpp's names); nullopt for anything else.
std::optional<ReasoningFormat> ParseReasoningFormat(std::string_view name);
// kAuto resolved against a chat template's Jinja source.
bool SplitsReasoning(ReasoningFormat format, std::string_view template_source);

// Whether a rendered prompt ends inside a reasoning block: its generation prompt opened one (DeepSeek-R1's
// and Qwen3-Thinking-2507's templates end with "<think>\n"), so the reply starts with reasoning and has no
// opening tag of its own. A prompt that opens and closes an empty block (Qwen3 with enable_thinking false)
// does not.
bool PromptOpensReasoning(std::string_view prompt);

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // nullopt: the reply has no reasoning block
  std::string content;
};

// Splits `text`, a reply or the start of one. `opened`: the prompt opened the block (PromptOpensReasoning).
// A reply that starts (after whitespace) with <think> has a block; one that does not, unless opened, is all
// content. The reasoning is the text between the tags, trimmed of surrounding whitespace; an unclosed block
// is all reasoning. The content is what follows </think>, without its leading whitespace.
// `final` false (a stream's text so far): a trailing piece that may still become a tag, and whitespace that
// may still be trimmed, are held back, so that the split of a longer text extends the split of a shorter one
// (reasoning and content each start with the earlier ones) and a stream sends their differences.
ReasoningSplit SplitReasoning(std::string_view text, bool opened, bool final);

// Counts a reply's reasoning tokens as it is generated (usage's reasoning_tokens): the tokens up to and
// including the one that completes </think>, or every token of a block never closed; none when the reply
// has no block (SplitReasoning's rule: <think> after leading whitespace, or a prompt that opened one).
// O(new text) per token. Not thread-safe; one per reply.
class ReasoningTokenCounter {
 public:
  explicit ReasoningTokenCounter(bool opened);
  // After each generated token: `text` is the reply so far (the previous call's text and what followed).
  void AddToken(std::string_view text);
  int32_t tokens() const { return state_ == State::kUndecided ? 0 : tokens_; }

 private:
  enum class State { kUndecided, kInside, kDone };
  State state_;
  int32_t tokens_ = 0;  // while undecided: the tokens so far
  size_t scanned_ = 0;  // text before this holds no </think> (while inside)
};

}  // namespace lockstep::chat
