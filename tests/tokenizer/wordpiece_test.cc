// WordPiece (tokenizer.ggml.model "bert") on the bge vocabulary of the suite: normalisation, word splitting,
// [CLS]/[SEP], unknown words. The suite's .inp/.out pairs (conformance_test.cc) cover the rest.
#include <gtest/gtest.h>

#include "testing/testdata.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_class.h"
#include "vocab_suite.h"

namespace lockstep {
namespace {

std::vector<int32_t> BgeEncode(std::string_view text, bool add_bos) {
  const auto& loaded = testing::LoadSuiteTokenizer("bert-bge");
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return {};
  auto ids = (*loaded)->Encode(text, add_bos, /*parse_special=*/false);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(WordPieceTest, ClsAndSepAroundTheText) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = **testing::LoadSuiteTokenizer("bert-bge");
  EXPECT_EQ(t.model_name(), "bert");
  EXPECT_EQ(t.bos_id(), 101);  // [CLS], from cls_token_id
  EXPECT_EQ(t.unk_id(), 100);
  EXPECT_EQ(BgeEncode("Hello, world!", true), std::vector<int32_t>({101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(BgeEncode("", true), std::vector<int32_t>({101, 102}));
}

TEST(WordPieceTest, LowerCasesStripsAccentsAndSplitsPunctuation) {
  LOCKSTEP_REQUIRE_TESTDATA();
  EXPECT_EQ(BgeEncode("H\xC3\xA9LLO,world!", false), BgeEncode("hello , world !", false));
  EXPECT_EQ(BgeEncode("a$b", false), BgeEncode("a $ b", false));  // an ASCII symbol is a word of its own
  EXPECT_EQ(BgeEncode("a\tb\xE2\x80\x83"
                      "c",
                      false),
            BgeEncode("a b c", false));  // tab, em space
  EXPECT_EQ(BgeEncode("a\xE2\x80\x8B"
                      "b",
                      false),
            BgeEncode("ab", false));  // U+200B (Cf) is dropped
}

TEST(WordPieceTest, ContinuationPiecesAndUnknownWords) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = **testing::LoadSuiteTokenizer("bert-bge");
  const std::vector<int32_t> ids = BgeEncode("tokenization", false);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(t.TokenPiece(ids[0]).rfind("\xE2\x96\x81", 0), 0u);  // word-initial: ▁
  EXPECT_NE(t.TokenPiece(ids[1]).rfind("\xE2\x96\x81", 0), 0u);  // continuation: no ▁
  EXPECT_EQ(t.Decode(ids), "tokenization");
  // A word with a part no piece matches is one [UNK], whole.
  EXPECT_EQ(BgeEncode("x\xF0\x9F\xA6\x99y z", false), std::vector<int32_t>({100, BgeEncode("z", false)[0]}));
}

TEST(UnicodeClassTest, Tables) {
  EXPECT_EQ(unicode::NfdFirst(0xE9), uint32_t('e'));
  EXPECT_EQ(unicode::NfdFirst(0xAC00), 0x1100u);  // Hangul syllable GA -> leading jamo
  EXPECT_EQ(unicode::NfdFirst('a'), uint32_t('a'));
  EXPECT_EQ(unicode::ToLower('A'), uint32_t('a'));
  EXPECT_EQ(unicode::ToLower(0x411), 0x431u);  // Cyrillic Б
  EXPECT_EQ(unicode::ToLower(0x130), uint32_t('i'));
  EXPECT_TRUE(unicode::IsPunctuation(0x3002));  // 。
  EXPECT_FALSE(unicode::IsPunctuation('$'));
  EXPECT_TRUE(unicode::IsControl(0x200B));
  EXPECT_FALSE(unicode::IsControl(0x378));  // unassigned (Cn)
  EXPECT_TRUE(unicode::IsWhitespace(0x3000));
}

}  // namespace
}  // namespace lockstep
