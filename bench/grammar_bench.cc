// grammar_bench: what constrained decoding costs per step. On one model (default /tmp/smollm2-q8.gguf, made
// by `lockstep make-model --shape smollm2-135m --type q8_0 --vocab-from
// ../shared/testdata/vocab/ggml-vocab-llama-spm.gguf -o /tmp/smollm2-q8.gguf`), N sequences (default 8)
// decode together at temperature 1, EOS ignored, first unconstrained, then each under a JSON schema grammar
// (an array of at least 1000 records, so no sequence can finish early), alternating for several rounds.
// Reports the decode time per step (each request's time per output token, RequestTiming::tpot_s, median
// over requests and rounds) of both and their ratio; then replays the constrained outputs through a
// fresh TokenMasker (cold: every mask built on first use) and reports what one mask costs (mean / p50 /
// p99 microseconds), and the warm-up time of the masker the engine used. Prints JSON.
// Masks are built over the lazy byte DFA (grammar/byte_dfa.h); the "direct" figures are the same maskers
// with the DFA off (one stack expansion per trie node, the walk before it), measured alternately with the
// DFA ones in the same run: warm-up, constrained rounds and cold replays.
// Usage: grammar_bench [--model PATH] [--threads N] [--seqs N] [--tokens N] [--rounds N] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/token_masker.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "grammar_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return std::move(result).value();
}

constexpr char kSchema[] = R"({
  "type": "array", "minItems": 1000,
  "items": {
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 20},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "city": {"enum": ["Paris", "Lagos", "Lima", "Osaka"]},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
      "score": {"type": "number"}
    },
    "required": ["name", "age", "city", "tags", "score"],
    "additionalProperties": false
  }
})";

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct RunResult {
  std::vector<double> tpot_s;
  std::vector<std::vector<int32_t>> tokens;
};

RunResult Run(Engine& engine, const std::vector<Request>& requests) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const Request& r : requests) handles.push_back(OrDie(engine.Submit(r)));
  RunResult out;
  for (auto& h : handles) {
    std::vector<int32_t> tokens;
    while (auto event = h->Next()) {
      if (event->token != kNoToken) tokens.push_back(event->token);
      if (event->finish_reason == FinishReason::kError) Die("generation failed: " + event->error);
      if (event->last()) out.tpot_s.push_back(event->timing.tpot_s);
    }
    out.tokens.push_back(std::move(tokens));
  }
  return out;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  using namespace lockstep;
  std::string model_path = "/tmp/smollm2-q8.gguf", json_path;
  int threads = 2, seqs = 8, tokens = 96, rounds = 3;
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
    } else if (arg == "--seqs") {
      seqs = std::atoi(value().c_str());
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
  if (threads < 1 || seqs < 1 || tokens < 2 || rounds < 1) Die("bad --threads/--seqs/--tokens/--rounds");
  std::shared_ptr<const GgufFile> file = OrDie(GgufFile::Open(model_path));
  std::shared_ptr<Model> model = OrDie(Model::Load(file));
  std::shared_ptr<const Tokenizer> tokenizer = OrDie(Tokenizer::FromGguf(*file));
  EngineOptions options;
  options.threads = threads;
  options.max_seqs = seqs;
  options.kv_tokens = seqs * (64 + tokens + 16);
  std::unique_ptr<Engine> engine = OrDie(Engine::Create(model, tokenizer, options));

  const Clock::time_point compile_start = Clock::now();
  const std::string gbnf = OrDie(grammar::JsonSchemaToGbnf(nlohmann::ordered_json::parse(kSchema)));
  auto compiled = OrDie(grammar::CompiledGrammar::FromGbnf(gbnf));
  auto vocab = grammar::TokenVocab::FromTokenizer(*tokenizer);
  const double compile_s = std::chrono::duration<double>(Clock::now() - compile_start).count();
  auto masker = std::make_shared<grammar::TokenMasker>(compiled, vocab);
  auto direct_masker = std::make_shared<grammar::TokenMasker>(
      compiled, vocab, grammar::TokenMasker::kDefaultContextDepth, /*dfa_max_states=*/0);
  auto warm_up = [](grammar::TokenMasker& m) {
    const Clock::time_point start = Clock::now();
    m.Warm(/*walks=*/8, /*steps=*/64, /*budget_s=*/30.0);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const double precompute_s = warm_up(*masker);
  const double direct_precompute_s = warm_up(*direct_masker);

  const std::vector<int32_t> prompt = OrDie(tokenizer->Encode(
      "Write a JSON array of people with their name, age, city, tags and score:\n", true, false));
  auto requests = [&](const std::shared_ptr<grammar::TokenMasker>& constraint, uint64_t round) {
    std::vector<Request> out;
    for (int i = 0; i < seqs; ++i) {
      Request r;
      r.prompt_ids = prompt;
      r.max_tokens = tokens;
      r.ignore_eos = true;
      r.sampling.temperature = 1.0f;
      r.sampling.seed = round * 1000 + uint64_t(i);
      r.grammar = constraint;
      out.push_back(std::move(r));
    }
    return out;
  };
  Run(*engine, requests(nullptr, 0));  // warm-up
  std::vector<double> free_tpot, constrained_tpot, ratios, direct_tpot, direct_ratios;
  nlohmann::json per_round = nlohmann::json::array();
  std::vector<std::vector<int32_t>> outputs;
  for (int round = 1; round <= rounds; ++round) {
    RunResult a = Run(*engine, requests(nullptr, uint64_t(round)));
    RunResult b = Run(*engine, requests(masker, uint64_t(round)));
    RunResult c = Run(*engine, requests(direct_masker, uint64_t(round)));
    const double ma = Median(a.tpot_s), mb = Median(b.tpot_s), mc = Median(c.tpot_s);
    free_tpot.insert(free_tpot.end(), a.tpot_s.begin(), a.tpot_s.end());
    constrained_tpot.insert(constrained_tpot.end(), b.tpot_s.begin(), b.tpot_s.end());
    direct_tpot.insert(direct_tpot.end(), c.tpot_s.begin(), c.tpot_s.end());
    ratios.push_back(mb / ma);
    direct_ratios.push_back(mc / ma);
    per_round.push_back({{"unconstrained_step_ms", ma * 1e3},
                         {"constrained_step_ms", mb * 1e3},
                         {"ratio", mb / ma},
                         {"constrained_direct_step_ms", mc * 1e3},
                         {"ratio_direct", mc / ma}});
    for (auto& t : b.tokens) outputs.push_back(std::move(t));
  }

  const grammar::TokenMasker::Stats stats = masker->stats();
  // Replay the constrained outputs: what each mask costs on its own, with the engine's (warm) masker and
  // with a fresh one (cold: every context and state met for the first time in this replay).
  bool all_valid = true;
  auto replay = [&](grammar::TokenMasker& m) {
    std::vector<double> us;
    std::vector<uint64_t> mask(vocab->mask_words());
    size_t allowed_total = 0;
    for (const std::vector<int32_t>& out : outputs) {
      grammar::GrammarMatcher matcher(compiled);
      for (int32_t token : out) {
        const Clock::time_point t0 = Clock::now();
        allowed_total += m.FillMask(matcher, mask);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        all_valid = all_valid && m.Allows(matcher, token) && matcher.AcceptBytes(vocab->bytes(token));
      }
    }
    double mean = 0;
    for (double u : us) mean += u;
    mean /= double(std::max<size_t>(1, us.size()));
    std::sort(us.begin(), us.end());
    return nlohmann::json{
        {"mean_us", mean},
        {"p50_us", us.empty() ? 0 : us[us.size() / 2]},
        {"p99_us", us.empty() ? 0 : us[us.size() * 99 / 100]},
        {"max_us", us.empty() ? 0 : us.back()},
        {"masks", us.size()},
        {"mean_allowed_tokens", double(allowed_total) / double(std::max<size_t>(1, us.size()))}};
  };
  nlohmann::json warm = replay(*masker);
  // Cold replays, DFA and direct alternately (3 each); the figures are those of the median-mean run.
  std::vector<nlohmann::json> colds, colds_direct;
  for (int i = 0; i < 3; ++i) {
    grammar::TokenMasker fresh(compiled, vocab);
    colds.push_back(replay(fresh));
    grammar::TokenMasker fresh_direct(compiled, vocab, grammar::TokenMasker::kDefaultContextDepth, 0);
    colds_direct.push_back(replay(fresh_direct));
  }
  auto median_run = [](std::vector<nlohmann::json> runs) {
    std::sort(runs.begin(), runs.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
      return x["mean_us"].get<double>() < y["mean_us"].get<double>();
    });
    return runs[runs.size() / 2];
  };
  nlohmann::json cold = median_run(colds);
  nlohmann::json cold_direct = median_run(colds_direct);
  cold_direct["mean_over_dfa"] = cold_direct["mean_us"].get<double>() / cold["mean_us"].get<double>();
  const double free_step = Median(free_tpot);
  warm["per_step_share_of_unconstrained_step"] = seqs * warm["mean_us"].get<double>() * 1e-6 / free_step;
  nlohmann::json report = {
      {"model", model_path},
      {"threads", threads},
      {"sequences", seqs},
      {"tokens_per_sequence", tokens},
      {"rounds", per_round},
      {"unconstrained_step_ms", free_step * 1e3},
      {"constrained_step_ms", Median(constrained_tpot) * 1e3},
      {"ratio_constrained_over_unconstrained", Median(ratios)},
      {"mask_warm", warm},
      {"mask_cold", cold},
      {"direct",
       {{"constrained_step_ms", Median(direct_tpot) * 1e3},
        {"ratio_constrained_over_unconstrained", Median(direct_ratios)},
        {"warm_s", direct_precompute_s},
        {"mask_cold", cold_direct}}},
      {"grammar",
       {{"positions", compiled->num_positions()},
        {"terminals", compiled->terminals().size()},
        {"compile_s", compile_s},
        {"warm_s", precompute_s},
        {"contexts_built", stats.contexts_built},
        {"uncertain_tokens_total", stats.uncertain_total},
        {"state_cache_hits", stats.state_hits},
        {"state_cache_misses", stats.state_misses},
        {"dfa_states", stats.dfa_states},
        {"dfa_fallbacks", stats.dfa_fallbacks},
        {"vocabulary", vocab->size()}}},
      {"outputs_valid", all_valid},
  };
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << text << "\n";
    if (!out) Die("cannot write " + json_path);
  }
  engine->Shutdown(/*drain=*/true);
  return all_valid ? 0 : 1;
}
