// Helpers for the engine tests: loading models (stories260K, random models from the model builder) and
// running sets of requests through an Engine, collecting each request's events.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {

struct TestModel {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
};

// Loads a GGUF model and its tokenizer; fails the test on error.
TestModel LoadTestModel(const std::string& path);
// Writes a random model of the named builder shape ("tiny", "tiny-qwen2") with weight type `type` ("f32",
// "q8_0") into a temp dir and loads it (bert shapes: with the test data's bge WordPiece vocabulary).
TestModel MakeRandomTestModel(const std::string& shape, const std::string& type, uint64_t seed = 7);

// A fixture with a random "tiny" f32 model (MakeRandomTestModel) and its vocabulary size.
class RandomTinyModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = MakeRandomTestModel("tiny", "f32");
    ASSERT_NE(model_.model, nullptr);
    n_vocab_ = int32_t(model_.model->config().n_vocab);
  }
  TestModel model_;
  int32_t n_vocab_ = 0;
};

// `count` token ids drawn uniformly from [first, n_vocab) by a generator seeded with `seed`.
std::vector<int32_t> RandomTokenIds(int32_t n_vocab, int count, uint64_t seed, int32_t first = 0);

struct Collected {
  std::vector<int32_t> tokens;  // every token event's token (the final EOS / stop token included)
  std::string text;
  TokenEvent last;
  int events = 0;
};

// Reads a handle's events to the end.
Collected Collect(RequestHandle& handle);
// Every event of a handle, to the end.
std::vector<TokenEvent> DrainEvents(RequestHandle& handle);
// An embedding request (max_tokens 0) of `prompt`, pooled so.
Request EmbedRequest(std::vector<int32_t> prompt, Pooling pooling);

// An engine over `m` with 2 threads and at most 8 sequences; fails the test (and returns null) on error.
std::unique_ptr<Engine> MakeTestEngine(const TestModel& m, int max_batch_tokens, bool prefix_caching = true,
                                       int64_t kv_tokens = 0, KvDtype kv_dtype = KvDtype::kF16);

// A request and when it arrives: after `after_tokens` tokens of the previous request in the list were
// produced (0 = at once).
struct Arrival {
  Request request;
  int after_tokens = 0;
};

// Submits the requests (staggered as their Arrival says) and collects every stream.
std::vector<Collected> RunConcurrently(Engine& engine, const std::vector<Arrival>& arrivals);
// Runs each request alone, one after another.
std::vector<Collected> RunSolo(Engine& engine, const std::vector<Arrival>& arrivals);

// Waits (bounded) until the engine has no running or waiting request and checks that every KV block is free.
void ExpectAllBlocksFree(const Engine& engine);

}  // namespace lockstep::testing
