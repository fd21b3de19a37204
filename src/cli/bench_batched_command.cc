// `lockstep bench batched`: like llama.cpp's batched-bench, through the continuous-batching engine. For each
// batch size B: B sequences of P prompt tokens (fixed pseudo-random non-special ids) submitted at once, G new
// tokens each (greedy, EOS ignored). Prefill = until every sequence has its first token (B×P tokens); decode
// = the rest (B×(G-1) tokens). With --embeddings (implied for an encoder such as bert, which cannot
// generate) the B requests are embedding requests (the model's pooling; mean where it names none): prefill is
// until every vector has come, and there is no decode. Prints a table; --json writes
// {"results": [{"batch", "prefill_tokens_per_s", "decode_tokens_per_s", "total_s"}]}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/engine_setup.h"
#include "cli/flag_checks.h"
#include "engine/engine.h"

namespace lockstep::cli {
namespace {

struct BenchBatchedFlags {
  std::string model;
  int prompt_len = 128;
  int gen_len = 128;
  std::string batches = "1,2,4,8,16,32,64";
  int threads = 0;
  int max_batch_tokens = 0;  // 0 = B × P (the whole prefill in one step), at most 8192
  std::string kv_type = "f16";
  std::string json;
  bool embeddings = false;
};

struct BenchResult {
  int batch = 0;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  double total_s = 0;
};

std::vector<int> ParseBatches(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 1 || value > 4096) {
      Fail("--batches: '" + item + "' is not a batch size in 1..4096");
    }
    out.push_back(value);
  }
  if (out.empty()) Fail("--batches: no batch sizes given");
  return out;
}

std::vector<int32_t> MakePrompt(const LoadedModel& loaded, int len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t n_vocab = loaded.model->config().n_vocab;
  std::vector<int32_t> ids;
  while (int(ids.size()) < len) {
    const int32_t id = int32_t(rng() % uint64_t(n_vocab));
    if (loaded.tokenizer && (loaded.tokenizer->IsSpecial(id) || loaded.tokenizer->IsEndOfGeneration(id)))
      continue;
    ids.push_back(id);
  }
  return ids;
}

BenchResult RunOne(const LoadedModel& loaded, const BenchBatchedFlags& f, EngineOptions options, int batch) {
  options.max_seqs = batch;
  options.max_batch_tokens =
      f.max_batch_tokens > 0 ? f.max_batch_tokens : std::min(8192, std::max(batch * f.prompt_len, batch));
  options.kv_tokens = int64_t(batch) * (f.prompt_len + f.gen_len + options.block_tokens);
  options.max_queue = batch + 1;
  std::unique_ptr<Engine> engine = ValueOrDie(Engine::Create(loaded.model, loaded.tokenizer, options));
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < batch; ++i) prompts.push_back(MakePrompt(loaded, f.prompt_len, 1000 + uint64_t(i)));

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < batch; ++i) {
    Request request;
    request.prompt_ids = prompts[size_t(i)];
    request.max_tokens = f.embeddings ? 0 : f.gen_len;
    request.ignore_eos = true;
    request.sampling.temperature = 0;
    if (f.embeddings) {
      const Pooling pooling = loaded.model->config().pooling;
      request.embedding = pooling == Pooling::kNone || pooling == Pooling::kRank ? Pooling::kMean : pooling;
    }
    handles.push_back(ValueOrDie(engine->Submit(std::move(request))));
  }
  Clock::time_point prefill_end = start;
  for (auto& handle : handles) {
    // The engine thread stamps each request's time to first token, so the reading order does not matter.
    while (std::optional<TokenEvent> event = handle->Next()) {
      if (event->last()) {
        if (event->finish_reason == FinishReason::kError) Fail("generation failed: " + event->error);
        const auto ttft =
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(event->timing.ttft_s));
        prefill_end = std::max(prefill_end, start + ttft);
      }
    }
  }
  const Clock::time_point end = Clock::now();
  if (f.embeddings) prefill_end = end;  // every vector has come
  engine->Shutdown(/*drain=*/true);
  BenchResult result;
  result.batch = batch;
  const double prefill_s = std::chrono::duration<double>(prefill_end - start).count();
  const double decode_s = std::chrono::duration<double>(end - prefill_end).count();
  result.total_s = std::chrono::duration<double>(end - start).count();
  result.prefill_tokens_per_s = double(batch) * f.prompt_len / std::max(prefill_s, 1e-9);
  result.decode_tokens_per_s =
      f.gen_len > 1 && !f.embeddings ? double(batch) * (f.gen_len - 1) / std::max(decode_s, 1e-9) : 0.0;
  return result;
}

void RunBenchBatched(BenchBatchedFlags f) {
  if (f.prompt_len < 1) Fail("--prompt-len must be >= 1, got " + std::to_string(f.prompt_len));
  if (f.gen_len < 1) Fail("--gen-len must be >= 1, got " + std::to_string(f.gen_len));
  const std::vector<int> batches = ParseBatches(f.batches);
  // Checked before the benchmark runs, whose results would otherwise be lost.
  if (!f.json.empty()) {
    if (Status s = CheckOutputFile(f.json, "--json"); !s.ok()) Fail(s);
  }
  EngineFlags engine_flags;
  engine_flags.threads = f.threads;
  engine_flags.kv_type = f.kv_type;
  const EngineOptions options = EngineOptionsOrDie(engine_flags);
  LoadedModel loaded = LoadModelOrDie(f.model);
  f.embeddings = f.embeddings || !loaded.model->config().causal;
  const int context = f.prompt_len + (f.embeddings ? 0 : f.gen_len);
  if (context > loaded.model->config().n_ctx_train && loaded.model->config().n_ctx_train > 0) {
    Fail(std::string(f.embeddings ? "--prompt-len (" : "--prompt-len + --gen-len (") +
         std::to_string(context) + ") exceeds the model's context (" +
         std::to_string(loaded.model->config().n_ctx_train) + ")");
  }
  {  // Warm-up: page the weights in and start the threads.
    BenchBatchedFlags warm = f;
    warm.prompt_len = std::min(f.prompt_len, 16);
    warm.gen_len = 2;
    RunOne(loaded, warm, options, 1);
  }
  std::printf("model %s, P=%d, G=%d, %d threads, KV %s%s\n", f.model.c_str(), f.prompt_len,
              f.embeddings ? 0 : f.gen_len, options.threads, f.kv_type.c_str(),
              f.embeddings ? ", embeddings" : "");
  std::printf("%6s %16s %16s %10s\n", "B", "prefill tok/s", "decode tok/s", "total s");
  std::vector<BenchResult> results;
  for (int batch : batches) {
    BenchResult r = RunOne(loaded, f, options, batch);
    std::printf("%6d %16.1f %16.1f %10.3f\n", r.batch, r.prefill_tokens_per_s, r.decode_tokens_per_s,
                r.total_s);
    std::fflush(stdout);
    results.push_back(r);
  }
  if (!f.json.empty()) {
    nlohmann::json doc;
    doc["results"] = nlohmann::json::array();
    for (const BenchResult& r : results) {
      doc["results"].push_back({{"batch", r.batch},
                                {"prefill_tokens_per_s", r.prefill_tokens_per_s},
                                {"decode_tokens_per_s", r.decode_tokens_per_s},
                                {"total_s", r.total_s}});
    }
    WriteFlagFileOrDie(f.json, "--json", doc.dump(2) + "\n");
  }
}

}  // namespace

void RegisterBenchBatchedCommand(CLI::App& bench) {
  auto flags = std::make_shared<BenchBatchedFlags>();
  CLI::App* cmd =
      bench.add_subcommand("batched", "Engine throughput for batches of B sequences (P prompt + G new)");
  AddModelFileFlag(*cmd, flags->model);
  // At most 2^20 each, so that P + G cannot overflow (the model's context refuses most of these anyway).
  cmd->add_option("--prompt-len", flags->prompt_len, "Prompt tokens per sequence (P)")
      ->check(IntegerIn(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--gen-len", flags->gen_len, "New tokens per sequence (G)")
      ->check(IntegerIn(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--batches", flags->batches, "Batch sizes, comma separated")->capture_default_str();
  AddThreadsFlag(*cmd, flags->threads);
  cmd->add_option("--max-batch-tokens", flags->max_batch_tokens, "Rows per step at most (0: B*P, <= 8192)")
      ->check(IntegerIn(0, kMaxInt))
      ->capture_default_str();
  AddKvTypeFlag(*cmd, flags->kv_type);
  cmd->add_flag("--embeddings", flags->embeddings,
                "Embedding requests (prefill only, the model's pooling) instead of generation; implied for "
                "encoders (bert)");
  cmd->add_option("--json", flags->json, "Write the results as JSON to this file")->check(NotEmpty());
  cmd->callback([flags] { RunBenchBatched(*flags); });
}

}  // namespace lockstep::cli
