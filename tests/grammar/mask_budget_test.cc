// TokenMasker's work bound (issue 15): a grammar whose masks cost more than max_mask_work per FillMask is
// refused deterministically (FillMask returns 0 from then on, over_budget() says why) after at most the
// bound plus one step; the masks of real grammars (JSON, JSON schemas) stay far below the default bound on
// a 49k vocabulary. All assertions are on work counts, never on time.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "grammar/byte_dfa.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/token_masker.h"
#include "grammar_corpus.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::grammar {
namespace {

std::shared_ptr<const TokenVocab> StarCoderVocab() {
  auto tokenizer = lockstep::testing::TestVocabTokenizer("starcoder");
  return tokenizer != nullptr ? TokenVocab::FromTokenizer(*tokenizer) : nullptr;
}

std::shared_ptr<const CompiledGrammar> FromRegex(const std::string& pattern) {
  auto expr = RegexToGbnf(pattern, false);
  EXPECT_TRUE(expr.ok()) << expr.status().ToString();
  if (!expr.ok()) return nullptr;
  auto g = CompiledGrammar::FromGbnf("root ::= " + *expr);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::string RepeatedText(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// Walks `steps` tokens (seeded, uniform over the allowed ones); returns the masker's largest FillMask work.
// *total (when set): what the walk spent in all, masks and advances (what a request's total bound caps).
uint64_t WalkWork(TokenMasker& masker, uint64_t seed, int steps, uint64_t* total = nullptr) {
  GrammarMatcher m(masker.grammar());
  const uint64_t fills_before = masker.stats().fill_work_total;
  std::vector<uint64_t> mask(masker.vocab().mask_words());
  std::mt19937_64 rng(seed);
  for (int step = 0; step < steps; ++step) {
    masker.FillMask(m, mask);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < masker.vocab().size(); ++t) {
      if (((mask[size_t(t) >> 6] >> (t & 63)) & 1) && !masker.vocab().bytes(t).empty()) allowed.push_back(t);
    }
    if (allowed.empty()) break;
    EXPECT_TRUE(m.AcceptBytes(masker.vocab().bytes(allowed[rng() % allowed.size()])));
  }
  if (total != nullptr) *total = masker.stats().fill_work_total - fills_before + m.work();
  return masker.stats().max_fill_work;
}

TEST(MaskBudget, CostlyGrammarsAreRefusedWithinTheBound) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto vocab = StarCoderVocab();
  ASSERT_NE(vocab, nullptr);
  // Alternatives and repetitions that match the same text: nothing collapses them, every position stays
  // alive, and each mask costs the vocabulary times the grammar (seconds to minutes unbounded).
  // Nested counted repetition: one byte can reach millions of stacks, so the bound holds inside a round too.
  const std::string nested = RepeatedText("(", 15) + "a" + RepeatedText("){1,50}", 15);
  for (const std::string& pattern : {RepeatedText("(.*|x)", 100), RepeatedText("[a-z]*[a-y]*", 80),
                                     RepeatedText("\\w*\\d*", 50), nested}) {
    auto g = FromRegex(pattern);
    ASSERT_NE(g, nullptr);
    TokenMasker masker(g, vocab);
    GrammarMatcher m(g);
    std::vector<uint64_t> mask(vocab->mask_words(), ~uint64_t(0));
    EXPECT_EQ(masker.FillMask(m, mask), 0u) << pattern.substr(0, 24);
    EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](uint64_t w) { return w == 0; }));
    EXPECT_TRUE(masker.over_budget());
    const uint64_t spent = masker.stats().max_fill_work;
    EXPECT_GT(spent, TokenMasker::kDefaultMaxMaskWork);
    // Stopped at the first step past the bound: one trie node or one token's exact check beyond it.
    EXPECT_LT(spent, TokenMasker::kDefaultMaxMaskWork + 200'000) << pattern.substr(0, 24);
    const std::string why = masker.over_budget_message();
    EXPECT_NE(why.find("too costly"), std::string::npos) << why;
    EXPECT_NE(why.find(std::to_string(TokenMasker::kDefaultMaxMaskWork)), std::string::npos) << why;
    EXPECT_NE(why.find("49152-token"), std::string::npos) << why;
    // Sticky and free: later calls (Warm too) build nothing more.
    const size_t built = masker.stats().contexts_built;
    EXPECT_EQ(masker.FillMask(m, mask), 0u);
    masker.Warm(4, 8, 60.0);
    EXPECT_EQ(masker.stats().max_fill_work, spent);
    EXPECT_EQ(masker.stats().contexts_built, built);
  }
}

// What the DFA walk once left uncounted (issue 15: 15 levels of `(a){1,50}` took 0.4-1.1 s at the 5 M bound,
// 0.1-0.25 s now): a transition copies and scans its state's stacks even when no stack survives the byte,
// and interning a state sorts its stacks. Both are counted now, by the sizes, deterministically.
TEST(MaskBudget, DfaCountsCopyingScanningAndSortingLargeStates) {
  auto g = FromRegex(RepeatedText("(", 6) + "a" + RepeatedText("){1,50}", 6));
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  LazyByteDfa dfa(*g, /*approximate=*/false, m.nodes(), m.tops());
  dfa.set_work_limit(TokenMasker::kDefaultMaxMaskWork);
  int32_t state = dfa.start();
  uint64_t before = 0;
  for (int k = 0; k < 8; ++k) {  // "aaaaaaaa": thousands of stacks, each a chain of 7 positions
    before = dfa.work();
    state = dfa.Next(state, 'a');
    ASSERT_GE(state, 0);
    ASSERT_TRUE(m.AcceptBytes("a"));
  }
  ASSERT_FALSE(dfa.exhausted());
  const uint64_t stacks = m.tops().size();  // the same stacks as the DFA state's
  ASSERT_GT(stacks, 1000u);
  // Interning the last state: at least the sort's n log2 n beyond small states.
  EXPECT_GE(dfa.work() - before, stacks * (std::bit_width(stacks) - 4));
  const uint64_t interned = dfa.work();
  EXPECT_EQ(dfa.Next(state, 'b'), LazyByteDfa::kDead);  // no stack survives, and none is expanded
  EXPECT_GE(dfa.work() - interned, stacks);
  // The same walk under a limit it would pass stops just past the limit.
  GrammarMatcher fresh(g);
  LazyByteDfa tight(*g, /*approximate=*/false, fresh.nodes(), fresh.tops());
  tight.set_work_limit(interned / 2);
  for (int32_t s = tight.start(); s >= 0 && !tight.exhausted();) s = tight.Next(s, 'a');
  EXPECT_TRUE(tight.exhausted());
  EXPECT_LE(tight.work(), interned / 2 + 1);
}

TEST(MaskBudget, WorkIsDeterministicAndTheBoundIsExact) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto vocab = StarCoderVocab();
  ASSERT_NE(vocab, nullptr);
  auto g = FromRegex(RepeatedText("[a-z]*[a-y]*", 4));
  ASSERT_NE(g, nullptr);
  TokenMasker a(g, vocab), b(g, vocab);
  const uint64_t work = WalkWork(a, 5, 12);
  EXPECT_EQ(WalkWork(b, 5, 12), work);
  EXPECT_FALSE(a.over_budget());
  ASSERT_GT(work, 1000u);
  // The same walk under a bound just at / just below the largest step's work.
  TokenMasker at(g, vocab, TokenMasker::kDefaultContextDepth, TokenMasker::kDfaMaxStates, work);
  EXPECT_EQ(WalkWork(at, 5, 12), work);
  EXPECT_FALSE(at.over_budget());
  TokenMasker below(g, vocab, TokenMasker::kDefaultContextDepth, TokenMasker::kDfaMaxStates, work - 1);
  WalkWork(below, 5, 12);
  EXPECT_TRUE(below.over_budget());
}

// The margin the default bound leaves real grammars (the figures in docs/structured.md): the largest mask
// of a JSON schema's grammar and of generic JSON over a 49k vocabulary, on the DFA walk and on the direct
// walk (what a context whose DFA outgrows kDfaMaxStates falls back to).
TEST(MaskBudget, RealGrammarsStayFarBelowTheBound) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto vocab = StarCoderVocab();
  ASSERT_NE(vocab, nullptr);
  const auto schema = JsonSchemaToGbnf(nlohmann::ordered_json::parse(R"({
    "type": "array", "minItems": 1000,
    "items": {"type": "object",
              "properties": {"name": {"type": "string", "maxLength": 20},
                             "age": {"type": "integer", "minimum": 0, "maximum": 120},
                             "city": {"enum": ["Paris", "Lagos", "Lima", "Osaka"]},
                             "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
                             "score": {"type": "number"}},
              "required": ["name", "age", "city", "tags", "score"], "additionalProperties": false}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  for (const std::string& gbnf : {*schema, std::string(testing::kJsonGbnf)}) {
    auto g = CompiledGrammar::FromGbnf(gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    TokenMasker dfa(*g, vocab);
    EXPECT_LT(WalkWork(dfa, 1, 60), TokenMasker::kDefaultMaxMaskWork / 10);
    TokenMasker direct(*g, vocab, TokenMasker::kDefaultContextDepth, /*dfa_max_states=*/0);
    EXPECT_LT(WalkWork(direct, 1, 20), TokenMasker::kDefaultMaxMaskWork / 2);
    EXPECT_FALSE(dfa.over_budget() || direct.over_budget());
  }
}

// The margin the default per-request total leaves them: a 300-token request on a cold masker (every mask
// it meets built anew, no other request having warmed it) and a second one, on another path, after it.
TEST(MaskBudget, RealRequestsStayFarBelowTheTotal) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto vocab = StarCoderVocab();
  ASSERT_NE(vocab, nullptr);
  const auto schema = JsonSchemaToGbnf(nlohmann::ordered_json::parse(R"({
    "type": "array", "minItems": 1000,
    "items": {"type": "object",
              "properties": {"name": {"type": "string", "maxLength": 20},
                             "age": {"type": "integer", "minimum": 0, "maximum": 120},
                             "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
                             "score": {"type": "number"}},
              "required": ["name", "age", "tags", "score"], "additionalProperties": false}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  for (const std::string& gbnf : {*schema, std::string(testing::kJsonGbnf)}) {
    auto g = CompiledGrammar::FromGbnf(gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    TokenMasker masker(*g, vocab);
    uint64_t cold = 0, warm = 0;
    WalkWork(masker, 1, 300, &cold);
    WalkWork(masker, 2, 300, &warm);
    std::printf("total work of 300 tokens: cold %llu, warm %llu; masker %zu bytes, grammar %zu bytes\n",
                (unsigned long long)cold, (unsigned long long)warm, masker.MemoryBytes(),
                (*g)->MemoryBytes());
    EXPECT_LT(cold, TokenMasker::kDefaultMaxRequestWork / 10);
    EXPECT_LT(warm, TokenMasker::kDefaultMaxRequestWork / 10);
  }
}

}  // namespace
}  // namespace lockstep::grammar
