// hybrid_prefix_bench: prefix caching on a model with recurrent layers (qwen35: state snapshots at KV block
// boundaries, kv/recurrent_state_cache.h) on vs off, side by side in one run. On one model (default
// /tmp/small-qwen35.gguf, made by `lockstep make-model --shape small-qwen35 --type q8_0 -o
// /tmp/small-qwen35.gguf`), greedy, EOS ignored:
//   fan_out:   N requests (5) over one D-token document (1000) with their own 16-token questions, submitted
//              together, 8 new tokens each: time to first token (mean, max) and wall seconds;
//   next_turn: then the first request's next turn (its prompt, its answer, 16 more tokens): time to first
//              token.
// Each side runs on a fresh engine (cache on: --recurrent-cache-slots 8; off: 0), after a warm-up request
// unrelated to the document. Prints a JSON report with the ratios off / on.
// Usage: hybrid_prefix_bench [--model PATH] [--threads N] [--doc-len D] [--requests N] [--json FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "hybrid_prefix_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return std::move(result).value();
}

std::vector<int32_t> RandomTokens(int count, uint64_t seed, int64_t n_vocab, const Tokenizer* tokenizer) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  while (int(ids.size()) < count) {
    const int32_t id = int32_t(rng() % uint64_t(n_vocab));
    if (tokenizer != nullptr && tokenizer->IsSpecial(id)) continue;
    ids.push_back(id);
  }
  return ids;
}

Request MakeRequest(std::vector<int32_t> prompt, int max_tokens) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  return r;
}

struct Outcome {
  double wall_s = 0;
  std::vector<double> ttft_s;                // per request, from submission
  std::vector<std::vector<int32_t>> tokens;  // per request
  std::vector<int32_t> cached_tokens;        // per request
};

// Submits the requests together and waits for all.
Outcome RunTogether(Engine& engine, const std::vector<Request>& requests) {
  Outcome out;
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const Request& r : requests) handles.push_back(OrDie(engine.Submit(r)));
  for (auto& h : handles) {
    std::vector<int32_t> tokens;
    double ttft = 0;
    int32_t cached = 0;
    while (auto event = h->Next()) {
      if (event->finish_reason == FinishReason::kError) Die("generation failed: " + event->error);
      if (event->token != kNoToken) {
        if (tokens.empty()) ttft = std::chrono::duration<double>(Clock::now() - start).count();
        tokens.push_back(event->token);
      }
      if (event->last()) cached = event->timing.cached_tokens;
    }
    out.ttft_s.push_back(ttft);
    out.tokens.push_back(std::move(tokens));
    out.cached_tokens.push_back(cached);
  }
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double Max(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, x);
  return m;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  using namespace lockstep;
  std::string model_path = "/tmp/small-qwen35.gguf";
  std::string json_path;
  int threads = 2;
  int doc_len = 1000;
  int n_requests = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model")
      model_path = value();
    else if (arg == "--threads")
      threads = std::atoi(value().c_str());
    else if (arg == "--doc-len")
      doc_len = std::atoi(value().c_str());
    else if (arg == "--requests")
      n_requests = std::atoi(value().c_str());
    else if (arg == "--json")
      json_path = value();
    else
      Die("unknown argument '" + arg + "'");
  }
  if (threads < 1 || doc_len < 1 || n_requests < 1) Die("--threads, --doc-len and --requests must be >= 1");
  std::shared_ptr<const GgufFile> file = OrDie(GgufFile::Open(model_path));
  std::shared_ptr<Model> model = OrDie(Model::Load(file));
  if (model->config().RecurrentLayers() == 0) Die(model_path + " has no recurrent layers");
  std::shared_ptr<const Tokenizer> tokenizer;
  if (auto t = Tokenizer::FromGguf(*file); t.ok()) tokenizer = std::move(t).value();
  const int64_t n_vocab = model->config().n_vocab;
  constexpr int kQuestion = 16, kNewTokens = 8;

  const std::vector<int32_t> doc = RandomTokens(doc_len, 1, n_vocab, tokenizer.get());
  std::vector<Request> fan_out;
  for (int i = 0; i < n_requests; ++i) {
    std::vector<int32_t> prompt = doc;
    for (int32_t t : RandomTokens(kQuestion, 100 + uint64_t(i), n_vocab, tokenizer.get()))
      prompt.push_back(t);
    fan_out.push_back(MakeRequest(std::move(prompt), kNewTokens));
  }

  nlohmann::json sides = nlohmann::json::object();
  std::vector<std::vector<int32_t>> reference;
  double fan_out_ttft[2] = {0, 0}, turn_ttft[2] = {0, 0};
  for (int side = 0; side < 2; ++side) {
    const bool on = side == 1;
    EngineOptions options;
    options.threads = threads;
    options.max_seqs = 8;
    options.max_batch_tokens = 512;
    options.kv_tokens = 8 * (doc_len + 256);
    options.recurrent_cache_slots = on ? 8 : 0;
    std::unique_ptr<Engine> engine = OrDie(Engine::Create(model, tokenizer, options));
    RunTogether(*engine, {MakeRequest(RandomTokens(64, 99, n_vocab, tokenizer.get()), 4)});  // warm-up

    const Outcome together = RunTogether(*engine, fan_out);
    std::vector<int32_t> next = fan_out[0].prompt_ids;
    for (int32_t t : together.tokens[0]) next.push_back(t);
    for (int32_t t : RandomTokens(kQuestion, 7, n_vocab, tokenizer.get())) next.push_back(t);
    const Outcome turn = RunTogether(*engine, {MakeRequest(next, kNewTokens)});

    std::vector<std::vector<int32_t>> tokens = together.tokens;
    tokens.push_back(turn.tokens[0]);
    if (!on) {
      reference = tokens;
    } else if (tokens != reference) {
      Die("the tokens with the cache differ from those without: batch invariance is broken");
    }
    const EngineStats stats = engine->Stats();
    fan_out_ttft[side] = Mean(together.ttft_s);
    turn_ttft[side] = turn.ttft_s[0];
    sides[on ? "cache_on" : "cache_off"] = {
        {"fan_out",
         {{"ttft_mean_s", Mean(together.ttft_s)},
          {"ttft_max_s", Max(together.ttft_s)},
          {"wall_s", together.wall_s},
          {"cached_tokens", together.cached_tokens}}},
        {"next_turn", {{"ttft_s", turn.ttft_s[0]}, {"cached_tokens", turn.cached_tokens[0]}}},
        {"prefill_tokens_total", stats.prefill_tokens_total},
        {"snapshots", stats.recurrent_snapshots_total},
        {"snapshot_hits", stats.recurrent_snapshot_hits_total},
    };
    engine->Shutdown(/*drain=*/true);
  }

  nlohmann::json report = {
      {"model", model_path},
      {"threads", threads},
      {"doc_len", doc_len},
      {"requests", n_requests},
      {"question_len", kQuestion},
      {"new_tokens", kNewTokens},
      {"sides", sides},
      {"same_tokens", true},
      {"ratio_fan_out_ttft_off_over_on", fan_out_ttft[0] / fan_out_ttft[1]},
      {"ratio_next_turn_ttft_off_over_on", turn_ttft[0] / turn_ttft[1]},
  };
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << text << "\n";
    if (!out) Die("cannot write " + json_path);
  }
  return 0;
}
