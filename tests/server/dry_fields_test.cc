// DRY's request fields (server/sampler_fields.h) over GPT-2's real vocabulary: the restart sequences a
// breaker string becomes (tokens holding it, and tokens ending with its start followed by the rest), a
// breaker spanning two tokens stopping a match in the sampler's penalty, and ReadDryFields' defaults,
// llama.cpp's readings and its refusals naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/dry_penalty.h"
#include "server/sampler_fields.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {
namespace {

std::shared_ptr<const Tokenizer> DryGpt2() { return lockstep::testing::TestVocabTokenizer("gpt-2"); }

std::vector<int32_t> DryEncode(const Tokenizer& t, const std::string& text) {
  auto ids = t.Encode(text, /*add_bos=*/false, /*parse_special=*/false);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>();
}

bool HasTail(const DrySequenceBreakers& b, int32_t head, const std::vector<int32_t>& tail) {
  const auto* tails = b.TailsOf(head);
  return tails != nullptr && std::find(tails->begin(), tails->end(), tail) != tails->end();
}

TEST(DryFields, ABreakerBecomesTheTokenSequencesThatSpellIt) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = DryGpt2();
  ASSERT_NE(gpt2, nullptr);
  const std::vector<int32_t> bob_colon = DryEncode(*gpt2, " Bob:");
  ASSERT_EQ(bob_colon.size(), 2u);  // " Bob" ":"
  const std::vector<int32_t> colon = DryEncode(*gpt2, ":");
  ASSERT_EQ(colon.size(), 1u);
  const auto breakers = DryRestartSequences(*gpt2, {"Bob:"});
  // " Bob" ends with "Bob", the breaker's start: ":" must follow. ":" alone starts nothing.
  EXPECT_TRUE(HasTail(*breakers, bob_colon[0], colon));
  EXPECT_FALSE(breakers->IsSingleToken(bob_colon[0]));
  EXPECT_EQ(breakers->TailsOf(colon[0]), nullptr);
  // "B" is a start too, with the rest "ob:" tokenized.
  EXPECT_TRUE(HasTail(*breakers, DryEncode(*gpt2, "B")[0], DryEncode(*gpt2, "ob:")));
  // A one-character breaker: every token holding it is a breaker on its own (":" and, say, "):").
  const auto colons = DryRestartSequences(*gpt2, {":"});
  EXPECT_TRUE(colons->IsSingleToken(colon[0]));
  const std::vector<int32_t> paren_colon = DryEncode(*gpt2, "):");
  ASSERT_EQ(paren_colon.size(), 1u);
  EXPECT_TRUE(colons->IsSingleToken(paren_colon[0]));
  EXPECT_FALSE(colons->IsSingleToken(bob_colon[0]));
  // Several breakers, duplicates once; empty strings add nothing.
  EXPECT_EQ(DryRestartSequences(*gpt2, {":", ":", ""})->size(), colons->size());
  EXPECT_EQ(DryRestartSequences(*gpt2, {})->size(), 0u);
}

TEST(DryFields, ABreakerSpanningTwoTokensStopsARepeat) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = DryGpt2();
  ASSERT_NE(gpt2, nullptr);
  // " Bob: three four" repeats; after the first copy came " five".
  const std::vector<int32_t> history = DryEncode(*gpt2, " one two Bob: three four five six Bob: three four");
  const int32_t five = DryEncode(*gpt2, " five")[0];
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

struct DryRead {
  SamplingParams sampling;
  std::vector<std::string> breakers;
  bool failed = false;
  ApiError error;
};

DryRead ReadDry(const Tokenizer& tokenizer, const nlohmann::json& body) {
  DryRead out;
  FieldReader f(body);
  ReadDryFields(f, tokenizer, SamplingDefaults(), out.sampling, &out.breakers);
  out.failed = f.failed();
  out.error = f.error();
  return out;
}

TEST(DryFields, ReadsLlamaCppsFieldsAndDefaults) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = DryGpt2();
  ASSERT_NE(gpt2, nullptr);
  // Absent: off, llama.cpp's defaults, and no tokenizing.
  DryRead none = ReadDry(*gpt2, nlohmann::json::object());
  ASSERT_FALSE(none.failed);
  EXPECT_FALSE(none.sampling.dry.enabled());
  EXPECT_EQ(none.sampling.dry.base, 1.75f);
  EXPECT_EQ(none.sampling.dry.allowed_length, 2);
  EXPECT_EQ(none.sampling.dry.penalty_last_n, -1);
  EXPECT_EQ(none.sampling.dry.breakers, nullptr);
  EXPECT_EQ(none.breakers, DefaultDryBreakers());
  // On with the default breakers.
  DryRead on = ReadDry(*gpt2, {{"dry_multiplier", 0.8}});
  ASSERT_FALSE(on.failed);
  EXPECT_TRUE(on.sampling.dry.enabled());
  ASSERT_NE(on.sampling.dry.breakers, nullptr);
  EXPECT_EQ(on.sampling.dry.breakers->size(), DryRestartSequences(*gpt2, DefaultDryBreakers())->size());
  // Every field; a base below 1 reads as 1.75 (llama.cpp's server); breakers cut at 40 bytes, not inside a
  // character; empty ones dropped.
  const std::string long_breaker = std::string(39, 'x') + "\xc3\xa9";  // 41 bytes, "é" at 39..40
  DryRead all = ReadDry(*gpt2, {{"dry_multiplier", 2},
                                {"dry_base", 0.5},
                                {"dry_allowed_length", 0},
                                {"dry_penalty_last_n", 64},
                                {"dry_sequence_breakers", {"\n", "", long_breaker}}});
  ASSERT_FALSE(all.failed) << all.error.status.message();
  EXPECT_EQ(all.sampling.dry.multiplier, 2.0f);
  EXPECT_EQ(all.sampling.dry.base, 1.75f);
  EXPECT_EQ(all.sampling.dry.allowed_length, 0);
  EXPECT_EQ(all.sampling.dry.penalty_last_n, 64);
  EXPECT_EQ(all.breakers, (std::vector<std::string>{"\n", std::string(39, 'x')}));
  EXPECT_EQ(ReadDry(*gpt2, {{"dry_base", 3}}).sampling.dry.base, 3.0f);
}

TEST(DryFields, BadValuesFailNamingTheField) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto gpt2 = DryGpt2();
  ASSERT_NE(gpt2, nullptr);
  const nlohmann::json too_many(kMaxDryBreakers + 1, ":");
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"dry_multiplier", "high"}}, "dry_multiplier"},
      {{{"dry_multiplier", -0.5}}, "dry_multiplier"},
      {{{"dry_base", "x"}}, "dry_base"},
      {{{"dry_allowed_length", -1}}, "dry_allowed_length"},
      {{{"dry_allowed_length", 1.5}}, "dry_allowed_length"},
      {{{"dry_penalty_last_n", -2}}, "dry_penalty_last_n"},
      {{{"dry_sequence_breakers", ":"}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", nlohmann::json::array()}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", {":", 5}}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", too_many}}, "dry_sequence_breakers"},
  };
  for (const auto& [body, param] : cases) {
    const DryRead r = ReadDry(*gpt2, body);
    EXPECT_TRUE(r.failed) << body.dump();
    EXPECT_EQ(r.error.param, param) << body.dump();
    EXPECT_NE(r.error.status.message().find(param), std::string::npos) << r.error.status.message();
  }
}

}  // namespace
}  // namespace lockstep::server
