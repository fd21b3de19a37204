// MeasurePerplexity over a random model: the chunks, the BOS, the scored half and the statistics are
// llama-perplexity's (checked against a sum over each chunk's prompt logprobs taken one request at a time),
// and the figure does not depend on how the engine batches the chunks.
#include "eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::TestModel;

std::unique_ptr<Engine> MakePerplexityEngine(const TestModel& m, int max_batch_tokens, int threads) {
  EngineOptions options;
  options.threads = threads;
  options.max_batch_tokens = max_batch_tokens;
  options.max_queue = 64;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

std::vector<int32_t> RandomText(int32_t n_vocab, int count) {
  return testing::RandomTokenIds(n_vocab, count, /*seed=*/11, /*first=*/3);  // no control tokens
}

class PerplexityTest : public testing::RandomTinyModelTest {};

TEST_F(PerplexityTest, ScoresTheSecondHalfOfEachChunkAfterBos) {
  const std::vector<int32_t> tokens = RandomText(n_vocab_, 4 * 40 + 17);  // 4 chunks of 40 and a remainder
  auto engine = MakePerplexityEngine(model_, 64, 2);
  ASSERT_NE(engine, nullptr);
  PerplexityOptions options;
  options.context = 40;
  options.bos = 1;
  auto measured = MeasurePerplexity(*engine, tokens, options);
  ASSERT_TRUE(measured.ok()) << measured.status().ToString();
  EXPECT_EQ(measured->chunks, 4);
  EXPECT_EQ(measured->scored, 4 * 19);  // chunk positions 21..39
  ASSERT_EQ(measured->running.size(), 4u);

  // The same by hand: each chunk alone, its prompt logprobs summed over positions 21..39.
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  for (int c = 0; c < 4; ++c) {
    Request request;
    request.prompt_ids.assign(tokens.begin() + c * 40, tokens.begin() + (c + 1) * 40);
    request.prompt_ids[0] = 1;
    request.prompt_logprobs = 0;
    request.max_tokens = 1;  // (MeasurePerplexity asks for none)
    auto handle = engine->Submit(request);
    ASSERT_TRUE(handle.ok());
    std::vector<PromptLogprob> scores;
    while (auto event = (*handle)->Next()) {
      if (!event->prompt_logprobs.empty()) scores = event->prompt_logprobs;
    }
    ASSERT_EQ(scores.size(), 39u);
    for (int p = 21; p < 40; ++p) {
      EXPECT_EQ(scores[size_t(p - 1)].token, request.prompt_ids[size_t(p)]);
      nll -= scores[size_t(p - 1)].logprob;
      nll2 += double(scores[size_t(p - 1)].logprob) * scores[size_t(p - 1)].logprob;
      ++count;
    }
    EXPECT_DOUBLE_EQ(measured->running[size_t(c)], std::exp(nll / double(count))) << "chunk " << c + 1;
  }
  const double mean = nll / double(count);
  EXPECT_DOUBLE_EQ(measured->ppl, std::exp(mean));
  EXPECT_NEAR(measured->ppl_error,
              measured->ppl * std::sqrt((nll2 / double(count) - mean * mean) / (count - 1)),
              1e-9 * measured->ppl);
  EXPECT_GT(measured->ppl_error, 0);
  // A random model knows nothing: its perplexity is of the order of the vocabulary.
  EXPECT_GT(measured->ppl, n_vocab_ / 10.0);
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(PerplexityTest, TheFigureDoesNotDependOnBatching) {
  const std::vector<int32_t> tokens = RandomText(n_vocab_, 6 * 32);
  PerplexityOptions options;
  options.context = 32;
  options.max_chunks = 5;
  auto wide = MakePerplexityEngine(model_, 512, 2);
  auto narrow = MakePerplexityEngine(model_, 7, 1);
  ASSERT_TRUE(wide && narrow);
  auto a = MeasurePerplexity(*wide, tokens, options);
  auto b = MeasurePerplexity(*narrow, tokens, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->chunks, 5);
  EXPECT_EQ(a->ppl, b->ppl);
  EXPECT_EQ(a->running, b->running);
}

TEST_F(PerplexityTest, BadInputIsNamed) {
  auto engine = MakePerplexityEngine(model_, 64, 1);
  ASSERT_NE(engine, nullptr);
  PerplexityOptions options;
  options.context = 40;
  auto short_text = MeasurePerplexity(*engine, RandomText(n_vocab_, 39), options);
  ASSERT_FALSE(short_text.ok());
  EXPECT_NE(short_text.status().message().find("fewer than one chunk of 40"), std::string::npos);
  options.context = 3;
  EXPECT_FALSE(MeasurePerplexity(*engine, RandomText(n_vocab_, 39), options).ok());
  options.context = 16;
  std::vector<int32_t> bad = RandomText(n_vocab_, 40);
  bad[20] = n_vocab_ + 5;  // in chunk 2
  auto outside = MeasurePerplexity(*engine, bad, options);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("chunk 2"), std::string::npos) << outside.status().ToString();
  testing::ExpectAllBlocksFree(*engine);
}

}  // namespace
}  // namespace lockstep
