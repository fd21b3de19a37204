// What the engine-level benches share: failing loudly (a bench has no caller to return an error to),
// the options they all take, random prompts, and running a set of requests together to completion.
// Header-only: each bench/*_bench.cc is its own program (bench/CMakeLists.txt). Not thread-safe; benches call
// it from main's thread.
#ifndef LOCKSTEP_BENCH_BENCH_SUPPORT_H_
#define LOCKSTEP_BENCH_BENCH_SUPPORT_H_

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::bench {

using Clock = std::chrono::steady_clock;

// Prints "<program>: <message>" and exits with status 1.
[[noreturn]] inline void Die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  std::exit(1);
}

// The options every engine bench takes: --model (required when `model_path` starts empty), --threads and
// --json (the report is also written there).
inline void AddCommonOptions(CLI::App& app, std::string& model_path, int& threads, std::string& json_path) {
  CLI::Option* model = app.add_option("--model", model_path, "GGUF model file");
  if (model_path.empty()) {
    model->required();
  } else {
    model->capture_default_str();
  }
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--json", json_path, "also write the report here");
}

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return std::move(result).value();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `count` token ids drawn from the vocabulary by a generator seeded with `seed`, skipping the tokenizer's
// special tokens (none skipped without a tokenizer).
inline std::vector<int32_t> RandomTokens(int count, uint64_t seed, int64_t n_vocab,
                                         const Tokenizer* tokenizer) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  while (int(ids.size()) < count) {
    const int32_t id = int32_t(rng() % uint64_t(n_vocab));
    if (tokenizer == nullptr || !tokenizer->IsSpecial(id)) ids.push_back(id);
  }
  return ids;
}

// A prompt of `len` tokens: the tokenizer's BOS when it has one, then RandomTokens.
inline std::vector<int32_t> RandomPrompt(int len, uint64_t seed, int64_t n_vocab,
                                         const Tokenizer* tokenizer) {
  std::vector<int32_t> prompt;
  if (tokenizer != nullptr && tokenizer->bos_id() >= 0) prompt.push_back(tokenizer->bos_id());
  const std::vector<int32_t> rest = RandomTokens(len - int(prompt.size()), seed, n_vocab, tokenizer);
  prompt.insert(prompt.end(), rest.begin(), rest.end());
  return prompt;
}

// A greedy request over `prompt` that ignores EOS and generates exactly `max_tokens` tokens.
inline Request GreedyRequest(std::vector<int32_t> prompt, int max_tokens) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  return r;
}

// What RunTogether saw, per request in submission order.
struct Outcome {
  double wall_s = 0;                         // first submission to the last request's end
  std::vector<std::vector<int32_t>> tokens;  // generated tokens
  std::vector<RequestTiming> timing;         // from each request's last event
  int64_t generated() const {
    int64_t n = 0;
    for (const auto& t : tokens) n += int64_t(t.size());
    return n;
  }
};

// Submits the requests together and waits for all; dies if one fails.
inline Outcome RunTogether(Engine& engine, const std::vector<Request>& requests) {
  Outcome out;
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const Request& r : requests) handles.push_back(OrDie(engine.Submit(r)));
  for (auto& handle : handles) {
    std::vector<int32_t> tokens;
    RequestTiming timing;
    while (auto event = handle->Next()) {
      if (event->finish_reason == FinishReason::kError) Die("generation failed: " + event->error);
      if (event->token != kNoToken) tokens.push_back(event->token);
      if (event->last()) timing = event->timing;
    }
    out.tokens.push_back(std::move(tokens));
    out.timing.push_back(timing);
  }
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

// Prints the report and, when `path` is not empty, writes it there too.
inline void WriteReport(const std::string& text, const std::string& path) {
  std::printf("%s\n", text.c_str());
  if (path.empty()) return;
  std::ofstream out(path);
  out << text << "\n";
  if (!out) Die("cannot write " + path);
}

}  // namespace lockstep::bench

#endif  // LOCKSTEP_BENCH_BENCH_SUPPORT_H_
