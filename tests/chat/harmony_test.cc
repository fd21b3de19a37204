// gpt-oss's Harmony replies split into reasoning, content and tool calls (chat/harmony.h): whole replies as
// gpt-oss writes them (and as it writes them wrong), every reply streamed in pieces of every size, whose
// partial splits must each extend the last and end at the whole reply's split, and the reasoning tokens.
#include "chat/harmony.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::chat {
namespace harmony_test {

struct Case {
  std::string text;
  std::optional<std::string> reasoning;
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

const std::vector<std::string> kTools = {"get_weather", "search"};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // Reasoning, then the answer (the reply's <|return|> ends generation and is not in the text).
      {"<|channel|>analysis<|message|>User says "
       "hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
       "User says hi.",
       "Hello!",
       {}},
      // The answer alone (reasoning_effort low may still write an empty analysis).
      {"<|channel|>final<|message|>Hi.", std::nullopt, "Hi.", {}},
      {"<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>Hi.",
       "",
       "Hi.",
       {}},
      // A call, the recipient after the channel, <|constrain|>json (the reply ended at <|call|>).
      {"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
       "Need weather.",
       "",
       {{"get_weather", "{\"city\":\"Paris\"}"}}},
      // The recipient in the role's header, a bare content type (as gpt-oss's template writes past calls).
      {"<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.search<|channel|>commentary "
       "json<|message|>{\"q\": \"a b\"}",
       "x",
       "",
       {{"search", "{\"q\": \"a b\"}"}}},
      // The first message's recipient right after the generation prompt.
      {" to=functions.search<|channel|>commentary<|message|> {\"q\": 1} ",
       std::nullopt,
       "",
       {{"search", "{\"q\": 1}"}}},
      // A preamble to the user (commentary without a recipient) is content, before the call.
      {"<|channel|>commentary<|message|>Let me look.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.search<|constrain|>json<|message|>{}",
       std::nullopt,
       "Let me look.",
       {{"search", "{}"}}},
      // Two calls (the first ended by <|call|> kept in the text), reasoning between.
      {"<|channel|>commentary to=functions.search<|message|>{\"q\":1}<|call|><|start|>assistant<|channel|>"
       "analysis<|message|>more<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather"
       "<|message|>{}",
       "more",
       "",
       {{"search", "{\"q\":1}"}, {"get_weather", "{}"}}},
      // An undeclared function, a built-in tool: their text is content.
      {"<|channel|>commentary to=functions.delete_all<|message|>{}", std::nullopt, "{}", {}},
      {"<|channel|>analysis to=browser.search<|message|>{\"q\":1}<|end|><|start|>assistant<|channel|>final"
       "<|message|>ok",
       std::nullopt,
       "{\"q\":1}\n\nok",
       {}},
      // gpt-oss's stray commentary before the analysis channel; " to=assistant" is no recipient.
      {"<|channel|>commentary to=assistant<|channel|>analysis<|message|>r<|end|><|start|>assistant"
       "<|channel|>final<|message|>a",
       "r",
       "a",
       {}},
      // Two analysis messages, joined by a blank line; a final message ended by <|return|> kept in the text.
      {"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>"
       "<|start|>assistant<|channel|>final<|message|>c<|return|>",
       "a\n\nb",
       "c",
       {}},
      // A missing <|end|>: the next <|start|> ends the message.
      {"<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final<|message|>b", "a", "b", {}},
      // Not Harmony: a grammar-constrained JSON reply, plain text.
      {"{\"a\": 1}", std::nullopt, "{\"a\": 1}", {}},
      {"Hello there", std::nullopt, "Hello there", {}},
      {"to be or not", std::nullopt, "to be or not", {}},
      {"", std::nullopt, "", {}},
      // Cut short: inside the reasoning, inside a header (the header is content, not lost), inside a call.
      {"<|channel|>analysis<|message|>Thinking about", "Thinking about", "", {}},
      {"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>fin",
       "a",
       "<|start|>assistant<|channel|>fin",
       {}},
      {"<|channel|>commentary to=functions.search<|message|>{\"q\":",
       std::nullopt,
       "",
       {{"search", "{\"q\":"}}},
      // Malformed headers: the rest is content.
      {"<|channel|>analysis\nfree text<|message|>x",
       std::nullopt,
       "<|channel|>analysis\nfree text<|message|>x",
       {}},
      {"<|channel|>final<|message|>a<|end|>garbage<|message|>b", std::nullopt, "agarbage<|message|>b", {}},
      // A header as long as one may be, its <|message|> arriving in pieces (found by harmony_fuzzer); one
      // byte
      // longer, it is not one.
      {"<|channel|>commentary to=functions." + std::string(256 - 35, 'x') + "<|message|>{}",
       std::nullopt,
       "{}",
       {}},
      {"<|channel|>commentary to=functions." + std::string(257 - 35, 'x') + "<|message|>{}",
       std::nullopt,
       "<|channel|>commentary to=functions." + std::string(257 - 35, 'x') + "<|message|>{}",
       {}},
      // Look-alikes of special tokens in a message's text stay text.
      {"<|channel|>final<|message|>a <|chan b <|", std::nullopt, "a <|chan b <|", {}},
  };
  return cases;
}

void ExpectSplit(const HarmonySplit& split, const Case& c, const std::string& where) {
  EXPECT_EQ(split.reasoning, c.reasoning) << where;
  EXPECT_EQ(split.content, c.content) << where;
  ASSERT_EQ(split.calls.size(), c.calls.size()) << where;
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(split.calls[i].name, c.calls[i].first) << where;
    EXPECT_EQ(split.calls[i].arguments, c.calls[i].second) << where;
  }
}

TEST(HarmonyTest, SplitsWholeReplies) {
  for (const Case& c : Cases()) ExpectSplit(SplitHarmony(c.text, kTools, /*final=*/true), c, c.text);
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A stream sends the differences of successive splits: each must extend the one before (calls, once there,
// never change), and the last (final) must be the whole reply's.
TEST(HarmonyTest, StreamedSplitsExtendEachOtherToTheWholeSplit) {
  for (const Case& c : Cases()) {
    for (size_t step = 1; step <= c.text.size() + 1; ++step) {
      HarmonySplit before;
      for (size_t at = 0;;) {
        const size_t next = std::min(c.text.size(), at + step);
        const bool last = next == c.text.size();
        const HarmonySplit split = SplitHarmony(std::string_view(c.text).substr(0, next), kTools, last);
        const std::string where = c.text + " step " + std::to_string(step) + " at " + std::to_string(next);
        ASSERT_TRUE(StartsWith(split.reasoning.value_or(""), before.reasoning.value_or(""))) << where;
        ASSERT_FALSE(before.reasoning && !split.reasoning) << where;
        ASSERT_TRUE(StartsWith(split.content, before.content)) << where;
        ASSERT_GE(split.calls.size(), before.calls.size()) << where;
        for (size_t i = 0; i < before.calls.size(); ++i) {
          ASSERT_EQ(split.calls[i].name, before.calls[i].name) << where;
          ASSERT_EQ(split.calls[i].arguments, before.calls[i].arguments) << where;
        }
        before = split;
        if (last) break;
        at = next;
      }
      ExpectSplit(before, c, c.text + " step " + std::to_string(step));
    }
  }
}

TEST(HarmonyTest, HoldsBackWhatMayStillChange) {
  // A header still arriving, a special token arriving as text, a call not yet ended.
  EXPECT_EQ(SplitHarmony("<|chan", kTools, false).content, "");
  EXPECT_EQ(SplitHarmony("<|channel|>final", kTools, false).content, "");
  EXPECT_EQ(SplitHarmony(" to", kTools, false).content, "");
  EXPECT_EQ(SplitHarmony("<|channel|>final<|message|>ab<|en", kTools, false).content, "ab");
  EXPECT_EQ(SplitHarmony("<|channel|>final<|message|>ab<|en", kTools, true).content, "ab<|en");
  EXPECT_TRUE(
      SplitHarmony("<|channel|>commentary to=functions.search<|message|>{}", kTools, false).calls.empty());
  EXPECT_EQ(SplitHarmony("<|channel|>commentary to=functions.search<|message|>{}", kTools, true).calls.size(),
            1u);
  // What cannot become a header is content at once.
  EXPECT_EQ(SplitHarmony("Hel", kTools, false).content, "Hel");
}

TEST(HarmonyTest, NoToolsMeansNoCalls) {
  const HarmonySplit split =
      SplitHarmony("<|channel|>commentary to=functions.search<|message|>{\"q\":1}", {}, true);
  EXPECT_TRUE(split.calls.empty());
  EXPECT_EQ(split.content, "{\"q\":1}");
}

TEST(HarmonyTest, RecognisesHarmonyTemplates) {
  EXPECT_TRUE(IsHarmonyTemplate("{{- '<|start|>assistant<|channel|>final<|message|>' }}"));
  EXPECT_TRUE(
      IsHarmonyTemplate("<|channel|>analysis ... {%- if add_generation_prompt -%}\n<|start|>assistant"));
  EXPECT_FALSE(IsHarmonyTemplate("<|im_start|>assistant\n<think>"));
  EXPECT_FALSE(IsHarmonyTemplate("<|start|>assistant"));
}

// The reasoning tokens of a reply streamed in tokens of `step` bytes: a token counts when the analysis
// message it falls in (by where the token ends) has a complete header.
TEST(HarmonyTest, CountsTheAnalysisTokens) {
  const std::string reply =
      "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Done.";
  const size_t analysis_end = reply.find("<|end|>") + 7;
  for (size_t step = 1; step <= reply.size(); ++step) {
    HarmonyTokenCounter counter;
    int32_t expected = 0;
    for (size_t at = 0; at < reply.size();) {
      const size_t from = at;
      at = std::min(reply.size(), at + step);
      counter.AddToken(std::string_view(reply).substr(0, at));
      if (at <= analysis_end || from < analysis_end) ++expected;
    }
    EXPECT_EQ(counter.tokens(), expected) << "step " << step;
  }
  // As gpt-oss writes it: special tokens whole.
  HarmonyTokenCounter counter;
  std::string text;
  for (const char* token : {"<|channel|>", "analysis", "<|message|>", "Hm", "m.", "<|end|>", "<|start|>",
                            "assistant", "<|channel|>", "final", "<|message|>", "Hi"}) {
    text += token;
    counter.AddToken(text);
  }
  EXPECT_EQ(counter.tokens(), 6);
  // Not Harmony: nothing is reasoning; a call's message neither.
  HarmonyTokenCounter plain;
  plain.AddToken("Hello");
  EXPECT_EQ(plain.tokens(), 0);
  HarmonyTokenCounter call;
  call.AddToken("<|channel|>analysis to=functions.search<|message|>");
  call.AddToken("<|channel|>analysis to=functions.search<|message|>{}");
  EXPECT_EQ(call.tokens(), 0);
}

}  // namespace harmony_test
}  // namespace lockstep::chat
