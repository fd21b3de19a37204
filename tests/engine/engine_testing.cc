#include "engine_testing.h"

#include <chrono>
#include <random>
#include <thread>

#include "model/model_builder.h"
#include "testing/testdata.h"

namespace lockstep::testing {

TestModel LoadTestModel(const std::string& path) {
  TestModel m;
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return m;
  m.file = std::move(file).value();
  auto model = Model::Load(m.file);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return m;
  m.model = std::move(model).value();
  auto tokenizer = Tokenizer::FromGguf(*m.file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  if (tokenizer.ok()) m.tokenizer = std::move(tokenizer).value();
  return m;
}

std::vector<int32_t> RandomTokenIds(int32_t n_vocab, int count, uint64_t seed, int32_t first) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i) tokens.push_back(first + int32_t(rng() % uint64_t(n_vocab - first)));
  return tokens;
}

TestModel MakeRandomTestModel(const std::string& shape, const std::string& type, uint64_t seed) {
  MakeModelOptions options;
  auto found = FindModelShape(shape);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  if (!found.ok()) return {};
  options.shape = *found;
  if (options.shape.architecture == "bert")
    options.vocab_from = TestDataPath("vocab/ggml-vocab-bert-bge.gguf");
  auto parsed = ParseTensorType(type);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) return {};
  options.type = *parsed;
  options.seed = seed;
  const std::string path = MakeTempDir("lockstep-engine") + "/" + shape + "-" + type + ".gguf";
  const Status written = WriteRandomModel(options, path);
  EXPECT_TRUE(written.ok()) << written.ToString();
  if (!written.ok()) return {};
  return LoadTestModel(path);
}

Request EmbedRequest(std::vector<int32_t> prompt, Pooling pooling) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.embedding = pooling;
  r.max_tokens = 0;
  return r;
}

std::vector<TokenEvent> DrainEvents(RequestHandle& handle) {
  std::vector<TokenEvent> events;
  while (auto event = handle.Next()) events.push_back(std::move(*event));
  return events;
}

std::unique_ptr<Engine> MakeTestEngine(const TestModel& m, int max_batch_tokens, bool prefix_caching,
                                       int64_t kv_tokens, KvDtype kv_dtype) {
  EngineOptions options;
  options.threads = 2;
  options.max_seqs = 8;
  options.max_batch_tokens = max_batch_tokens;
  options.prefix_caching = prefix_caching;
  options.kv_tokens = kv_tokens;
  options.kv_dtype = kv_dtype;
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

Collected Collect(RequestHandle& handle) {
  Collected c;
  while (std::optional<TokenEvent> event = handle.Next(std::chrono::milliseconds(60000))) {
    ++c.events;
    if (event->token != kNoToken) c.tokens.push_back(event->token);
    c.text += event->text_delta;
    if (event->last()) {
      c.last = std::move(*event);
      break;
    }
  }
  EXPECT_TRUE(c.last.last()) << "the stream of request " << handle.id() << " did not end";
  return c;
}

std::vector<Collected> RunConcurrently(Engine& engine, const std::vector<Arrival>& arrivals) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::vector<Collected> results(arrivals.size());
  std::vector<int> read_events(arrivals.size(), 0);
  // Staggering: before submitting request i with after_tokens k, read k events of request i-1 (they are
  // kept).
  std::vector<std::vector<TokenEvent>> early(arrivals.size());
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (i > 0 && arrivals[i].after_tokens > 0) {
      RequestHandle& previous = *handles[i - 1];
      while (int(early[i - 1].size()) < arrivals[i].after_tokens) {
        std::optional<TokenEvent> event = previous.Next(std::chrono::milliseconds(60000));
        if (!event) break;
        const bool last = event->last();
        early[i - 1].push_back(std::move(*event));
        if (last) break;
      }
    }
    auto handle = engine.Submit(arrivals[i].request);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    handles.push_back(std::move(handle).value());
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    Collected& c = results[i];
    bool ended = false;
    for (TokenEvent& event : early[i]) {
      ++c.events;
      if (event.token != kNoToken) c.tokens.push_back(event.token);
      c.text += event.text_delta;
      if (event.last()) {
        c.last = std::move(event);
        ended = true;
      }
    }
    if (!ended) {
      Collected rest = Collect(*handles[i]);
      c.events += rest.events;
      c.tokens.insert(c.tokens.end(), rest.tokens.begin(), rest.tokens.end());
      c.text += rest.text;
      c.last = std::move(rest.last);
    }
  }
  return results;
}

std::vector<Collected> RunSolo(Engine& engine, const std::vector<Arrival>& arrivals) {
  std::vector<Collected> results;
  for (const Arrival& arrival : arrivals) {
    auto handle = engine.Submit(arrival.request);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    results.push_back(Collect(**handle));
  }
  return results;
}

void ExpectAllBlocksFree(const Engine& engine) {
  EngineStats stats = engine.Stats();
  for (int i = 0; i < 2000 && (stats.running != 0 || stats.waiting != 0 || stats.kv_blocks_used != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stats = engine.Stats();
  }
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.kv_blocks_used, 0);
  EXPECT_EQ(stats.kv_blocks_free, stats.kv_blocks_total);
}

}  // namespace lockstep::testing
