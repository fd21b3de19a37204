// Pre-tokenizer regex lists: splits for names whose vocabularies are not in the suite (Llama 3, Qwen2,
// Tekken ...) pinned down by hand, and the invariant that the pieces always cover the text.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

std::vector<std::string> Split(const std::string& pre, const std::string& text) {
  auto spec = LookupPreTokenizer(pre);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto p = PreTokenizer::Create(*spec);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  std::vector<std::string_view> words;
  EXPECT_TRUE((*p)->Split(text, &words).ok());
  return std::vector<std::string>(words.begin(), words.end());
}

using Words = std::vector<std::string>;

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_EQ(Split("gpt-2", "Hello world's  12345!!"), Words({"Hello", " world", "'s", " ", " 12345", "!!"}));
  EXPECT_EQ(Split("gpt-2", "a   b"), Words({"a", "  ", " b"}));
}

TEST(PreTokenizerTest, Llama3) {
  EXPECT_EQ(Split("llama-bpe", "I'VE 1234567 apples!\n\n  x"),
            Words({"I", "'VE", " ", "123", "456", "7", " apples", "!\n\n", " ", " x"}));
  EXPECT_EQ(Split("llama-bpe", "foo\n  \nbar"), Words({"foo", "\n  \n", "bar"}));
  auto spec = LookupPreTokenizer("llama-bpe");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->ignore_merges);
  EXPECT_TRUE(spec->add_bos_default);
}

TEST(PreTokenizerTest, Qwen2SingleDigits) {
  EXPECT_EQ(Split("qwen2", "x=123"), Words({"x", "=", "1", "2", "3"}));
}

TEST(PreTokenizerTest, Qwen35KeepsCombiningMarksWithTheirLetters) {
  // "e" + U+0301 COMBINING ACUTE ACCENT: one word for qwen35, the mark split off by qwen2's regex.
  EXPECT_EQ(Split("qwen35",
                  "Caf"
                  "e\xCC\x81 x=12"),
            Words({"Caf"
                   "e\xCC\x81",
                   " x", "=", "1", "2"}));
  EXPECT_EQ(Split("qwen2",
                  "Caf"
                  "e\xCC\x81"),
            Words({"Cafe", "\xCC\x81"}));
}

TEST(PreTokenizerTest, RegexListsApplyInOrder) {
  // starcoder isolates every digit first, then applies the GPT-2 regex inside the remaining pieces.
  EXPECT_EQ(Split("starcoder", "ab 12c"), Words({"ab", " ", "1", "2", "c"}));
  // deepseek-coder: newlines alone, then letters, punctuation, CJK runs and single digits.
  EXPECT_EQ(Split("deepseek-coder", "Hi, 我想\n42"), Words({"Hi", ",", " ", "我想", "\n", "4", "2"}));
}

TEST(PreTokenizerTest, DeepSeekV3DigitTriplesThenCjkAndKanaRunsThenWords) {
  // Digits in threes first, then runs of CJK ideographs and kana, then the word regex, in which an ASCII
  // punctuation mark joins the letters after it ("a.b": ".b") unless a space took it first (" #").
  EXPECT_EQ(Split("deepseek-v3", "Hello 12345 \xE6\x88\x91\xE6\x83\xB3\xE3\x81\xB2\xE3\x82\x89!!(x)\n\n  x"),
            Words({"Hello", " ", "123", "45", " ", "\xE6\x88\x91\xE6\x83\xB3\xE3\x81\xB2\xE3\x82\x89", "!!(",
                   "x", ")\n\n", " ", " x"}));
  EXPECT_EQ(Split("deepseek-v3", "a.b #include @User"), Words({"a", ".b", " #", "include", " @", "User"}));
}

TEST(PreTokenizerTest, Tekken) {
  EXPECT_EQ(Split("tekken", "HelloWorld ABCdef"), Words({"Hello", "World", " ABCdef"}));
}

TEST(PreTokenizerTest, Gpt4oSplitsCaseRunsContractionsAndDigitTriples) {
  // o200k's regex (gpt-oss): case runs as tekken's, contractions of any case kept on the word, digits in
  // threes, a space before a digit alone, newline runs together.
  EXPECT_EQ(Split("gpt-4o", "HelloWorld ABCdef it's I'M 12345\n\n  x"),
            Words({"Hello", "World", " ABCdef", " it's", " I'M", " ", "123", "45", "\n\n", " ", " x"}));
  EXPECT_EQ(Split("llama4", "a/b!!/\nc"), Words({"a", "/b", "!!/\n", "c"}));
}

TEST(PreTokenizerTest, UnknownNameIsUnimplemented) {
  auto spec = LookupPreTokenizer("nope");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(LookupPreTokenizer("").ok());
}

TEST(PreTokenizerTest, EveryKnownListCompilesAndCoversLongInput) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "Word 123 \xE6\x88\x91 \xF0\x9F\xA6\x99   \n\t!?";
  text += std::string(100000, ' ') + "x" + std::string(50000, '\n');
  for (const char* name : {"default",   "llama-bpe", "qwen2",  "deepseek-llm", "deepseek-coder", "falcon",
                           "starcoder", "refact",    "mpt",    "gpt-neox",     "smollm",         "dbrx",
                           "phi-2",     "tekken",    "bloom",  "viking",       "chatglm-bpe",    "glm4",
                           "command-r", "olmo",      "gpt-4o", "qwen35",       "deepseek-v3"}) {
    const Words words = Split(name, text);
    std::string joined;
    for (const auto& w : words) {
      EXPECT_FALSE(w.empty()) << name;
      joined += w;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

}  // namespace
}  // namespace lockstep
