// Tokenizer conformance: every string of ../shared/testdata/vocab/NAME.gguf.inp tokenizes (no BOS, special
// text not parsed) to exactly the ids of NAME.gguf.out; decoding gives the string back; streaming decode
// matches whole-sequence decode at every split point.
#include <gtest/gtest.h>

#include "testing/testdata.h"
#include "tokenizer/utf8.h"
#include "vocab_suite.h"

namespace lockstep {
namespace {

using testing::LoadSuiteTokenizer;
using testing::ReadSuiteCases;

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

class VocabSuiteTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LOCKSTEP_REQUIRE_TESTDATA();
    const auto& loaded = LoadSuiteTokenizer(GetParam());
    if (!loaded.ok() && loaded.status().code() == StatusCode::kUnimplemented) {
      GTEST_SKIP() << GetParam() << ": vocabulary type not supported by lockstep (only SentencePiece BPE, "
                   << "byte-level BPE and WordPiece are): " << loaded.status().ToString();
    }
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    tokenizer_ = loaded->get();
    auto cases = ReadSuiteCases(GetParam());
    ASSERT_TRUE(cases.ok()) << cases.status().ToString();
    cases_ = std::move(cases).value();
    ASSERT_FALSE(cases_.empty());
  }
  const Tokenizer* tokenizer_ = nullptr;
  std::vector<testing::SuiteCase> cases_;
};

TEST_P(VocabSuiteTest, EncodesExactly) {
  for (const auto& c : cases_) {
    auto ids = tokenizer_->Encode(c.text, /*add_bos=*/false, /*parse_special=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(Ids(*ids), Ids(c.expected)) << "text: '" << c.text << "'";
  }
}

// Decode(Encode(s)) == s. The suite strings are all valid UTF-8; the one case where a vocabulary cannot
// represent a string is a character with no piece and no byte fallback, which encodes to the unknown token --
// such strings are excluded (and counted) because the unknown token cannot give the text back.
TEST_P(VocabSuiteTest, RoundTrips) {
  if (tokenizer_->model_name() == "bert") GTEST_SKIP() << "WordPiece normalises the text: no round trip";
  int excluded = 0;
  for (const auto& c : cases_) {
    auto ids = tokenizer_->Encode(c.text, false, false);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    if (tokenizer_->unk_id() >= 0 &&
        std::find(ids->begin(), ids->end(), tokenizer_->unk_id()) != ids->end()) {
      ++excluded;
      continue;
    }
    EXPECT_EQ(tokenizer_->Decode(*ids), c.text) << "ids:" << Ids(*ids);
    // With BOS (and EOS) added, skipping special tokens gives the same text.
    auto with_bos = tokenizer_->Encode(c.text, true, false);
    ASSERT_TRUE(with_bos.ok());
    EXPECT_EQ(tokenizer_->Decode(*with_bos, /*skip_special=*/true), c.text);
  }
  EXPECT_LE(excluded, 2) << "unexpectedly many strings encode to the unknown token";
}

TEST_P(VocabSuiteTest, IncrementalMatchesWholeDecodeAtEverySplit) {
  for (const auto& c : cases_) {
    auto ids = tokenizer_->Encode(c.text, true, false);
    ASSERT_TRUE(ids.ok());
    const std::string whole = tokenizer_->Decode(*ids);
    IncrementalDetokenizer detok(*tokenizer_);
    std::string streamed;
    for (size_t k = 0; k < ids->size(); ++k) {
      const std::string piece = detok.Push((*ids)[k]);
      EXPECT_EQ(utf8::FindInvalid(piece), std::string::npos) << "broken UTF-8 emitted for '" << c.text << "'";
      streamed += piece;
      // Stopping here and flushing gives the decode of the prefix.
      IncrementalDetokenizer copy = detok;
      const std::vector<int32_t> prefix(ids->begin(), ids->begin() + k + 1);
      EXPECT_EQ(streamed + copy.Flush(), tokenizer_->Decode(prefix))
          << "text '" << c.text << "' split at " << k;
    }
    streamed += detok.Flush();
    EXPECT_EQ(streamed, whole);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocab, VocabSuiteTest, ::testing::ValuesIn(testing::SuiteVocabNames()),
                         testing::VocabTestName);

}  // namespace
}  // namespace lockstep
