// DRY's breaker strings (engine/dry_breakers.h) over GPT-2's real vocabulary: the restart sequences a
// breaker string becomes (tokens holding it, and tokens ending with its start followed by the rest), a
// breaker spanning two tokens stopping a match in the sampler's penalty, and the checks of DRY's flags that
// `serve` and the local commands share.
#include "engine/dry_breakers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/dry_penalty.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {
namespace {

std::shared_ptr<const Tokenizer> BreakerGpt2() { return testing::TestVocabTokenizer("gpt-2"); }

std::vector<int32_t> BreakerEncode(const Tokenizer& t, const std::string& text) {
  auto ids = t.Encode(text, /*add_bos=*/false, /*parse_special=*/false);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>();
}

bool HasRestartTail(const DrySequenceBreakers& b, int32_t head, const std::vector<int32_t>& tail) {
  const auto* tails = b.TailsOf(head);
  return tails != nullptr && std::find(tails->begin(), tails->end(), tail) != tails->end();
}

TEST(DryBreakers, ABreakerBecomesTheTokenSequencesThatSpellIt) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = BreakerGpt2();
  ASSERT_NE(gpt2, nullptr);
  const std::vector<int32_t> bob_colon = BreakerEncode(*gpt2, " Bob:");
  ASSERT_EQ(bob_colon.size(), 2u);  // " Bob" ":"
  const std::vector<int32_t> colon = BreakerEncode(*gpt2, ":");
  ASSERT_EQ(colon.size(), 1u);
  const auto breakers = DryRestartSequences(*gpt2, {"Bob:"});
  // " Bob" ends with "Bob", the breaker's start: ":" must follow. ":" alone starts nothing.
  EXPECT_TRUE(HasRestartTail(*breakers, bob_colon[0], colon));
  EXPECT_FALSE(breakers->IsSingleToken(bob_colon[0]));
  EXPECT_EQ(breakers->TailsOf(colon[0]), nullptr);
  // "B" is a start too, with the rest "ob:" tokenized.
  EXPECT_TRUE(HasRestartTail(*breakers, BreakerEncode(*gpt2, "B")[0], BreakerEncode(*gpt2, "ob:")));
  // A one-character breaker: every token holding it is a breaker on its own (":" and, say, "):").
  const auto colons = DryRestartSequences(*gpt2, {":"});
  EXPECT_TRUE(colons->IsSingleToken(colon[0]));
  const std::vector<int32_t> paren_colon = BreakerEncode(*gpt2, "):");
  ASSERT_EQ(paren_colon.size(), 1u);
  EXPECT_TRUE(colons->IsSingleToken(paren_colon[0]));
  EXPECT_FALSE(colons->IsSingleToken(bob_colon[0]));
  // Several breakers, duplicates once; empty strings add nothing.
  EXPECT_EQ(DryRestartSequences(*gpt2, {":", ":", ""})->size(), colons->size());
  EXPECT_EQ(DryRestartSequences(*gpt2, {})->size(), 0u);
}

TEST(DryBreakers, ABreakerSpanningTwoTokensStopsARepeat) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = BreakerGpt2();
  ASSERT_NE(gpt2, nullptr);
  // " Bob: three four" repeats; after the first copy came " five".
  const std::vector<int32_t> history =
      BreakerEncode(*gpt2, " one two Bob: three four five six Bob: three four");
  const int32_t five = BreakerEncode(*gpt2, " five")[0];
  const auto penalty_of_five = [&](std::shared_ptr<const DrySequenceBreakers> breakers) {
    DryParams p;
    p.multiplier = 1.0f;
    p.base = 2.0f;
    p.allowed_length = 2;
    p.breakers = std::move(breakers);
    std::vector<float> logits(size_t(gpt2->vocab_size()), 0.0f);
    DryPenalty().Apply(p, history, logits);
    return -logits[size_t(five)];
  };
  // Without breakers: " Bob" ":" " three" " four" (4 tokens) repeat: 2^(4 - 2).
  EXPECT_EQ(penalty_of_five(nullptr), 4.0f);
  // "Bob:" breaks: only " three four" counts, 2^0. Neither token alone breaks anything.
  EXPECT_EQ(penalty_of_five(DryRestartSequences(*gpt2, {"Bob:"})), 1.0f);
  EXPECT_EQ(penalty_of_five(DryRestartSequences(*gpt2, {"Bob;"})), 4.0f);
  // llama.cpp's defaults hold ":": the same cut.
  EXPECT_EQ(penalty_of_five(DryRestartSequences(*gpt2, DefaultDryBreakers())), 1.0f);
}

// CheckDryFlags' message for `dry` ("" when it accepts it).
std::string DryFlagsError(const DryParams& dry) {
  const Status s = CheckDryFlags(dry);
  return s.ok() ? "" : s.message();
}

TEST(DryBreakers, FlagValuesOutOfRangeNameTheFlag) {
  EXPECT_EQ(DryFlagsError(DryParams()), "");
  DryParams dry;
  dry.multiplier = -1.0f;
  EXPECT_NE(DryFlagsError(dry).find("--dry-multiplier must be"), std::string::npos);
  dry = DryParams();
  dry.base = 0.5f;
  EXPECT_EQ(DryFlagsError(dry), "--dry-base must be from 1 to 1e6, got 0.5");
  dry.base = std::nanf("");
  EXPECT_NE(DryFlagsError(dry).find("--dry-base must be"), std::string::npos);
  dry = DryParams();
  dry.allowed_length = -1;
  EXPECT_NE(DryFlagsError(dry).find("--dry-allowed-length must be"), std::string::npos);
  dry = DryParams();
  dry.penalty_last_n = -2;
  EXPECT_NE(DryFlagsError(dry).find("--dry-penalty-last-n must be"), std::string::npos);
  dry.penalty_last_n = 0;
  dry.multiplier = 1e6f;
  EXPECT_EQ(DryFlagsError(dry), "");
}

TEST(DryBreakers, FlagBreakersReplaceTheDefaultsAndNoneClearsThem) {
  EXPECT_EQ(*DryBreakersFromFlags({}), DefaultDryBreakers());
  EXPECT_EQ(*DryBreakersFromFlags({"Bob:", ""}), std::vector<std::string>{"Bob:"});
  EXPECT_TRUE(DryBreakersFromFlags({"none"})->empty());
  EXPECT_EQ(*DryBreakersFromFlags({"none", ":"}), (std::vector<std::string>{"none", ":"}));
  // Cut at 40 bytes, not inside a character (as the request field).
  const std::string long_breaker = std::string(39, 'a') + "\u00e9";
  EXPECT_EQ(DryBreakersFromFlags({long_breaker})->at(0), std::string(39, 'a'));
  const auto too_many = DryBreakersFromFlags(std::vector<std::string>(kMaxDryBreakers + 1, "x"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(), "--dry-sequence-breaker may be given at most 32 times, got 33");
  EXPECT_EQ(DryBreakersFromFlags(std::vector<std::string>(kMaxDryBreakers, "x"))->size(), kMaxDryBreakers);
}

}  // namespace
}  // namespace lockstep
