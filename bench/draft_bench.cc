// draft_bench: speculative decoding by n-gram drafts (EngineOptions::draft_tokens) against plain decoding on
// one model, side by side: two engines on the same weights, run alternately (the order swapped every round),
// the same requests on each, EOS ignored. Scenarios:
//   greedy_b1:  1 request, greedy — random-weight models fall into loops, so drafts are mostly right: the
//               upper end of what drafts buy (real text: code edits, quotes, lists, sit in between)
//   sampled_b1: 1 request, temperature 1 with top-k 3 — short loops come and go, so drafts are made and
//               often wrong: what checking wrong drafts costs
//   greedy_b4:  4 requests together, greedy (drafts while at most --draft-max-seqs run)
// For each: tokens/s of both (median over rounds), the median per-round ratio drafted / plain (the figure to
// judge by), drafted and accepted tokens, forward passes, and whether every request's tokens were identical
// (they must be). Prints one JSON object.
// Usage: draft_bench --model PATH [--threads N] [--draft N] [--tokens N] [--rounds N] [--json FILE]
#include <algorithm>
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
  std::fprintf(stderr, "draft_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return std::move(result).value();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Scenario {
  std::string name;
  int requests = 1;
  float temperature = 0;
  int top_k = 0;
};

struct Run {
  double seconds = 0;
  int64_t tokens = 0;
  std::vector<std::vector<int32_t>> outputs;
};

Run RunTogether(Engine& engine, const std::vector<Request>& requests) {
  Run run;
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const Request& r : requests) handles.push_back(OrDie(engine.Submit(r)));
  for (auto& h : handles) {
    run.outputs.emplace_back();
    while (auto event = h->Next()) {
      if (event->finish_reason == FinishReason::kError) Die("generation failed: " + event->error);
      if (event->token == kNoToken) continue;
      run.outputs.back().push_back(event->token);
      ++run.tokens;
    }
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

std::vector<Request> Requests(const Scenario& s, int tokens, int64_t n_vocab, const Tokenizer* tokenizer) {
  std::vector<Request> requests;
  for (int i = 0; i < s.requests; ++i) {
    std::mt19937_64 rng(uint64_t(100 + i));
    Request r;
    if (tokenizer != nullptr && tokenizer->bos_id() >= 0) r.prompt_ids.push_back(tokenizer->bos_id());
    while (r.prompt_ids.size() < 32) {
      const int32_t id = int32_t(rng() % uint64_t(n_vocab));
      if (tokenizer == nullptr || !tokenizer->IsSpecial(id)) r.prompt_ids.push_back(id);
    }
    r.max_tokens = tokens;
    r.ignore_eos = true;
    r.sampling.temperature = s.temperature;
    r.sampling.top_k = s.top_k;
    r.sampling.seed = uint64_t(7 + i);
    requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  using namespace lockstep;
  std::string model_path, json_path;
  int threads = 2, draft = 6, tokens = 256, rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model") {
      model_path = value();
    } else if (arg == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (arg == "--draft") {
      draft = std::atoi(value().c_str());
    } else if (arg == "--tokens") {
      tokens = std::atoi(value().c_str());
    } else if (arg == "--rounds") {
      rounds = std::atoi(value().c_str());
    } else if (arg == "--json") {
      json_path = value();
    } else {
      Die("unknown argument '" + arg + "'");
    }
  }
  if (model_path.empty()) Die("--model PATH is required");
  if (threads < 1 || draft < 1 || draft > 64 || tokens < 2 || rounds < 1) {
    Die("--threads, --tokens, --rounds must be >= 1 (--tokens >= 2), --draft in 1..64");
  }
  std::shared_ptr<const GgufFile> file = OrDie(GgufFile::Open(model_path));
  std::shared_ptr<Model> model = OrDie(Model::Load(file));
  std::shared_ptr<const Tokenizer> tokenizer;
  if (auto t = Tokenizer::FromGguf(*file); t.ok()) tokenizer = std::move(t).value();
  EngineOptions options;
  options.threads = threads;
  options.max_seqs = 4;
  options.kv_tokens = 4 * (32 + tokens + 16);
  std::unique_ptr<Engine> plain = OrDie(Engine::Create(model, tokenizer, options));
  options.draft_tokens = draft;
  options.draft_max_seqs = 4;
  std::unique_ptr<Engine> drafted = OrDie(Engine::Create(model, tokenizer, options));
  const int64_t n_vocab = model->config().n_vocab;

  const std::vector<Scenario> scenarios = {
      {"greedy_b1", 1, 0.0f}, {"sampled_b1", 1, 1.0f, 3}, {"greedy_b4", 4, 0.0f}};
  nlohmann::json report = {{"model", model_path},   {"threads", threads},
                           {"draft_tokens", draft}, {"new_tokens_per_request", tokens},
                           {"rounds", rounds},      {"kernels", std::string(model->kernels().name())}};
  for (const Scenario& s : scenarios) {
    const std::vector<Request> requests = Requests(s, tokens, n_vocab, tokenizer.get());
    RunTogether(*plain, {Requests(s, 8, n_vocab, tokenizer.get())[0]});  // warm-up
    RunTogether(*drafted, {Requests(s, 8, n_vocab, tokenizer.get())[0]});
    std::vector<double> plain_rate, drafted_rate, ratio;
    bool identical = true;
    const EngineStats plain_before = plain->Stats(), drafted_before = drafted->Stats();
    for (int round = 0; round < rounds; ++round) {
      Run a, b;
      if (round % 2 == 0) {
        a = RunTogether(*plain, requests);
        b = RunTogether(*drafted, requests);
      } else {
        b = RunTogether(*drafted, requests);
        a = RunTogether(*plain, requests);
      }
      identical = identical && a.outputs == b.outputs;
      plain_rate.push_back(double(a.tokens) / a.seconds);
      drafted_rate.push_back(double(b.tokens) / b.seconds);
      ratio.push_back(drafted_rate.back() / plain_rate.back());
    }
    const EngineStats plain_after = plain->Stats(), drafted_after = drafted->Stats();
    const int64_t drafts = drafted_after.draft_tokens_total - drafted_before.draft_tokens_total;
    const int64_t accepted = drafted_after.draft_accepted_total - drafted_before.draft_accepted_total;
    report["scenarios"][s.name] = {
        {"requests", s.requests},
        {"temperature", s.temperature},
        {"top_k", s.top_k},
        {"plain_tokens_per_s", Median(plain_rate)},
        {"drafted_tokens_per_s", Median(drafted_rate)},
        {"ratio_drafted_over_plain", Median(ratio)},
        {"plain_steps_per_round", double(plain_after.steps - plain_before.steps) / rounds},
        {"drafted_steps_per_round", double(drafted_after.steps - drafted_before.steps) / rounds},
        {"draft_tokens", drafts},
        {"accepted_tokens", accepted},
        {"acceptance", drafts > 0 ? double(accepted) / double(drafts) : 0.0},
        {"identical_outputs", identical},
    };
    if (!identical) std::fprintf(stderr, "draft_bench: %s: outputs differ with drafts\n", s.name.c_str());
  }
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << text << "\n";
  }
  return 0;
}
