// Reasoning blocks split from replies (chat/reasoning.h): whole replies, and every reply streamed in pieces
// of every size, whose partial splits must each extend the last and end at the whole reply's split; with
// <think> tags and, the same cases respelled, with Ministral 3's [THINK] tags and Gemma 4's channel tags.
#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::chat {
namespace {

struct Case {
  std::string text;
  bool opened;
  std::optional<std::string> reasoning;
  std::string content;
};

const std::vector<Case>& ThinkCases() {
  static const std::vector<Case> cases = {
      // Qwen3: a block, then the answer after a blank line.
      {"<think>\nThe user greets me.\n</think>\n\nHello!", false, "The user greets me.", "Hello!"},
      // Qwen3 with enable_thinking false still writes nothing special: no block, all content.
      {"Hello!", false, std::nullopt, "Hello!"},
      {"  \nHello <think>x</think>", false, std::nullopt, "  \nHello <think>x</think>"},
      // DeepSeek-R1: the prompt opened the block.
      {"Let me see.\n</think>\n\nFour.", true, "Let me see.", "Four."},
      {"Let me see.", true, "Let me see.", ""},
      // Unclosed (cut by max_tokens): all reasoning.
      {"<think>\nStill thinking", false, "Still thinking", ""},
      {"<think>", false, "", ""},
      {"<think></think>", false, "", ""},
      {"<think>\n\n</think>\n\nAnswer\n", false, "", "Answer\n"},
      // Tags' look-alikes stay text.
      {"<thinking>x</thinking>", false, std::nullopt, "<thinking>x</thinking>"},
      {"<think>a </thin b</think>c", false, "a </thin b", "c"},
      {"<think", false, std::nullopt, "<think"},
      {"<think>a</think", false, "a</think", ""},
      {"", false, std::nullopt, ""},
      {"\n\n", false, std::nullopt, "\n\n"},
      // What follows the close tag is content as it is, a second block included.
      {"<think>a</think>b<think>c</think>", false, "a", "b<think>c</think>"},
      {"<think>\xe4\xbd\xa0</think>\xe5\xa5\xbd", false, "\xe4\xbd\xa0", "\xe5\xa5\xbd"},
  };
  return cases;
}

// `text` with <think> and </think> spelled as `tags` say.
std::string Respelled(std::string text, const ReasoningTags& tags) {
  const std::pair<std::string_view, std::string_view> renames[] = {{kThinkTags.close, tags.close},
                                                                   {kThinkTags.open, tags.open}};
  for (const auto& [from, to] : renames) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

struct TaggedCase {
  ReasoningTags tags;
  Case c;
};

// ThinkCases() as they are, then with [THINK] and [/THINK], then with Gemma 4's <|channel>thought and
// <channel|>.
std::vector<TaggedCase> Cases() {
  std::vector<TaggedCase> out;
  for (const ReasoningTags& tags : {kThinkTags, kMistralThinkTags, kGemma4ThoughtTags}) {
    for (const Case& c : ThinkCases()) {
      Case respelled = {Respelled(c.text, tags), c.opened, std::nullopt, Respelled(c.content, tags)};
      if (c.reasoning) respelled.reasoning = Respelled(*c.reasoning, tags);
      out.push_back({tags, std::move(respelled)});
    }
  }
  return out;
}

TEST(ReasoningTest, SplitsWholeReplies) {
  for (const auto& [tags, c] : Cases()) {
    const ReasoningSplit split = SplitReasoning(c.text, tags, c.opened, /*final=*/true);
    EXPECT_EQ(split.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(split.content, c.content) << c.text;
  }
  // The other spelling is text.
  EXPECT_EQ(SplitReasoning("[THINK]a[/THINK]b", kThinkTags, false, true).content, "[THINK]a[/THINK]b");
  EXPECT_EQ(SplitReasoning("<think>a</think>b", kMistralThinkTags, false, true).reasoning, std::nullopt);
  EXPECT_EQ(SplitReasoning("a[/THINK]b", kMistralThinkTags, true, true).reasoning, "a");
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A stream sends the differences of successive splits: each must extend the one before, and the last (final)
// must be the whole reply's.
TEST(ReasoningTest, StreamedSplitsExtendEachOtherToTheWholeSplit) {
  for (const auto& [tags, c] : Cases()) {
    for (size_t step = 1; step <= c.text.size() + 1; ++step) {
      std::string reasoning;
      std::string content;
      bool has_reasoning = false;
      for (size_t at = 0;;) {
        const size_t next = std::min(c.text.size(), at + step);
        const bool last = next == c.text.size();
        const ReasoningSplit split =
            SplitReasoning(std::string_view(c.text).substr(0, next), tags, c.opened, last);
        const std::string r = split.reasoning.value_or("");
        ASSERT_TRUE(StartsWith(r, reasoning)) << c.text << " step " << step << " at " << next;
        ASSERT_TRUE(StartsWith(split.content, content)) << c.text << " step " << step << " at " << next;
        ASSERT_FALSE(has_reasoning && !split.reasoning) << c.text << " step " << step;
        reasoning = r;
        content = split.content;
        has_reasoning = has_reasoning || split.reasoning.has_value();
        if (last) break;
        at = next;
      }
      EXPECT_EQ(reasoning, c.reasoning.value_or("")) << c.text << " step " << step;
      EXPECT_EQ(has_reasoning, c.reasoning.has_value()) << c.text << " step " << step;
      EXPECT_EQ(content, c.content) << c.text << " step " << step;
    }
  }
}

TEST(ReasoningTest, HoldsBackWhatMayStillChange) {
  EXPECT_EQ(SplitReasoning("<thi", kThinkTags, false, false).content, "");
  EXPECT_EQ(SplitReasoning("<thi", kThinkTags, false, false).reasoning, std::nullopt);
  EXPECT_EQ(SplitReasoning("<think>abc </th", kThinkTags, false, false).reasoning, "abc");
  EXPECT_EQ(SplitReasoning("<think>abc </th", kThinkTags, false, true).reasoning, "abc </th");
  EXPECT_EQ(SplitReasoning("<think>a</think>\n", kThinkTags, false, false).content, "");
  EXPECT_EQ(SplitReasoning(" ", kThinkTags, false, false).content, "");
  EXPECT_EQ(SplitReasoning(" ", kThinkTags, false, true).content, " ");
}

// The reasoning tokens of a reply streamed in tokens of `step` bytes: those up to the one whose end reaches
// past the block's </think>, or all of them while it is unclosed; none without a block.
TEST(ReasoningTest, CountsTheTokensUpToTheCloseTag) {
  for (const auto& [tags, c] : Cases()) {
    size_t close_end = std::string::npos;  // where the text has the whole close tag
    if (c.reasoning) {
      const size_t from = c.opened ? 0 : c.text.find(tags.open) + tags.open.size();
      const size_t close = c.text.find(tags.close, from);
      if (close != std::string::npos) close_end = close + tags.close.size();
    }
    for (size_t step = 1; step <= c.text.size() + 1; ++step) {
      ReasoningTokenCounter counter(tags, c.opened);
      int32_t tokens = 0, expected = 0;
      bool closed = false;
      for (size_t at = 0; at < c.text.size() || tokens == 0;) {
        at = std::min(c.text.size(), at + step);
        counter.AddToken(std::string_view(c.text).substr(0, at));
        ++tokens;
        if (c.reasoning && !closed) expected = tokens;
        closed = closed || at >= close_end;
        if (at == c.text.size()) break;
      }
      EXPECT_EQ(counter.tokens(), expected) << c.text << " step " << step;
    }
  }
  // Tokens without text (a character still arriving) count where they fall.
  ReasoningTokenCounter counter(kThinkTags, false);
  for (const char* text : {"", "<think>", "<think>", "<think>a</think>", "<think>a</think>b"})
    counter.AddToken(text);
  EXPECT_EQ(counter.tokens(), 4);
}

TEST(ReasoningTest, PromptOpensReasoning) {
  EXPECT_TRUE(PromptOpensReasoning("<|Assistant|><think>\n", kThinkTags));
  EXPECT_TRUE(PromptOpensReasoning("<|im_start|>assistant\n<think>", kThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", kThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n", kThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("", kThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("think>", kThinkTags));
  EXPECT_TRUE(PromptOpensReasoning("[/INST][THINK]", kMistralThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("[/INST][THINK]", kThinkTags));
  EXPECT_FALSE(PromptOpensReasoning("[/INST]", kMistralThinkTags));
}

TEST(ReasoningTest, FormatsAndAuto) {
  EXPECT_EQ(ParseReasoningFormat("none"), ReasoningFormat::kNone);
  EXPECT_EQ(ParseReasoningFormat("deepseek"), ReasoningFormat::kDeepSeek);
  EXPECT_EQ(ParseReasoningFormat("auto"), ReasoningFormat::kAuto);
  EXPECT_EQ(ParseReasoningFormat("deepseek-legacy"), std::nullopt);
  EXPECT_EQ(ParseReasoningFormat(""), std::nullopt);
  const std::string qwen3 =
      "{%- if enable_thinking is defined and enable_thinking is false %}"
      "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}";
  // Ministral 3 Reasoning's system prompt shows the model its tags.
  const std::string ministral =
      "{{- '[SYSTEM_PROMPT]' + 'think here:[THINK]...[/THINK]' + '[/SYSTEM_PROMPT]' }}";
  const auto open = [](const std::optional<ReasoningTags>& tags) {
    return tags ? std::string(tags->open) : std::string("none");
  };
  EXPECT_EQ(open(TemplateReasoningTags(qwen3)), "<think>");
  EXPECT_EQ(open(TemplateReasoningTags(ministral)), "[THINK]");
  EXPECT_EQ(open(TemplateReasoningTags("{{ messages }}")), "none");
  // Gemma 4's: an empty thought channel when thinking is off.
  EXPECT_EQ(open(TemplateReasoningTags("{{- '<|turn>model\\n<|channel>thought\\n<channel|>' -}}")),
            "<|channel>thought");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kAuto, TemplateReasoningTags(qwen3))), "<think>");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kAuto, TemplateReasoningTags(ministral))), "[THINK]");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kAuto, std::nullopt)), "none");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kDeepSeek, std::nullopt)), "<think>");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kDeepSeek, TemplateReasoningTags(ministral))),
            "[THINK]");
  EXPECT_EQ(open(ReplyReasoningTags(ReasoningFormat::kNone, TemplateReasoningTags(qwen3))), "none");
}

}  // namespace
}  // namespace lockstep::chat
