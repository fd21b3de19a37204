// TokenMasker: the cached, trie-walked masks must equal the brute-force answer (feed each token's bytes to a
// copy of the matcher) at every step of seeded random walks, for toy vocabularies built to hit the edge
// cases (tokens running past the end of rules, partial UTF-8, duplicates) and for real ones (SentencePiece
// llama and byte-level GPT-2 from ../shared/testdata/vocab).
#include "grammar/token_masker.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/json_schema.h"
#include "grammar_corpus.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
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
                    int depth = TokenMasker::kDefaultContextDepth,
                    size_t dfa_max_states = TokenMasker::kDfaMaxStates) {
  TokenMasker masker(g, v, depth, dfa_max_states);
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
      CheckRandomWalk(*g, v, seed, 40, /*warm=*/seed % 2 == 0, /*depth=*/1 + int(seed % 4),
                      /*dfa_max_states=*/seed % 3 == 0 ? 0 : TokenMasker::kDfaMaxStates);
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
  auto tokenizer = lockstep::testing::TestVocabTokenizer(name);
  return tokenizer != nullptr ? TokenVocab::FromTokenizer(*tokenizer) : nullptr;
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
      CheckRandomWalk(*g, v, /*seed=*/7, /*steps=*/6, /*warm=*/gbnf == testing::kJsonGbnf,
                      TokenMasker::kDefaultContextDepth,
                      /*dfa_max_states=*/gbnf == testing::kJsonGbnf ? 0 : TokenMasker::kDfaMaxStates);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// The DFA walk (grammar/byte_dfa.h) must give the very masks of the direct walk (one expansion per trie
// node), bit for bit, at every step: with room for every state, and with a limit so small that contexts
// fall back to the direct walk part-way. Compared on the real vocabularies over grammars with nested
// repetition, UTF-8 classes and a JSON schema's generated grammar; each context's accepted and uncertain
// counts must agree too, not only the union a step sees.
TEST(TokenMasker, DfaWalkEqualsDirectWalkBitForBit) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const auto schema = JsonSchemaToGbnf(nlohmann::ordered_json::parse(R"({
    "type": "array", "minItems": 2,
    "items": {"type": "object",
              "properties": {"name": {"type": "string", "maxLength": 12},
                             "age": {"type": "integer", "minimum": 0, "maximum": 120},
                             "city": {"enum": ["Paris", "Lagos", "Osaka"]},
                             "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                             "when": {"type": "string", "format": "date"},
                             "score": {"type": "number"}},
              "required": ["name", "age", "city", "tags", "when", "score"],
              "additionalProperties": false}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const std::vector<std::string> grammars = {testing::kJsonGbnf, testing::kArithmeticGbnf, testing::kListGbnf,
                                             *schema, R"(root ::= ([ぁ-ゟ] | [a-z] [0-9]?)+ "。")"};
  size_t fallbacks = 0, dfa_states = 0, steps = 0;
  for (const char* name : {"llama-spm", "gpt-2"}) {
    auto v = LoadVocab(name);
    ASSERT_NE(v, nullptr);
    for (const std::string& gbnf : grammars) {
      auto g = CompiledGrammar::FromGbnf(gbnf);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      TokenMasker direct(*g, v, TokenMasker::kDefaultContextDepth, /*dfa_max_states=*/0);
      TokenMasker dfa(*g, v);
      TokenMasker small(*g, v, TokenMasker::kDefaultContextDepth, /*dfa_max_states=*/6);
      std::vector<uint64_t> want(v->mask_words()), got(v->mask_words()), got_small(v->mask_words());
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        GrammarMatcher m(*g);
        std::mt19937_64 rng(seed);
        for (int step = 0; step < 40; ++step, ++steps) {
          const size_t count = direct.FillMask(m, want);
          EXPECT_EQ(dfa.FillMask(m, got), count);
          EXPECT_EQ(small.FillMask(m, got_small), count);
          ASSERT_TRUE(got == want) << name << " grammar " << gbnf.substr(0, 40) << " step " << step;
          ASSERT_TRUE(got_small == want) << name << " grammar " << gbnf.substr(0, 40) << " step " << step;
          std::vector<int32_t> allowed;
          for (int32_t t = 0; t < v->size(); ++t) {
            if (Bit(want, t) && !v->bytes(t).empty()) allowed.push_back(t);
          }
          if (allowed.empty()) break;
          ASSERT_TRUE(m.AcceptBytes(v->bytes(allowed[rng() % allowed.size()])));
        }
      }
      const TokenMasker::Stats a = direct.stats(), b = dfa.stats(), c = small.stats();
      EXPECT_EQ(a.contexts_built, b.contexts_built);
      EXPECT_EQ(a.accepted_total, b.accepted_total);
      EXPECT_EQ(a.uncertain_total, b.uncertain_total);
      EXPECT_EQ(a.accepted_total, c.accepted_total);
      EXPECT_EQ(a.uncertain_total, c.uncertain_total);
      EXPECT_EQ(a.dfa_states, 0u);
      EXPECT_EQ(b.dfa_fallbacks, 0u);
      fallbacks += c.dfa_fallbacks;
      dfa_states += b.dfa_states;
    }
  }
  EXPECT_GT(steps, 300u);
  EXPECT_GT(dfa_states, 0u);
  EXPECT_GT(fallbacks, 0u);  // the small limit was reached: the fallback path was compared too
}

// MemoryBytes (GrammarCache's size budget): grows as masks are built, covers at least the whole-state
// masks cached, and is deterministic for a given walk.
TEST(TokenMasker, MemoryBytesGrowsWithItsCaches) {
  auto g = CompiledGrammar::FromGbnf(testing::kJsonGbnf);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto v = ToyVocab();
  const auto walk = [&](TokenMasker& masker) {
    GrammarMatcher m(*g);
    std::mt19937_64 rng(3);
    std::vector<uint64_t> mask(v->mask_words());
    for (int step = 0; step < 40; ++step) {
      masker.FillMask(m, mask);
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < v->size(); ++t) {
        if (Bit(mask, t) && !v->bytes(t).empty()) allowed.push_back(t);
      }
      if (allowed.empty()) break;
      ASSERT_TRUE(m.AcceptBytes(v->bytes(allowed[rng() % allowed.size()])));
    }
  };
  TokenMasker a(*g, v), b(*g, v);
  const size_t empty = a.MemoryBytes();
  EXPECT_GT(empty, sizeof(TokenMasker) - 1);
  walk(a);
  walk(b);
  const TokenMasker::Stats stats = a.stats();
  ASSERT_GT(stats.contexts_built, 0u);
  const size_t states = std::min<size_t>(stats.state_misses, TokenMasker::kStateCacheSize);
  EXPECT_GE(a.MemoryBytes(), empty + states * v->mask_words() * sizeof(uint64_t) +
                                 stats.contexts_built * sizeof(std::vector<int32_t>));
  EXPECT_LT(a.MemoryBytes(), size_t(64) << 20);
  EXPECT_EQ(a.MemoryBytes(), b.MemoryBytes());
}

}  // namespace
}  // namespace lockstep::grammar
