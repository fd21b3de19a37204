// gpt-oss's Harmony reply format: a reply is a sequence of messages, each a header, <|message|>, its text and
// an end (<|end|> between messages; <|return|> or <|call|> end the reply, and as end-of-generation tokens are
// not in the generated text). The first header follows the template's generation prompt (<|start|>assistant),
// later ones begin with <|start|>ROLE:
//   <|channel|>analysis<|message|>...reasoning...<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.get <|constrain|>json<|message|>{"x": 1}
//   <|start|>assistant<|channel|>final<|message|>...answer...
// A header holds a channel (<|channel|>NAME; the last one counts), perhaps a recipient (` to=NAME`, before or
// after the channel) and a content type (`<|constrain|>json` or ` json`).
//
// A reply splits into reasoning (the analysis messages' text), content (the final messages' text, and
// commentary without a recipient: a preamble to the user, as llama.cpp and vLLM return it) and tool calls
// (messages to functions.NAME with NAME among the declared tools; their text is the arguments). What is not
// Harmony is content, never lost: a reply that does not open with a header (a grammar-constrained JSON
// reply), a malformed header, a message to an undeclared recipient (its text). Messages are concatenated as
// they come; several reasoning messages are joined by a blank line, so are several content messages.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::chat {

// Harmony's special tokens that a parser needs to see in the generated text (a server keeps their text:
// llama.cpp's preserved tokens). <|return|> and <|call|> end generation; listed for completeness.
inline constexpr std::string_view kHarmonyTokens[] = {"<|channel|>",   "<|message|>", "<|start|>", "<|end|>",
                                                      "<|constrain|>", "<|call|>",    "<|return|>"};

// Whether a chat template's Jinja source writes Harmony (it holds <|channel|> and <|start|>assistant).
bool IsHarmonyTemplate(std::string_view template_source);

struct HarmonyCall {
  std::string name;       // the function, without "functions."
  std::string arguments;  // the message's text (JSON, as the model wrote it)
};

struct HarmonySplit {
  std::optional<std::string> reasoning;  // nullopt: no analysis message
  std::string content;
  std::vector<HarmonyCall> calls;
};

// Splits `text`, the reply generated after the generation prompt or the start of one. `tool_names`: the
// functions that may be called (empty: none, their messages are content). `final` false (a stream's text
// so far): a header not yet complete, a trailing piece that may still become a special token, and a call
// whose message has not ended are held back, so the split of a longer text extends that of a shorter one
// (reasoning and content start with the earlier ones, calls begin with the earlier calls, unchanged) and a
// stream sends the differences. `final` true: the text is the whole reply; an unfinished call counts (the
// reply ended at <|call|>), an unfinished header is content.
HarmonySplit SplitHarmony(std::string_view text, const std::vector<std::string>& tool_names, bool final);

// Counts a reply's reasoning tokens as it is generated (usage's reasoning_tokens): the tokens of its
// analysis messages, their headers and ends included. O(new text) per token. Not thread-safe; one per reply.
class HarmonyTokenCounter {
 public:
  // After each generated token: `text` is the reply so far (the previous call's text and what followed).
  void AddToken(std::string_view text);
  int32_t tokens() const { return tokens_ + (in_header_ || !analysis_ ? 0 : message_tokens_); }

 private:
  int32_t tokens_ = 0;          // of analysis messages that ended
  int32_t message_tokens_ = 0;  // of the current message so far
  bool in_header_ = true;
  bool analysis_ = false;    // the current message's channel (known once its header is)
  size_t header_start_ = 0;  // where the current message's header began
  size_t scanned_ = 0;       // text before this holds no special token still to act on
};

}  // namespace lockstep::chat
