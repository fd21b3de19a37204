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
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::bench {
namespace {

struct Scenario {
  std::string name;
  int requests = 1;
  float temperature = 0;
  int top_k = 0;
};

std::vector<Request> Requests(const Scenario& s, int tokens, int64_t n_vocab, const Tokenizer* tokenizer) {
  std::vector<Request> requests;
  for (int i = 0; i < s.requests; ++i) {
    Request r = GreedyRequest(RandomPrompt(32, uint64_t(100 + i), n_vocab, tokenizer), tokens);
    r.sampling.temperature = s.temperature;
    r.sampling.top_k = s.top_k;
    r.sampling.seed = uint64_t(7 + i);
    requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) {
  using namespace lockstep;
  using namespace lockstep::bench;
  std::string model_path, json_path;
  int threads = 2, draft = 6, tokens = 256, rounds = 3;
  CLI::App app{"draft_bench: tokens per second with and without prompt-lookup drafts, outputs compared"};
  AddCommonOptions(app, model_path, threads, json_path);
  app.add_option("--draft", draft, "draft tokens per step")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--tokens", tokens, "new tokens per request")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--rounds", rounds)->check(CLI::Range(1, 1000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
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
      Outcome a, b;
      if (round % 2 == 0) {
        a = RunTogether(*plain, requests);
        b = RunTogether(*drafted, requests);
      } else {
        b = RunTogether(*drafted, requests);
        a = RunTogether(*plain, requests);
      }
      identical = identical && a.tokens == b.tokens;
      plain_rate.push_back(double(a.generated()) / a.wall_s);
      drafted_rate.push_back(double(b.generated()) / b.wall_s);
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
  WriteReport(report.dump(2), json_path);
  return 0;
}
