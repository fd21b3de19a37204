// Reasoning ("thinking") blocks: a reply that opens with <think> carries the model's reasoning up to
// </think>, then its answer (Magistral and Ministral 3 Reasoning write [THINK] ... [/THINK], Gemma 4
// <|channel>thought ... <channel|>: control tokens that requests keep in their text:
// Request::preserved_tokens). Split apart, they are returned as
// OpenAI-style `reasoning_content` beside `content` (llama.cpp's --reasoning-format deepseek, vLLM's qwen3 /
// deepseek_r1 / mistral reasoning parsers). Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::chat {

// The tags around a reply's reasoning.
struct ReasoningTags {
  std::string_view open;
  std::string_view close;
};
inline constexpr ReasoningTags kThinkTags = {"<think>", "</think>"};
inline constexpr ReasoningTags kMistralThinkTags = {"[THINK]", "[/THINK]"};
inline constexpr ReasoningTags kGemma4ThoughtTags = {"<|channel>thought", "<channel|>"};
// The tokens of the tags above: the ones that are control tokens in a vocabulary are kept in a reply's text.
inline constexpr std::string_view kReasoningTagPieces[] = {"<think>",  "</think>",   "[THINK]",
                                                           "[/THINK]", "<|channel>", "<channel|>"};

// Whether replies are split: kNone never, kDeepSeek always, kAuto when the chat template writes reasoning
// blocks (its text holds <think>: Qwen3, DeepSeek-R1 and their distillations, SmolLM3; or [THINK]).
enum class ReasoningFormat { kNone, kDeepSeek, kAuto };

// "none" | "deepseek" | "auto" (llama.cpp's names); nullopt for anything else.
std::optional<ReasoningFormat> ParseReasoningFormat(std::string_view name);
// The tags a chat template's Jinja source writes: the first of [THINK], <|channel>thought (Gemma 4) and
// <think> that it holds; nullopt for none.
std::optional<ReasoningTags> TemplateReasoningTags(std::string_view template_source);
// The tags that split replies under `format`, given the template's (TemplateReasoningTags): none for kNone,
// the template's for kAuto, the template's or <think> for kDeepSeek.
std::optional<ReasoningTags> ReplyReasoningTags(ReasoningFormat format,
                                                std::optional<ReasoningTags> template_tags);

// Whether a rendered prompt ends inside a reasoning block: its generation prompt opened one (DeepSeek-R1's
// and Qwen3-Thinking-2507's templates end with "<think>\n"), so the reply starts with reasoning and has no
// opening tag of its own. A prompt that opens and closes an empty block (Qwen3 with enable_thinking false)
// does not.
bool PromptOpensReasoning(std::string_view prompt, const ReasoningTags& tags);

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // nullopt: the reply has no reasoning block
  std::string content;
};

// Splits `text`, a reply or the start of one, at `tags`. `opened`: the prompt opened the block
// (PromptOpensReasoning). A reply that starts (after whitespace) with the opening tag has a block; one that
// does not, unless opened, is all content. The reasoning is the text between the tags, trimmed of
// surrounding whitespace; an unclosed block is all reasoning. The content is what follows the closing tag,
// without its leading whitespace.
// `final` false (a stream's text so far): a trailing piece that may still become a tag, and whitespace that
// may still be trimmed, are held back, so that the split of a longer text extends the split of a shorter one
// (reasoning and content each start with the earlier ones) and a stream sends their differences.
ReasoningSplit SplitReasoning(std::string_view text, const ReasoningTags& tags, bool opened, bool final);

// Counts a reply's reasoning tokens as it is generated (usage's reasoning_tokens): the tokens up to and
// including the one that completes the closing tag, or every token of a block never closed; none when the
// reply has no block (SplitReasoning's rule: the opening tag after leading whitespace, or a prompt that
// opened one).
// O(new text) per token. Not thread-safe; one per reply.
class ReasoningTokenCounter {
 public:
  ReasoningTokenCounter(const ReasoningTags& tags, bool opened);
  // After each generated token: `text` is the reply so far (the previous call's text and what followed).
  void AddToken(std::string_view text);
  int32_t tokens() const { return state_ == State::kUndecided ? 0 : tokens_; }

 private:
  enum class State { kUndecided, kInside, kDone };
  ReasoningTags tags_;
  State state_;
  int32_t tokens_ = 0;  // while undecided: the tokens so far
  size_t scanned_ = 0;  // text before this holds no closing tag (while inside)
};

}  // namespace lockstep::chat
