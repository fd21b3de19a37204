// TokenMasker: the cached, trie-walked masks must equal the brute-force answer (feed each token's bytes to a
// copy of the matcher) at every step of seeded random walks, for toy vocabularies built to hit the edge
// cases (tokens running past the end of rules, partial UTF-8, duplicates) and for real ones (SentencePiece
// llama and byte-level GPT-2 from ../shared/testdata/vocab).
#include "grammar/token_masker.h"

#include <gtest/gtest.h>

#include <random>

#include "gguf/gguf_file.h"
#include "grammar_corpus.h"
#include "testing/testdata.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::grammar {
namespace {

bool Bit(const std::vector<uint64_t>& mask, int32_t id) { return (mask[size_t(id) >> 6] >> (id & 63)) & 1; }

std::shared_ptr<const TokenVocab> ToyVocab() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
  for (const char* p :
       {"{",  "}",     "{\"",      "\":",      "\": ",  "\", \"", "\"}",   "\"]",      "],",  "true", "tr",
        "ue", "null",  "nul",      " ",        "  ",    "\n",     "\n  ",  "12",       "3.",  ".5",   "e+",
        "0e", "\\u00", "\\\"",     "é",        "\xC3",  "\xA9\"", "ab",    "abc",      "a\"", "\"a",  "1,",
        ", ", ",\n",   "[[",       "]]",       "[]",    "{}",     "x\n- ", "- ",       "()",  "1+",   "+(",
        ")*", "ひら",  "\xE3\x81", "\x81\xB2", "true}", "12}",    "null]", "\"\": 1}", "ab",  "ab"}) {
    pieces.push_back(p);
  }
  pieces.push_back("");  // EOG
  const int32_t eog = int32_t(pieces.size() - 1);
  pieces.push_back("");  // a control token: never allowed
  return TokenVocab::FromPieces(std::move(pieces), {eog});
}

// Walks `steps` tokens at random (seeded) among the allowed ones, checking every mask against brute force.
// Returns the number of steps taken (the walk stops at a complete match or when EOG is chosen).
// Context depth 1 leaves most tokens uncertain (the exact check decides them); deeper contexts decide most
// from the cache. warm: build masks by Warm() first (else lazily, in walk order).
int CheckRandomWalk(const std::shared_ptr<const CompiledGrammar>& g,
                    const std::shared_ptr<const TokenVocab>& v, uint64_t seed, int steps, bool warm,
                    int depth = TokenMasker::kDefaultContextDepth) {
  TokenMasker masker(g, v, depth);
  if (warm) masker.Warm(3, 20, 10.0);
  GrammarMatcher m(g);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> mask(v->mask_words());
  int taken = 0;
  for (; taken < steps; ++taken) {
    const size_t count = masker.FillMask(m, mask);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < v->size(); ++t) {
      const bool want = masker.Allows(m, t);
      EXPECT_EQ(Bit(mask, t), want) << "step " << taken << " token " << t << " bytes '" << v->bytes(t) << "'";
      if (Bit(mask, t) != want) return taken;
      if (want) allowed.push_back(t);
    }
    EXPECT_EQ(count, allowed.size());
    if (allowed.empty()) {
      EXPECT_FALSE(m.CanContinue());
      break;
    }
    const int32_t pick = allowed[rng() % allowed.size()];
    if (v->bytes(pick).empty()) break;  // EOG
    EXPECT_TRUE(m.AcceptBytes(v->bytes(pick)));
  }
  return taken;
}

TEST(TokenMasker, MatchesBruteForceOnToyVocabulary) {
  auto v = ToyVocab();
  for (const char* gbnf : {testing::kJsonGbnf, testing::kArithmeticGbnf, testing::kListGbnf,
                           "root ::= [ぁ-ゟ]+ \"!\"", "root ::= (\"ab\" | \"a\" \"b\"? \"c\")* \"\\\"\"",
                           "root ::= \"{\" ws \"}\" ws\nws ::= | \" \" | \"\\n\" [ ]{0,3}"}) {
    auto g = CompiledGrammar::FromGbnf(gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      CheckRandomWalk(*g, v, seed, 40, /*warm=*/seed % 2 == 0, /*depth=*/1 + int(seed % 4));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(TokenMasker, EndOfGenerationOnlyWhenComplete) {
  auto v = ToyVocab();
  const int32_t eog = v->eog()[0];
  auto g = CompiledGrammar::FromGbnf(R"(root ::= "ab" "c"?)");
  ASSERT_TRUE(g.ok());
  TokenMasker masker(*g, v);
  GrammarMatcher m(*g);
  std::vector<uint64_t> mask(v->mask_words());
  masker.FillMask(m, mask);
  EXPECT_FALSE(Bit(mask, eog));
  EXPECT_TRUE(Bit(mask, 'a'));
  EXPECT_TRUE(Bit(mask, v->size() - 3));  // "ab", a piece with duplicates: every copy is allowed
  EXPECT_TRUE(Bit(mask, v->size() - 4));
  EXPECT_FALSE(Bit(mask, v->size() - 1));  // the control token
  ASSERT_TRUE(m.AcceptBytes("ab"));
  EXPECT_EQ(masker.FillMask(m, mask), 2u);  // "c" and EOG
  EXPECT_TRUE(Bit(mask, eog));
  EXPECT_TRUE(Bit(mask, 'c'));
  ASSERT_TRUE(m.AcceptBytes("c"));
  EXPECT_EQ(masker.FillMask(m, mask), 1u);
  EXPECT_TRUE(Bit(mask, eog));
}

std::shared_ptr<const TokenVocab> LoadVocab(const std::string& name) {
  auto file = GgufFile::Open(lockstep::testing::TestDataPath("vocab/ggml-vocab-" + name + ".gguf"));
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tokenizer = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  return tokenizer.ok() ? TokenVocab::FromTokenizer(**tokenizer) : nullptr;
}

TEST(TokenMasker, MatchesBruteForceOnRealVocabularies) {
  LOCKSTEP_REQUIRE_TESTDATA();
  // Brute force costs a matcher copy per token per step: a few short walks only.
  for (const char* name : {"llama-spm", "gpt-2"}) {
    auto v = LoadVocab(name);
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(v->eog().empty());
    for (const char* gbnf : {testing::kJsonGbnf, testing::kListGbnf}) {
      auto g = CompiledGrammar::FromGbnf(gbnf);
      ASSERT_TRUE(g.ok());
      CheckRandomWalk(*g, v, /*seed=*/7, /*steps=*/6, /*warm=*/gbnf == testing::kJsonGbnf);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace lockstep::grammar
