// Constrained decoding through the engine: a random-weight model sampling at temperature 1 must produce
// text the grammar accepts, end where the grammar ends, allow EOS only at a complete match, keep batch
// invariance (a constrained request's tokens equal its solo run whatever runs beside it) and end a request
// cleanly when the vocabulary cannot spell what the grammar requires.
#include <gtest/gtest.h>

#include <set>

#include "engine/engine.h"
#include "engine/grammar_constraint.h"
#include "engine_testing.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_masker.h"

namespace lockstep {
namespace {

using testing::Arrival;
using testing::Collected;
using testing::TestModel;

constexpr char kRecordGbnf[] =
    R"(root ::= "{\"n\": " [0-9]{1,3} ", \"ok\": " ("true" | "false") ", \"tag\": \"" [a-z]{0,8} "\"}")";

std::shared_ptr<grammar::TokenMasker> Masker(const TestModel& m, const char* gbnf) {
  auto g = grammar::CompiledGrammar::FromGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return nullptr;
  return std::make_shared<grammar::TokenMasker>(*g, grammar::TokenVocab::FromTokenizer(*m.tokenizer));
}

bool Complete(const char* gbnf, const std::string& text) {
  auto g = grammar::CompiledGrammar::FromGbnf(gbnf);
  grammar::GrammarMatcher matcher(*g);
  return matcher.AcceptBytes(text) && matcher.accepting();
}

Request Constrained(std::shared_ptr<grammar::TokenMasker> masker, uint64_t seed, int max_tokens = 200) {
  Request r;
  r.prompt_ids = {1, 2, 3, 4, 5};
  r.max_tokens = max_tokens;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.grammar = std::move(masker);
  return r;
}

std::unique_ptr<Engine> MakeEngine(const TestModel& m) {
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 32;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(*engine) : nullptr;
}

TEST(GrammarEngineTest, RandomModelAlwaysProducesAcceptedText) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  auto masker = Masker(m, kRecordGbnf);
  std::vector<Arrival> arrivals;
  for (uint64_t seed = 1; seed <= 24; ++seed) arrivals.push_back({Constrained(masker, seed), 0});
  std::vector<Collected> results = testing::RunConcurrently(*engine, arrivals);
  std::set<std::string> distinct;
  for (const Collected& c : results) {
    EXPECT_EQ(c.last.finish_reason, FinishReason::kStop) << c.text;
    EXPECT_EQ(c.last.stop_kind, StopKind::kGrammar) << c.text;
    EXPECT_TRUE(Complete(kRecordGbnf, c.text)) << c.text;
    distinct.insert(c.text);
  }
  EXPECT_GT(distinct.size(), 20u);  // temperature 1 on random weights: the seeds must matter
  testing::ExpectAllBlocksFree(*engine);
}

TEST(GrammarEngineTest, ConstrainedTokensDoNotDependOnNeighbours) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  auto record = Masker(m, kRecordGbnf);
  auto list = Masker(m, R"(root ::= ("- " [a-z ]{1,12} "\n"){1,4})");
  std::vector<Arrival> arrivals;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    arrivals.push_back({Constrained(seed % 2 ? record : list, seed), int(seed % 3)});
    Request free;
    free.prompt_ids = {7, 8, 9};
    free.max_tokens = 20;
    free.sampling.seed = seed;
    free.ignore_eos = true;
    arrivals.push_back({free, 1});
  }
  std::vector<Collected> together = testing::RunConcurrently(*engine, arrivals);
  std::vector<Collected> solo = testing::RunSolo(*engine, arrivals);
  ASSERT_EQ(together.size(), solo.size());
  for (size_t i = 0; i < together.size(); ++i) {
    EXPECT_EQ(together[i].tokens, solo[i].tokens) << "request " << i;
    EXPECT_EQ(together[i].text, solo[i].text) << "request " << i;
  }
}

TEST(GrammarEngineTest, EndOfGenerationOnlyAtACompleteMatch) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  // Complete after every "ab" pair: EOS is allowed only there (and then is one of a few allowed tokens).
  constexpr char kPairs[] = R"(root ::= ("ab")+)";
  auto masker = Masker(m, kPairs);
  int eos_endings = 0;
  std::vector<Arrival> arrivals;
  for (uint64_t seed = 1; seed <= 40; ++seed) arrivals.push_back({Constrained(masker, seed, 40), 0});
  for (const Collected& c : testing::RunConcurrently(*engine, arrivals)) {
    if (c.last.finish_reason == FinishReason::kStop) {
      EXPECT_EQ(c.last.stop_kind, StopKind::kEos);
      EXPECT_TRUE(Complete(kPairs, c.text)) << c.text;
      ++eos_endings;
    } else {
      EXPECT_EQ(c.last.finish_reason, FinishReason::kLength);
      auto g = grammar::CompiledGrammar::FromGbnf(kPairs);
      grammar::GrammarMatcher matcher(*g);
      EXPECT_TRUE(matcher.AcceptBytes(c.text)) << c.text;
    }
  }
  EXPECT_GT(eos_endings, 0);
  // With ignore_eos the grammar's own end finishes the request.
  Request r = Constrained(Masker(m, R"(root ::= "abc")"), 3);
  r.ignore_eos = true;
  std::vector<Collected> fixed = testing::RunConcurrently(*engine, {{r, 0}});
  EXPECT_EQ(fixed[0].text, "abc");
  EXPECT_EQ(fixed[0].last.stop_kind, StopKind::kGrammar);
}

TEST(GrammarEngineTest, UnspellableGrammarEndsWithAnError) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  // A vocabulary view in which no token can spell "z".
  std::vector<std::string> pieces;
  for (int32_t id = 0; id < m.tokenizer->vocab_size(); ++id) {
    const std::string bytes = m.tokenizer->TokenBytes(id);
    pieces.push_back(m.tokenizer->IsControl(id) || bytes.find('z') != std::string::npos ? "" : bytes);
  }
  auto g = grammar::CompiledGrammar::FromGbnf(R"(root ::= "x" "z")");
  ASSERT_TRUE(g.ok());
  auto masker = std::make_shared<grammar::TokenMasker>(*g, grammar::TokenVocab::FromPieces(pieces, {}));
  std::vector<Collected> results = testing::RunConcurrently(*engine, {{Constrained(masker, 1), 0}});
  EXPECT_EQ(results[0].text, "x");
  EXPECT_EQ(results[0].last.finish_reason, FinishReason::kError);
  EXPECT_NE(results[0].last.error.find("grammar allows no token"), std::string::npos);
  testing::ExpectAllBlocksFree(*engine);
}

// A grammar whose masks pass the masker's work bound during decoding (not when warming) ends the request
// with an error naming the cost, instead of an unbounded build on the engine thread (issue 15). The bound
// is set between the work of the first mask (after nothing) and of the second (after "x").
TEST(GrammarEngineTest, GrammarOverTheWorkBoundEndsWithAnError) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  const char* gbnf = R"(root ::= "x" ( [a-z]* [a-y]* ){8} "!")";
  auto g = grammar::CompiledGrammar::FromGbnf(gbnf);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto vocab = grammar::TokenVocab::FromTokenizer(*m.tokenizer);
  uint64_t first = 0, second = 0;
  {
    grammar::TokenMasker probe(*g, vocab);
    grammar::GrammarMatcher matcher(*g);
    std::vector<uint64_t> mask(vocab->mask_words());
    probe.FillMask(matcher, mask);
    first = probe.stats().max_fill_work;
    ASSERT_TRUE(matcher.AcceptBytes("x"));
    probe.FillMask(matcher, mask);
    second = probe.stats().max_fill_work;
  }
  ASSERT_LT(first, second);
  auto masker =
      std::make_shared<grammar::TokenMasker>(*g, vocab, grammar::TokenMasker::kDefaultContextDepth,
                                             grammar::TokenMasker::kDfaMaxStates, (first + second) / 2);
  std::vector<Collected> results = testing::RunConcurrently(*engine, {{Constrained(masker, 1), 0}});
  EXPECT_EQ(results[0].text, "x");
  EXPECT_EQ(results[0].last.finish_reason, FinishReason::kError);
  EXPECT_NE(results[0].last.error.find("too costly"), std::string::npos) << results[0].last.error;
  EXPECT_TRUE(masker->over_budget());
  testing::ExpectAllBlocksFree(*engine);
}

// The per-request total (issue 15): masks each far under the per-mask bound, but together over the request's
// max_request_work, end the request with an error naming the total; the same grammar under the default
// total (and the record grammar) finishes normally. The total is set between the first mask's work and
// what the first two masks plus the advance over "x" spend, so the second mask is the one too many.
TEST(GrammarEngineTest, RequestOverItsTotalGrammarWorkEndsWithAnError) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m);
  const char* gbnf = R"(root ::= "x" ( [a-z]* [a-y]* ){8} "!")";
  auto g = grammar::CompiledGrammar::FromGbnf(gbnf);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto vocab = grammar::TokenVocab::FromTokenizer(*m.tokenizer);
  uint64_t first = 0, two = 0;
  {
    GrammarConstraint probe(std::make_shared<grammar::TokenMasker>(*g, vocab), true, {});
    std::vector<uint64_t> mask;
    ASSERT_GT(probe.FillMask(vocab->mask_words(), &mask), 0u);
    first = probe.work();
    const int32_t x = [&] {
      for (int32_t t = 0; t < vocab->size(); ++t) {
        if (vocab->bytes(t) == "x") return t;
      }
      return int32_t(-1);
    }();
    ASSERT_GE(x, 0);
    probe.Accept(x);
    probe.FillMask(vocab->mask_words(), &mask);
    two = probe.work();
    EXPECT_FALSE(probe.over_total());
  }
  ASSERT_LT(first, two);
  ASSERT_LT(two, grammar::TokenMasker::kDefaultMaxMaskWork);  // each mask is far under the per-mask bound
  const uint64_t total = (first + two) / 2;
  auto masker = std::make_shared<grammar::TokenMasker>(*g, vocab, grammar::TokenMasker::kDefaultContextDepth,
                                                       grammar::TokenMasker::kDfaMaxStates,
                                                       grammar::TokenMasker::kDefaultMaxMaskWork, total);
  std::vector<Collected> results = testing::RunConcurrently(*engine, {{Constrained(masker, 1), 0}});
  EXPECT_EQ(results[0].text, "x");
  EXPECT_EQ(results[0].last.finish_reason, FinishReason::kError);
  const std::string& why = results[0].last.error;
  EXPECT_NE(why.find("too costly for one request"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string(total)), std::string::npos) << why;
  EXPECT_FALSE(masker->over_budget());  // the masker itself is fine: other requests may use it
  // Under the default total the same grammar, and the record grammar, end normally.
  auto fresh = std::make_shared<grammar::TokenMasker>(*g, vocab);
  results = testing::RunConcurrently(
      *engine, {{Constrained(fresh, 1, 24), 0}, {Constrained(Masker(m, kRecordGbnf), 2), 0}});
  EXPECT_NE(results[0].last.finish_reason, FinishReason::kError) << results[0].last.error;
  EXPECT_EQ(results[1].last.finish_reason, FinishReason::kStop) << results[1].last.error;
  testing::ExpectAllBlocksFree(*engine);
}

}  // namespace
}  // namespace lockstep
