// Speculative decoding end to end (EngineOptions::draft_tokens): with n-gram drafts, every request's events
// — tokens, text, logprobs, finish — are bit-identical to those without (llama, sliding-window and gemma2
// shapes; Q8_0 weights, f32 in the constrained and draft-limit tests), for greedy and seeded sampling,
// penalties, stop strings, stop tokens, min_tokens, max_tokens and grammars, alone and side by side; and the
// drafts do get accepted (fewer steps), so the comparison is not of two undrafted runs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ngram_draft.h"
#include "engine_testing.h"
#include "grammar/compiled_grammar.h"
#include "grammar/token_masker.h"

namespace lockstep {
namespace {

using testing::TestModel;

class EngineDraftTest : public ::testing::Test {
 protected:
  static std::unique_ptr<Engine> MakeEngine(const TestModel& m, int draft_tokens) {
    EngineOptions options;
    options.threads = 2;
    options.max_seqs = 8;
    options.max_batch_tokens = 64;
    options.draft_tokens = draft_tokens;
    options.draft_max_seqs = 8;
    auto engine = Engine::Create(m.model, m.tokenizer, options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  // What a client sees of one event.
  static std::string Describe(const TokenEvent& e) {
    std::string s = std::to_string(e.token) + " '" + e.text_delta + "' " + std::to_string(e.logprob) + " " +
                    FinishReasonName(e.finish_reason) + " " + std::to_string(int(e.stop_kind)) + " [" +
                    e.stop_string + "]";
    for (const TokenLogprob& t : e.top_logprobs)
      s += " " + std::to_string(t.token) + ":" + std::to_string(t.logprob);
    return s;
  }

  static std::vector<std::string> Run(Engine& engine, const Request& request) {
    auto handle = engine.Submit(request);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    std::vector<std::string> out;
    for (const TokenEvent& e : testing::DrainEvents(**handle)) out.push_back(Describe(e));
    return out;
  }

  static std::vector<std::vector<std::string>> RunTogether(Engine& engine,
                                                           const std::vector<Request>& requests) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const Request& r : requests) {
      auto handle = engine.Submit(r);
      EXPECT_TRUE(handle.ok()) << handle.status().ToString();
      if (!handle.ok()) return {};
      handles.push_back(std::move(handle).value());
    }
    std::vector<std::vector<std::string>> out;
    for (auto& handle : handles) {
      out.emplace_back();
      for (const TokenEvent& e : testing::DrainEvents(*handle)) out.back().push_back(Describe(e));
    }
    return out;
  }

  // Of a few random prompts, the first whose greedy continuation (on the undrafted engine) n-gram drafts
  // would predict at least half of the time, else the one they would predict most often: random weights fall
  // into loops, some sooner than others.
  static std::vector<int32_t> LoopingPrompt(const TestModel& m, Engine& plain) {
    const int32_t n_vocab = int32_t(m.model->config().n_vocab);
    std::vector<int32_t> best;
    int best_hits = -1;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      Request r;
      r.prompt_ids = testing::RandomTokenIds(n_vocab, 12, seed);
      r.max_tokens = 48;
      r.ignore_eos = true;
      r.sampling.temperature = 0;
      std::vector<int32_t> tokens = r.prompt_ids;
      auto handle = plain.Submit(r);
      if (!handle.ok()) return {};
      int hits = 0;
      for (const TokenEvent& e : testing::DrainEvents(**handle)) {
        const std::vector<int32_t> draft = ProposeNgramDraft(tokens, 1);
        hits += !draft.empty() && draft[0] == e.token;
        tokens.push_back(e.token);
      }
      if (hits > best_hits) {
        best_hits = hits;
        best = r.prompt_ids;
      }
      if (best_hits >= 24) break;  // half of the tokens predicted: loops enough (and saves the other runs)
    }
    EXPECT_GE(best_hits, 8) << "no prompt loops: the test would compare two undrafted runs";
    return best;
  }

  // Requests over every sampling path.
  static std::vector<Request> Requests(const std::vector<int32_t>& prompt,
                                       const std::vector<std::string>& undrafted_texts) {
    std::vector<Request> requests;
    auto add = [&](auto configure) {
      Request r;
      r.prompt_ids = prompt;
      r.max_tokens = 48;
      r.ignore_eos = true;
      r.sampling.temperature = 0;  // greedy unless configured
      configure(r);
      requests.push_back(std::move(r));
    };
    add([](Request&) {});  // greedy
    add([](Request& r) {
      r.sampling.logprobs = true;
      r.sampling.top_logprobs = 3;
    });
    add([](Request& r) {
      r.sampling.temperature = 0.7f;
      r.sampling.top_k = 8;
      r.sampling.seed = 11;
    });
    add([](Request& r) { r.sampling.repetition_penalty = 1.3f; });
    add([](Request& r) {
      r.sampling.frequency_penalty = 0.5f;
      r.sampling.presence_penalty = 0.3f;
      r.max_tokens = 37;
    });
    add([](Request& r) { r.max_tokens = 1; });
    add([](Request& r) { r.max_tokens = 2; });
    add([](Request& r) {
      r.ignore_eos = false;
      r.min_tokens = 5;
    });
    add([](Request& r) { r.stop_token_ids = {r.prompt_ids[3]}; });
    // A stop string from the middle of the undrafted greedy text, so it matches mid-draft.
    if (!undrafted_texts.empty() && undrafted_texts[0].size() > 20) {
      add([&](Request& r) { r.stop = {undrafted_texts[0].substr(12, 3)}; });
    }
    return requests;
  }

  static std::string Text(const std::vector<std::string>& events) {
    std::string text;
    for (const std::string& e : events) {
      const size_t open = e.find('\'');
      text += e.substr(open + 1, e.find('\'', open + 1) - open - 1);
    }
    return text;
  }
};

TEST_F(EngineDraftTest, DraftedEventsEqualUndraftedAloneAndTogether) {
  // Sliding windows (every layer: mistral-swa; alternating local and global layers: gemma2), whose blocks
  // below the window are released while drafts are checked, and soft-capping (gemma2). f32 weights draft in
  // the tests below (the weight type changes the matmul, not the drafting; BatchInvarianceTest checks that
  // every type's rows do not depend on the batch).
  const std::pair<const char*, const char*> models[] = {
      {"tiny", "q8_0"}, {"tiny-mistral-swa", "q8_0"}, {"tiny-gemma2", "q8_0"}};
  for (const auto& [shape, type] : models) {
    SCOPED_TRACE(std::string(shape) + " " + type);
    TestModel m = testing::MakeRandomTestModel(shape, type);
    ASSERT_NE(m.model, nullptr);
    auto plain = MakeEngine(m, 0);
    auto drafted = MakeEngine(m, 6);
    ASSERT_TRUE(plain && drafted);
    const std::vector<int32_t> prompt = LoopingPrompt(m, *plain);
    const std::vector<std::string> greedy = Run(*plain, Requests(prompt, {})[0]);
    const std::vector<Request> requests = Requests(prompt, {Text(greedy)});
    std::vector<std::vector<std::string>> expected;
    for (const Request& r : requests) expected.push_back(Run(*plain, r));
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(Run(*drafted, requests[i]), expected[i]) << i;
    const EngineStats alone = drafted->Stats();
    EXPECT_GT(alone.draft_accepted_total, 0) << alone.draft_tokens_total << " drafted, steps " << alone.steps;
    EXPECT_LE(alone.draft_accepted_total, alone.draft_tokens_total);
    EXPECT_LT(alone.steps, plain->Stats().steps);  // accepted drafts saved steps
    EXPECT_EQ(plain->Stats().draft_tokens_total, 0);

    const std::vector<std::vector<std::string>> together = RunTogether(*drafted, requests);
    ASSERT_EQ(together.size(), expected.size());
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(together[i], expected[i]) << i;
    EXPECT_GT(drafted->Stats().draft_accepted_total, alone.draft_accepted_total);
    testing::ExpectAllBlocksFree(*drafted);
  }
}

// More requests running than draft_max_seqs: no drafts at all.
TEST_F(EngineDraftTest, NoDraftsBeyondDraftMaxSeqs) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  EngineOptions options;
  options.threads = 1;
  options.draft_tokens = 4;
  options.draft_max_seqs = 1;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(engine.ok());
  std::vector<Request> requests =
      Requests(testing::RandomTokenIds(int32_t(m.model->config().n_vocab), 9, 2), {});
  requests.resize(3);
  for (Request& r : requests) r.max_tokens = 8;
  RunTogether(**engine, requests);
  EXPECT_EQ((*engine)->Stats().draft_tokens_total, 0);
}

TEST_F(EngineDraftTest, ConstrainedRequestsKeepTheirTokens) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  auto g = grammar::CompiledGrammar::FromGbnf(R"(root ::= ("ab" | "abc" | "b"){4,40} "." )");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto masker = std::make_shared<grammar::TokenMasker>(*g, grammar::TokenVocab::FromTokenizer(*m.tokenizer));
  auto plain = MakeEngine(m, 0);
  auto drafted = MakeEngine(m, 6);
  for (uint64_t seed : {0u, 3u}) {
    Request r;
    r.prompt_ids = {1, 2, 3, 1, 2, 3, 1, 2};
    r.max_tokens = 60;
    r.grammar = masker;
    r.sampling.temperature = seed == 0 ? 0.0f : 0.9f;
    r.sampling.seed = seed;
    EXPECT_EQ(Run(*drafted, r), Run(*plain, r)) << seed;
  }
  EXPECT_GT(drafted->Stats().draft_tokens_total, 0);  // the grammar's loops gave drafts to check
}

TEST_F(EngineDraftTest, DraftTokensAreValidated) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  EngineOptions options;
  options.draft_tokens = 65;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("draft_tokens"), std::string::npos);
  options.draft_tokens = 4;
  options.draft_max_seqs = 0;
  engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("draft_max_seqs"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
