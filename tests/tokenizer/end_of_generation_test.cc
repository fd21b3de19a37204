// End-of-generation tokens on toy byte-level vocabularies: chat end markers that are control tokens end
// generation, and a Harmony vocabulary (gpt-oss: <|return|> and <|call|> among its control tokens) keeps
// <|end|> out, as it only closes one message of a reply.
#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {
namespace end_of_generation_test {

// The 256 byte characters, then `extra` pieces with their token types (ids from 256 on), and `keys`.
std::shared_ptr<const Tokenizer> Toy(const std::vector<std::pair<std::string, int32_t>>& extra,
                                     const std::vector<std::pair<std::string, int64_t>>& keys = {}) {
  GgufWriter w = testing::ByteLevelToyVocabulary(extra);
  for (const auto& [key, value] : keys) w.Set(key, GgufValue::Int64(value));
  return testing::ToyTokenizer(w);
}

constexpr int32_t kControl = 3;
constexpr int32_t kNormal = 1;

TEST(EndOfGenerationTest, ChatEndMarkersEndGeneration) {
  auto t = Toy({{"<|end|>", kControl}, {"<|im_end|>", kControl}, {"<|user|>", kControl}});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->eot_id(), 257);  // by piece (<|im_end|> before <|end|>), no eot key
  EXPECT_TRUE(t->IsEndOfGeneration(256));
  EXPECT_TRUE(t->IsEndOfGeneration(257));
  EXPECT_FALSE(t->IsEndOfGeneration(258));
}

TEST(EndOfGenerationTest, HarmonyEndClosesAMessageNotTheReply) {
  // gpt-oss's ids, in order: <|return|> 200002, <|end|> 200007, <|call|> 200012 (here 256, 258, 260).
  auto t = Toy({{"<|return|>", kControl},
                {"<|channel|>", kControl},
                {"<|end|>", kControl},
                {"<|message|>", kControl},
                {"<|call|>", kControl},
                {"<|endoftext|>", kControl}},
               {{"tokenizer.ggml.eos_token_id", 256}});
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->IsEndOfGeneration(256));   // <|return|>: the final answer is done
  EXPECT_TRUE(t->IsEndOfGeneration(260));   // <|call|>: a tool call is done
  EXPECT_TRUE(t->IsEndOfGeneration(261));   // <|endoftext|>
  EXPECT_FALSE(t->IsEndOfGeneration(258));  // <|end|>: the reasoning is done, the answer follows
  EXPECT_FALSE(t->IsEndOfGeneration(257));
  EXPECT_FALSE(t->IsEndOfGeneration(259));
  // Nor when a key names it the end-of-turn token.
  auto keyed = Toy({{"<|return|>", kControl}, {"<|end|>", kControl}, {"<|call|>", kControl}},
                   {{"tokenizer.ggml.eot_token_id", 257}});
  ASSERT_NE(keyed, nullptr);
  EXPECT_FALSE(keyed->IsEndOfGeneration(257));
  EXPECT_TRUE(keyed->IsEndOfGeneration(256));
  EXPECT_TRUE(keyed->IsEndOfGeneration(258));
}

TEST(EndOfGenerationTest, EndStaysWithoutBothHarmonyTerminators) {
  // <|return|> alone, or <|call|> as plain text: not a Harmony vocabulary, <|end|> still ends generation.
  auto only_return = Toy({{"<|return|>", kControl}, {"<|end|>", kControl}});
  ASSERT_NE(only_return, nullptr);
  EXPECT_TRUE(only_return->IsEndOfGeneration(257));
  auto plain_call = Toy({{"<|return|>", kControl}, {"<|end|>", kControl}, {"<|call|>", kNormal}});
  ASSERT_NE(plain_call, nullptr);
  EXPECT_TRUE(plain_call->IsEndOfGeneration(257));
  EXPECT_FALSE(plain_call->IsEndOfGeneration(258));
}

}  // namespace end_of_generation_test
}  // namespace lockstep
