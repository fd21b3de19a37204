// hybrid_prefix_bench: prefix caching on a model with recurrent layers (qwen35: state snapshots at KV block
// boundaries, kv/recurrent_state_cache.h) on vs off, side by side in one run. On one model (default
// /tmp/small-qwen35.gguf, made by `lockstep make-model --shape small-qwen35 --type q8_0 -o
// /tmp/small-qwen35.gguf`), greedy, EOS ignored:
//   fan_out:   N requests (5) over one D-token document (1000) with their own 16-token questions, submitted
//              together, R new tokens each (--reply-tokens, 8): time to first token (mean, max) and wall
//              seconds;
//   next_turn: then every request's next turn (its prompt, its R-token answer, 16 more tokens), submitted
//              together, 8 new tokens each: time to first token (mean, max) and cached tokens. Replies
//              reaching a block boundary past the prompt's leave a snapshot there (Scheduler::StoreSnapshot),
//              so with R >= 16 a next turn resumes inside its answer, not at the end of its prompt, while
//              the snapshot cache keeps it.
// Each side runs on a fresh engine (cache on: --cache-slots snapshot slots, default auto, the engine's
// default, EngineOptions::kAutomaticCacheSlots; off: 0), after a warm-up request unrelated to the document.
// Prints a JSON report with the ratios off / on.
// Usage: hybrid_prefix_bench [--model PATH] [--threads N] [--doc-len D] [--requests N] [--reply-tokens R]
//                            [--cache-slots N|auto] [--kv-tokens N] [--json FILE]
// --kv-tokens sizes the KV pool (default 8 x (D + 256 + R)), and with it the automatic snapshot count (as
// much memory as the KV pool): small-qwen35's state (12.6 MiB) is worth 6430 of its KV tokens (2 KiB each),
// Qwen3.5-9B's (~50 MiB) 1600 of its (32 KiB), so --kv-tokens 131072 gives small-qwen35 the 20 slots that
// Qwen3.5-9B gets from the server's default 1 GiB KV pool.
#include <algorithm>
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

// Each request's time to first token (from submission) and its prompt tokens found cached.
std::vector<double> Ttfts(const Outcome& outcome) {
  std::vector<double> ttft_s;
  for (const RequestTiming& t : outcome.timing) ttft_s.push_back(t.ttft_s);
  return ttft_s;
}

std::vector<int32_t> CachedTokens(const Outcome& outcome) {
  std::vector<int32_t> cached;
  for (const RequestTiming& t : outcome.timing) cached.push_back(t.cached_tokens);
  return cached;
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
}  // namespace lockstep::bench

int main(int argc, char** argv) {
  using namespace lockstep;
  using namespace lockstep::bench;
  std::string model_path = "/tmp/small-qwen35.gguf";
  std::string json_path;
  int threads = 2;
  int doc_len = 1000;
  int n_requests = 5;
  int reply_tokens = 8;
  int cache_slots = EngineOptions::kAutomaticCacheSlots;
  int64_t kv_tokens = 0;
  CLI::App app{"hybrid_prefix_bench: fan-out and next-turn TTFT with and without state snapshots"};
  AddCommonOptions(app, model_path, threads, json_path);
  app.add_option("--doc-len", doc_len, "shared document tokens")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--requests", n_requests, "questions over the document")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--reply-tokens", reply_tokens,
                 "new tokens of each fan-out request (the next turn's answer)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--cache-slots", cache_slots,
                 "state snapshot slots of the cache-on side (auto: the engine's)")
      ->transform(CLI::Transformer({{"auto", std::to_string(EngineOptions::kAutomaticCacheSlots)}}))
      ->check(CLI::Range(EngineOptions::kAutomaticCacheSlots, 1 << 20))
      ->default_str("auto");
  app.add_option("--kv-tokens", kv_tokens, "KV pool tokens (0: 8 x (doc-len + 256 + reply-tokens))")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 30))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
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
    fan_out.push_back(GreedyRequest(std::move(prompt), reply_tokens));
  }

  nlohmann::json sides = nlohmann::json::object();
  std::vector<std::vector<int32_t>> reference;
  double fan_out_ttft[2] = {0, 0}, turn_ttft[2] = {0, 0};
  int resolved_cache_slots = 0;
  for (int side = 0; side < 2; ++side) {
    const bool on = side == 1;
    EngineOptions options;
    options.threads = threads;
    options.max_seqs = 8;
    options.max_batch_tokens = 512;
    options.kv_tokens = kv_tokens > 0 ? kv_tokens : 8 * (doc_len + 256 + reply_tokens);
    options.recurrent_cache_slots = on ? cache_slots : 0;
    std::unique_ptr<Engine> engine = OrDie(Engine::Create(model, tokenizer, options));
    RunTogether(*engine, {GreedyRequest(RandomTokens(64, 99, n_vocab, tokenizer.get()), 4)});  // warm-up

    const Outcome together = RunTogether(*engine, fan_out);
    std::vector<Request> next_turns;
    for (int i = 0; i < n_requests; ++i) {
      std::vector<int32_t> next = fan_out[size_t(i)].prompt_ids;
      for (int32_t t : together.tokens[size_t(i)]) next.push_back(t);
      for (int32_t t : RandomTokens(kQuestion, 7 + uint64_t(i), n_vocab, tokenizer.get())) next.push_back(t);
      next_turns.push_back(GreedyRequest(std::move(next), kNewTokens));
    }
    const Outcome turn = RunTogether(*engine, next_turns);

    std::vector<std::vector<int32_t>> tokens = together.tokens;
    for (const std::vector<int32_t>& t : turn.tokens) tokens.push_back(t);
    if (!on) {
      reference = tokens;
    } else if (tokens != reference) {
      Die("the tokens with the cache differ from those without: batch invariance is broken");
    }
    const EngineStats stats = engine->Stats();
    fan_out_ttft[side] = Mean(Ttfts(together));
    turn_ttft[side] = Mean(Ttfts(turn));
    if (on) resolved_cache_slots = stats.recurrent_cache_slots_total;
    sides[on ? "cache_on" : "cache_off"] = {
        {"fan_out",
         {{"ttft_mean_s", fan_out_ttft[side]},
          {"ttft_max_s", Max(Ttfts(together))},
          {"wall_s", together.wall_s},
          {"cached_tokens", CachedTokens(together)}}},
        {"next_turn",
         {{"ttft_mean_s", turn_ttft[side]},
          {"ttft_max_s", Max(Ttfts(turn))},
          {"wall_s", turn.wall_s},
          {"cached_tokens", CachedTokens(turn)}}},
        {"prefill_tokens_total", stats.prefill_tokens_total},
        {"snapshots", stats.recurrent_snapshots_total},
        {"snapshot_hits", stats.recurrent_snapshot_hits_total},
        {"snapshot_evictions", stats.recurrent_snapshot_evictions_total},
    };
    engine->Shutdown(/*drain=*/true);
  }

  nlohmann::json report = {
      {"model", model_path},
      {"threads", threads},
      {"doc_len", doc_len},
      {"requests", n_requests},
      {"question_len", kQuestion},
      {"reply_tokens", reply_tokens},
      {"next_turn_new_tokens", kNewTokens},
      {"cache_slots", resolved_cache_slots},
      {"sides", sides},
      {"same_tokens", true},
      {"ratio_fan_out_ttft_off_over_on", fan_out_ttft[0] / fan_out_ttft[1]},
      {"ratio_next_turn_ttft_off_over_on", turn_ttft[0] / turn_ttft[1]},
  };
  WriteReport(report.dump(2), json_path);
  return 0;
}
