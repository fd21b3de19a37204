// LoRA adapters through the engine: requests with different adapter scales run together, each getting the
// tokens it gets alone; the prefix cache shares KV only between requests with equal scales; bad scales are
// refused at submission.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/engine.h"
#include "engine_testing.h"
#include "model/lora_writer.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

using testing::Collected;
using testing::TestModel;

// The random tiny f32 model with two adapters: every target (rank 8), and attention + output (rank 2, bf16).
TestModel TinyWithAdapters() {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  const std::string dir = testing::MakeTempDir("lockstep-engine-lora");
  MakeLoraOptions second;
  second.rank = 2;
  second.targets = {"attn_k", "attn_output", "output"};
  second.type = TensorType::kBF16;
  second.seed = 9;
  EXPECT_TRUE(WriteRandomLora(*m.file, {}, dir + "/a.gguf").ok());
  EXPECT_TRUE(WriteRandomLora(*m.file, second, dir + "/b.gguf").ok());
  auto model = Model::Load(m.file, {.lora_paths = {dir + "/a.gguf", dir + "/b.gguf"}});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (model.ok()) m.model = std::move(model).value();
  return m;
}

std::unique_ptr<Engine> MakeEngine(const TestModel& m, bool caching) {
  EngineOptions options;
  options.threads = 2;
  options.max_seqs = 8;
  options.max_batch_tokens = 24;  // prompts are chunked across steps, beside other requests' rows
  options.prefix_caching = caching;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

Request MakeRequest(const std::vector<int32_t>& prompt, std::vector<float> scales, uint64_t seed = 0) {
  Request r;
  r.prompt_ids = prompt;
  r.max_tokens = 8;
  r.ignore_eos = true;
  r.lora_scales = std::move(scales);
  if (seed != 0) {
    r.sampling.temperature = 0.9f;
    r.sampling.seed = seed;
  } else {
    r.sampling.temperature = 0;
  }
  return r;
}

Collected RunOne(Engine& engine, Request request) {
  auto handle = engine.Submit(std::move(request));
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? testing::Collect(**handle) : Collected{};
}

TEST(EngineLora, MixedScalesTogetherMatchSoloRuns) {
  const TestModel m = TinyWithAdapters();
  ASSERT_NE(m.model, nullptr);
  const int32_t vocab = int32_t(m.model->config().n_vocab);
  const std::vector<int32_t> prompt = testing::RandomTokenIds(vocab, 37, 3);
  const std::vector<std::vector<float>> scales = {{}, {1.0f}, {0.5f, 1.0f}, {0.0f, 2.0f}, {1.0f}, {}};
  std::vector<testing::Arrival> arrivals;
  for (size_t i = 0; i < scales.size(); ++i) {
    arrivals.push_back({MakeRequest(prompt, scales[i], i % 2 ? 40 + i : 0), i == 0 ? 0 : 1});
  }
  auto solo_engine = MakeEngine(m, /*caching=*/false);
  auto engine = MakeEngine(m, /*caching=*/true);
  ASSERT_TRUE(solo_engine && engine);
  const std::vector<Collected> solo = testing::RunSolo(*solo_engine, arrivals);
  const std::vector<Collected> together = testing::RunConcurrently(*engine, arrivals);
  ASSERT_EQ(solo.size(), together.size());
  for (size_t i = 0; i < solo.size(); ++i) {
    EXPECT_EQ(solo[i].tokens, together[i].tokens) << "request " << i;
    EXPECT_EQ(solo[i].last.finish_reason, FinishReason::kLength);
  }
  // The adapters change the output (else the comparisons above prove little).
  EXPECT_NE(solo[0].tokens, solo[1].tokens);
  EXPECT_NE(solo[1].tokens, solo[3].tokens);
  testing::ExpectAllBlocksFree(*engine);
}

TEST(EngineLora, PrefixCacheIsSharedOnlyBetweenEqualScales) {
  const TestModel m = TinyWithAdapters();
  ASSERT_NE(m.model, nullptr);
  const int32_t vocab = int32_t(m.model->config().n_vocab);
  const std::vector<int32_t> prompt = testing::RandomTokenIds(vocab, 50, 8);  // 3 full 16-token blocks
  auto uncached = MakeEngine(m, /*caching=*/false);
  auto engine = MakeEngine(m, /*caching=*/true);
  ASSERT_TRUE(uncached && engine);
  struct Step {
    std::vector<float> scales;
    int32_t cached;  // prompt tokens expected from the cache
  };
  const std::vector<Step> steps = {
      {{1.0f}, 0},
      {{0.5f}, 0},  // other scales: nothing to share
      {{}, 0},
      {{1.0f, 0.0f}, 48},  // equal to the first (trailing zeros do not count)
      {{0.0f, 0.0f}, 48},  // equal to the base model's
      {{0.0f, 1.0f}, 0},
      {{0.5f}, 48},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(i);
    const Collected expected = RunOne(*uncached, MakeRequest(prompt, steps[i].scales));
    const Collected got = RunOne(*engine, MakeRequest(prompt, steps[i].scales));
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_EQ(got.last.timing.cached_tokens, steps[i].cached);
  }
}

TEST(EngineLora, BadScalesAreRefusedAtSubmission) {
  const TestModel m = TinyWithAdapters();
  ASSERT_NE(m.model, nullptr);
  auto engine = MakeEngine(m, true);
  ASSERT_NE(engine, nullptr);
  auto three = engine->Submit(MakeRequest({1, 2, 3}, {1, 1, 1}));
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("3 adapter scales given; 2 adapters are loaded"), std::string::npos)
      << three.status().ToString();
  auto nan = engine->Submit(MakeRequest({1, 2, 3}, {std::nanf("")}));
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("not finite"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
