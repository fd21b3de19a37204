// FIM token detection (tokenizer/fim_tokens.h): by piece on the suite's code vocabularies (StarCoder,
// Refact, DeepSeek-Coder; none in llama-spm), by GGUF key (current and older names, keys before pieces, an
// id out of range refused) on toy vocabularies, and FIM_PAD / FIM_REP / FIM_SEP ending generation.
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"
#include "vocab_suite.h"

namespace lockstep {
namespace fim_tokens_test {

const Tokenizer& Suite(const std::string& name) {
  const auto& loaded = testing::LoadSuiteTokenizer(name);
  if (!loaded.ok()) {
    ADD_FAILURE() << name << ": " << loaded.status().ToString();
    std::abort();
  }
  return **loaded;
}

// A toy byte-level vocabulary: the 256 byte characters, then `extra` pieces (control tokens), and `keys`.
Result<std::unique_ptr<Tokenizer>> Toy(const std::vector<std::string>& extra,
                                       const std::vector<std::pair<std::string, int64_t>>& keys) {
  std::vector<std::pair<std::string, int32_t>> pieces;
  for (const std::string& piece : extra) pieces.emplace_back(piece, 3);
  GgufWriter w = testing::ByteLevelToyVocabulary(pieces);
  for (const auto& [key, value] : keys) w.Set(key, GgufValue::Int64(value));
  const std::vector<std::byte> bytes = w.ToBytes();
  auto file = GgufFile::FromBytes(bytes, "toy.gguf");
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);
}

TEST(FimTokensTest, StarCoderByPiece) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Suite("starcoder");
  const FimTokens& fim = t.fim();
  EXPECT_EQ(fim.pre, t.FindToken("<fim_prefix>"));
  EXPECT_EQ(fim.suf, t.FindToken("<fim_suffix>"));
  EXPECT_EQ(fim.mid, t.FindToken("<fim_middle>"));
  EXPECT_EQ(fim.pad, t.FindToken("<fim_pad>"));
  EXPECT_GE(fim.pre, 0);
  EXPECT_TRUE(fim.CanInfill());
  // <file_sep> is not a spelling llama.cpp knows (only Qwen's <|file_sep|>), nor is there a repo token.
  EXPECT_GE(t.FindToken("<file_sep>"), 0);
  EXPECT_EQ(fim.sep, -1);
  EXPECT_EQ(fim.rep, -1);
  EXPECT_TRUE(t.IsEndOfGeneration(fim.pad));
  EXPECT_FALSE(t.IsEndOfGeneration(fim.mid));
}

TEST(FimTokensTest, RefactHasARepoToken) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Suite("refact");
  EXPECT_TRUE(t.fim().CanInfill());
  EXPECT_EQ(t.fim().rep, t.FindToken("<reponame>"));
  EXPECT_GE(t.fim().rep, 0);
  EXPECT_EQ(t.fim().sep, -1);
  EXPECT_TRUE(t.IsEndOfGeneration(t.fim().rep));
}

TEST(FimTokensTest, DeepSeekCoderBeginHoleEnd) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Suite("deepseek-coder");
  EXPECT_EQ(t.fim().pre, t.FindToken("<｜fim▁begin｜>"));
  EXPECT_EQ(t.fim().suf, t.FindToken("<｜fim▁hole｜>"));
  EXPECT_EQ(t.fim().mid, t.FindToken("<｜fim▁end｜>"));
  EXPECT_TRUE(t.fim().CanInfill());
}

TEST(FimTokensTest, LlamaSpmHasNone) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const FimTokens& fim = Suite("llama-spm").fim();
  EXPECT_FALSE(fim.CanInfill());
  for (int32_t id : {fim.pre, fim.suf, fim.mid, fim.pad, fim.rep, fim.sep}) EXPECT_EQ(id, -1);
}

TEST(FimTokensTest, QwenPiecesGiveRepoAndFileSeparators) {
  auto t = Toy(
      {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"},
      {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const FimTokens& fim = (*t)->fim();
  EXPECT_EQ(fim.pre, 256);
  EXPECT_EQ(fim.suf, 257);
  EXPECT_EQ(fim.mid, 258);
  EXPECT_EQ(fim.pad, 259);
  EXPECT_EQ(fim.rep, 260);
  EXPECT_EQ(fim.sep, 261);
  for (int32_t id : {259, 260, 261}) EXPECT_TRUE((*t)->IsEndOfGeneration(id)) << id;
  for (int32_t id : {256, 257, 258}) EXPECT_FALSE((*t)->IsEndOfGeneration(id)) << id;
}

TEST(FimTokensTest, KeysComeBeforePieces) {
  // The keys name other tokens than the pieces: the keys win.
  auto t = Toy({"<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<A>", "<B>", "<C>", "<D>"},
               {{"tokenizer.ggml.fim_pre_token_id", 259},
                {"tokenizer.ggml.fim_suf_token_id", 260},
                {"tokenizer.ggml.fim_mid_token_id", 261},
                {"tokenizer.ggml.fim_sep_token_id", 262}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->fim().pre, 259);
  EXPECT_EQ((*t)->fim().suf, 260);
  EXPECT_EQ((*t)->fim().mid, 261);
  EXPECT_EQ((*t)->fim().sep, 262);
  EXPECT_TRUE((*t)->IsEndOfGeneration(262));
}

TEST(FimTokensTest, OlderKeyNames) {
  auto t = Toy({"<A>", "<B>", "<C>"}, {{"tokenizer.ggml.prefix_token_id", 256},
                                       {"tokenizer.ggml.suffix_token_id", 257},
                                       {"tokenizer.ggml.middle_token_id", 258}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->fim().pre, 256);
  EXPECT_EQ((*t)->fim().suf, 257);
  EXPECT_EQ((*t)->fim().mid, 258);
  EXPECT_TRUE((*t)->fim().CanInfill());
}

TEST(FimTokensTest, MissingMiddleCannotInfill) {
  auto t = Toy({"<PRE>", "<SUF>"}, {{"tokenizer.ggml.fim_mid_token_id", -1}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->fim().pre, 256);
  EXPECT_EQ((*t)->fim().suf, 257);
  EXPECT_EQ((*t)->fim().mid, -1);
  EXPECT_FALSE((*t)->fim().CanInfill());
}

TEST(FimTokensTest, KeyOutOfRangeIsRefused) {
  auto t = Toy({"<A>"}, {{"tokenizer.ggml.fim_pad_token_id", 999}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.ggml.fim_pad_token_id = 999 is out of range"),
            std::string::npos)
      << t.status().message();
}

}  // namespace fim_tokens_test
}  // namespace lockstep
