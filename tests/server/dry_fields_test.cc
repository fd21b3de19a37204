// DRY's request fields (server/sampler_fields.h) over GPT-2's real vocabulary: ReadDryFields' defaults,
// llama.cpp's readings and its refusals naming the field. (The restart sequences themselves:
// tests/engine/dry_breakers_test.cc.)
#include <gtest/gtest.h>

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
