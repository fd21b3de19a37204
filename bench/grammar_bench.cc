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
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/token_masker.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::bench {
namespace {

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

// Each request's time per output token.
std::vector<double> TimesPerToken(const Outcome& outcome) {
  std::vector<double> tpot_s;
  for (const RequestTiming& t : outcome.timing) tpot_s.push_back(t.tpot_s);
  return tpot_s;
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) {
  using namespace lockstep;
  using namespace lockstep::bench;
  std::string model_path = "/tmp/smollm2-q8.gguf", json_path;
  int threads = 2, seqs = 8, tokens = 96, rounds = 3;
  CLI::App app{"grammar_bench: decode step time with and without a JSON-schema grammar"};
  AddCommonOptions(app, model_path, threads, json_path);
  app.add_option("--seqs", seqs, "requests together")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--tokens", tokens, "new tokens per request")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--rounds", rounds)->check(CLI::Range(1, 1000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
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
      Request r = GreedyRequest(prompt, tokens);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = round * 1000 + uint64_t(i);
      r.grammar = constraint;
      out.push_back(std::move(r));
    }
    return out;
  };
  RunTogether(*engine, requests(nullptr, 0));  // warm-up
  std::vector<double> free_tpot, constrained_tpot, ratios, direct_tpot, direct_ratios;
  nlohmann::json per_round = nlohmann::json::array();
  std::vector<std::vector<int32_t>> outputs;
  for (int round = 1; round <= rounds; ++round) {
    Outcome a = RunTogether(*engine, requests(nullptr, uint64_t(round)));
    Outcome b = RunTogether(*engine, requests(masker, uint64_t(round)));
    Outcome c = RunTogether(*engine, requests(direct_masker, uint64_t(round)));
    const std::vector<double> ta = TimesPerToken(a), tb = TimesPerToken(b), tc = TimesPerToken(c);
    const double ma = Median(ta), mb = Median(tb), mc = Median(tc);
    free_tpot.insert(free_tpot.end(), ta.begin(), ta.end());
    constrained_tpot.insert(constrained_tpot.end(), tb.begin(), tb.end());
    direct_tpot.insert(direct_tpot.end(), tc.begin(), tc.end());
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
  WriteReport(report.dump(2), json_path);
  engine->Shutdown(/*drain=*/true);
  return all_valid ? 0 : 1;
}
