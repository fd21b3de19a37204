// RandomPromptOfTokens: --prompt-len in tokens as a counter measures them (bench serve counts with the
// server's POST /tokenize; here counters that make words cost several tokens, as small vocabularies do).
#include <gtest/gtest.h>

#include <algorithm>

#include "client/bench_workload.h"

namespace lockstep::client {
namespace {

int Words(const std::string& text) {
  return text.empty() ? 0 : 1 + int(std::count(text.begin(), text.end(), ' '));
}

TEST(RandomPromptOfTokensTest, FitsTheCountWithinOneWord) {
  // One token per byte (a byte-level vocabulary without merges): 64 "tokens" is far fewer than 64 words.
  const TokenCounter bytes = [](const std::string& text) -> Result<int> { return int(text.size()); };
  for (int target : {1, 10, 64, 400}) {
    std::mt19937_64 rng(7);
    auto prompt = RandomPromptOfTokens(target, rng, bytes);
    ASSERT_TRUE(prompt.ok());
    if (target >= 12) {  // one word always fits
      EXPECT_LE(int(prompt->size()), target) << *prompt;
      EXPECT_GT(int(prompt->size()), target - 13)
          << *prompt;  // the next word (<= 11 letters + space) did not fit
    }
  }
  // One token per word: exactly the target.
  const TokenCounter words = [](const std::string& text) -> Result<int> { return Words(text); };
  std::mt19937_64 rng(3);
  auto prompt = RandomPromptOfTokens(50, rng, words);
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(Words(*prompt), 50);
  // The same words as RandomPrompt draws for that seed.
  std::mt19937_64 rng_a(3), rng_b(3);
  EXPECT_EQ(*RandomPromptOfTokens(50, rng_a, words), RandomPrompt(50, rng_b));
}

TEST(RandomPromptOfTokensTest, CounterErrorsComeBack) {
  std::mt19937_64 rng(1);
  auto prompt = RandomPromptOfTokens(
      20, rng, [](const std::string&) -> Result<int> { return NotFound("HTTP 404 from /tokenize"); });
  ASSERT_FALSE(prompt.ok());
  EXPECT_NE(prompt.status().message().find("404"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::client
