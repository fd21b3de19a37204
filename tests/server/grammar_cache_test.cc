// GrammarCache's bounds: at most `capacity` grammars and `max_bytes` of estimated memory (grammars plus
// their maskers' caches, which grow with use), least recently used out first, never the entry just
// returned. Deterministic: sizes are compared with the cache's own estimates, never measured.
#include "server/grammar_cache.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar_matcher.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {
namespace {

std::shared_ptr<const Tokenizer> StarCoder() { return lockstep::testing::TestVocabTokenizer("starcoder"); }

// Grammars of one shape (so of equal estimated size), told apart by their last character.
std::string Literal(char last) { return "root ::= [a-z]{1,40} \"" + std::string(1, last) + "\""; }

GrammarCacheOptions Options(size_t capacity, size_t max_bytes) {
  return GrammarCacheOptions{.capacity = capacity, .max_bytes = max_bytes, .warm_walks = 0};
}

TEST(GrammarCache, CapacityEvictsTheLeastRecentlyUsed) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto tokenizer = StarCoder();
  ASSERT_NE(tokenizer, nullptr);
  GrammarCache cache(tokenizer, Options(2, SIZE_MAX));
  ASSERT_TRUE(cache.Get(Literal('a')).ok());
  ASSERT_TRUE(cache.Get(Literal('b')).ok());
  ASSERT_TRUE(cache.Get(Literal('a')).ok());  // b is now the least recently used
  ASSERT_TRUE(cache.Get(Literal('c')).ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Contains(Literal('a')));
  EXPECT_FALSE(cache.Contains(Literal('b')));
  EXPECT_TRUE(cache.Contains(Literal('c')));
}

TEST(GrammarCache, SizeBudgetEvictsInLeastRecentlyUsedOrder) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto tokenizer = StarCoder();
  ASSERT_NE(tokenizer, nullptr);
  size_t one = 0;  // one entry's estimate
  {
    GrammarCache probe(tokenizer, Options(64, SIZE_MAX));
    ASSERT_TRUE(probe.Get(Literal('a')).ok());
    one = probe.MemoryBytes();
    ASSERT_TRUE(probe.Get(Literal('b')).ok());
    ASSERT_EQ(probe.MemoryBytes(), 2 * one);  // same shape, same estimate
  }
  ASSERT_GT(one, 0u);
  // Room for two and a half entries: the capacity never binds, the bytes do.
  GrammarCache cache(tokenizer, Options(64, 2 * one + one / 2));
  ASSERT_TRUE(cache.Get(Literal('a')).ok());
  ASSERT_TRUE(cache.Get(Literal('b')).ok());
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_TRUE(cache.Get(Literal('a')).ok());  // b is now the least recently used
  ASSERT_TRUE(cache.Get(Literal('c')).ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Contains(Literal('a')));
  EXPECT_FALSE(cache.Contains(Literal('b')));
  EXPECT_TRUE(cache.Contains(Literal('c')));
  EXPECT_LE(cache.MemoryBytes(), 2 * one + one / 2);

  // A masker grows after insertion (masks built while decoding); the next Get re-checks the budget and
  // evicts by recency, not by who grew: here c grows, then a is used, so c (least recent) goes.
  auto c = cache.Get(Literal('c'));
  ASSERT_TRUE(c.ok());
  {
    grammar::GrammarMatcher matcher((*c)->grammar());
    std::vector<uint64_t> mask((*c)->vocab().mask_words());
    ASSERT_GT((*c)->FillMask(matcher, mask), 0u);
    ASSERT_TRUE(matcher.AcceptBytes("q"));
    ASSERT_GT((*c)->FillMask(matcher, mask), 0u);
  }
  ASSERT_GT((*c)->MemoryBytes() + one, 2 * one + one / 2);  // a and c no longer fit together
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_TRUE(cache.Get(Literal('a')).ok());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Contains(Literal('a')));
  EXPECT_FALSE(cache.Contains(Literal('c')));
  // The evicted masker lives on for whoever holds it.
  grammar::GrammarMatcher matcher((*c)->grammar());
  std::vector<uint64_t> mask((*c)->vocab().mask_words());
  EXPECT_GT((*c)->FillMask(matcher, mask), 0u);
}

TEST(GrammarCache, AnEntryOverTheBudgetIsStillReturnedAndKept) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto tokenizer = StarCoder();
  ASSERT_NE(tokenizer, nullptr);
  GrammarCache cache(tokenizer, Options(64, 1));  // smaller than any entry
  ASSERT_TRUE(cache.Get(Literal('a')).ok());
  EXPECT_EQ(cache.size(), 1u);
  auto b = cache.Get(Literal('b'));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Contains(Literal('b')));
  auto again = cache.Get(Literal('b'));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(b->get(), again->get());  // a hit: the same masker
}

// The marker view: a grammar asked for with `markers` may produce the configured control tokens (a forced
// tool call's [TOOL_CALLS]), by their text; the same text without it, or a control token not configured,
// may not. Byte-level toy vocabulary: ids 0-255 the bytes, 256 [TOOL_CALLS], 257 [ARGS] (both control).
TEST(GrammarCache, TheMarkerViewLetsTheConfiguredControlTokensThrough) {
  auto tokenizer = lockstep::testing::ToyTokenizer(
      lockstep::testing::ByteLevelToyVocabulary({{"[TOOL_CALLS]", 3}, {"[ARGS]", 3}}));
  ASSERT_NE(tokenizer, nullptr);
  GrammarCacheOptions options = Options(8, SIZE_MAX);
  options.marker_tokens = {256};
  GrammarCache cache(tokenizer, options);
  const std::string gbnf = "root ::= \"[TOOL_CALLS]\" | \"[ARGS]\"";
  auto allowed = [&](bool markers) {
    auto masker = cache.Get(gbnf, markers);
    EXPECT_TRUE(masker.ok());
    grammar::GrammarMatcher matcher((*masker)->grammar());
    std::vector<uint64_t> mask((*masker)->vocab().mask_words());
    (*masker)->FillMask(matcher, mask);
    std::vector<int32_t> ids;
    for (int32_t t = 0; t < (*masker)->vocab().size(); ++t) {
      if (mask[t / 64] >> (t % 64) & 1) ids.push_back(t);
    }
    return ids;
  };
  EXPECT_EQ(allowed(true), (std::vector<int32_t>{'[', 256}));
  EXPECT_EQ(allowed(false), (std::vector<int32_t>{'['}));
  EXPECT_EQ(cache.size(), 2u);  // cached apart
  EXPECT_TRUE(cache.Contains(gbnf));
}

}  // namespace
}  // namespace lockstep::server
