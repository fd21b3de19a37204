// engine_bench: the "seed scenario" at engine level — why batching pays. On one model (default
// /tmp/smollm2-q8.gguf, made by `lockstep make-model --shape smollm2-135m --type q8_0 --vocab-from
// ../shared/testdata/vocab/ggml-vocab-llama-spm.gguf -o /tmp/smollm2-q8.gguf`), greedy, EOS ignored:
//   single:     1 request × 1000 new tokens
//   at_once:    5 requests × 200 new tokens, submitted together
//   sequential: 5 requests × 200 new tokens, one after another
// Prints a JSON report: wall seconds of each and the ratios sequential / at_once and single / at_once.
// Usage: engine_bench [--model PATH] [--threads N] [--prompt-len P] [--json FILE]
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
  std::fprintf(stderr, "engine_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return std::move(result).value();
}

Request MakeRequest(int prompt_len, int max_tokens, uint64_t seed, int64_t n_vocab,
                    const Tokenizer* tokenizer) {
  std::mt19937_64 rng(seed);
  Request r;
  if (tokenizer != nullptr && tokenizer->bos_id() >= 0) r.prompt_ids.push_back(tokenizer->bos_id());
  while (int(r.prompt_ids.size()) < prompt_len) {
    const int32_t id = int32_t(rng() % uint64_t(n_vocab));
    if (tokenizer != nullptr && tokenizer->IsSpecial(id)) continue;
    r.prompt_ids.push_back(id);
  }
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  return r;
}

// Submits the requests together and waits for all; returns wall seconds and the summed generated tokens.
double RunTogether(Engine& engine, const std::vector<Request>& requests, int64_t* generated) {
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const Request& r : requests) handles.push_back(OrDie(engine.Submit(r)));
  for (auto& h : handles) {
    while (auto event = h->Next()) {
      if (event->token != kNoToken) ++*generated;
      if (event->finish_reason == FinishReason::kError) Die("generation failed: " + event->error);
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  using namespace lockstep;
  std::string model_path = "/tmp/smollm2-q8.gguf";
  std::string json_path;
  int threads = 2;
  int prompt_len = 32;
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
    else if (arg == "--prompt-len")
      prompt_len = std::atoi(value().c_str());
    else if (arg == "--json")
      json_path = value();
    else
      Die("unknown argument '" + arg + "'");
  }
  if (threads < 1 || prompt_len < 1) Die("--threads and --prompt-len must be >= 1");
  std::shared_ptr<const GgufFile> file = OrDie(GgufFile::Open(model_path));
  std::shared_ptr<Model> model = OrDie(Model::Load(file));
  std::shared_ptr<const Tokenizer> tokenizer;
  if (auto t = Tokenizer::FromGguf(*file); t.ok()) tokenizer = std::move(t).value();
  EngineOptions options;
  options.threads = threads;
  options.max_seqs = 8;
  options.kv_tokens = 8 * (prompt_len + 1000 + 16);
  std::unique_ptr<Engine> engine = OrDie(Engine::Create(model, tokenizer, options));
  const int64_t n_vocab = model->config().n_vocab;

  int64_t warm = 0;
  RunTogether(*engine, {MakeRequest(prompt_len, 8, 99, n_vocab, tokenizer.get())}, &warm);

  int64_t single_tokens = 0, together_tokens = 0, sequential_tokens = 0;
  const double single_s =
      RunTogether(*engine, {MakeRequest(prompt_len, 1000, 1, n_vocab, tokenizer.get())}, &single_tokens);
  std::vector<Request> five;
  for (int i = 0; i < 5; ++i)
    five.push_back(MakeRequest(prompt_len, 200, 10 + uint64_t(i), n_vocab, tokenizer.get()));
  const double together_s = RunTogether(*engine, five, &together_tokens);
  double sequential_s = 0;
  for (const Request& r : five) sequential_s += RunTogether(*engine, {r}, &sequential_tokens);

  nlohmann::json report = {
      {"model", model_path},
      {"threads", threads},
      {"prompt_len", prompt_len},
      {"single_1x1000",
       {{"wall_s", single_s}, {"tokens", single_tokens}, {"tokens_per_s", single_tokens / single_s}}},
      {"at_once_5x200",
       {{"wall_s", together_s}, {"tokens", together_tokens}, {"tokens_per_s", together_tokens / together_s}}},
      {"sequential_5x200",
       {{"wall_s", sequential_s},
        {"tokens", sequential_tokens},
        {"tokens_per_s", sequential_tokens / sequential_s}}},
      {"ratio_sequential_over_at_once", sequential_s / together_s},
      {"ratio_single_over_at_once", single_s / together_s},
  };
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << text << "\n";
    if (!out) Die("cannot write " + json_path);
  }
  engine->Shutdown(/*drain=*/true);
  return 0;
}
