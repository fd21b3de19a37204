// decode_bench: batch-1 decode and 512-token prefill throughput of Model::Forward on one model file.
//
//   decode_bench MODEL.gguf [--threads N] [--decode N] [--prefill N] [--reps N] [--kv f16|f32|q8_0]
//                [--recurrence-level LEVEL]
//   (or LOCKSTEP_BENCH_MODEL=MODEL.gguf decode_bench)
//
// Decode: N tokens one row per step from an empty context (like llama-bench tg). Prefill: N tokens as one
// batch, logits for the last row only (like llama-bench pp). Each is run --reps times after a warm-up; the
// median is reported, and the best rep (decode_best, prefill_best: on a shared, noisy machine the best is
// the closer estimate of what the code can do). Prints one JSON object:
//   {"model", "type", "threads", "decode_tokens", "decode_tokens_per_s", "prefill_tokens",
//   "prefill_tokens_per_s", "decode_best", "prefill_best", "load_ms", "kernels"}
// load_ms: Model::Load, which repacks the quantized matrices (the file is mmap'd: a cold page cache adds).
// kernels: the CPU level whose kernels ran (tensor/cpu_level.h, e.g. "avx512-vnni"; LOCKSTEP_CPU forces one).
// --recurrence-level LEVEL (models with recurrent layers, qwen35): the model is loaded a second time with the
// same kernels but LEVEL's delta rule (tensor/delta_rule.h, e.g. scalar), the two run alternately rep by
// rep, and the JSON gains "recurrence": {"level", "decode_tokens_per_s", "prefill_tokens_per_s",
// "decode_best", "prefill_best"} for that second model: the recurrence's kernel speedup, side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/local_kv.h"
#include "model/model.h"
#include "tensor/cpu_features.h"
#include "tensor/kernels.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "decode_bench: %s\n", message.c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds for decoding `n` tokens one per step from position 0.
double Decode(Model& model, const KvLayout& layout, int n, ThreadPool& pool) {
  LocalKv kv(layout, n);
  std::vector<float> logits(model.config().n_vocab);
  Batch batch;
  batch.sequences.push_back(kv.view());
  batch.rows.resize(1);
  int32_t token = 1;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    batch.rows[0] = {token, i, 0, true};
    if (Status s = model.Forward(batch, layout, logits, pool); !s.ok()) Die(s.ToString());
    token = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds for one prefill batch of `n` tokens.
double Prefill(Model& model, const KvLayout& layout, int n, ThreadPool& pool) {
  LocalKv kv(layout, n);
  std::vector<float> logits(model.config().n_vocab);
  Batch batch;
  batch.sequences.push_back(kv.view());
  const int32_t vocab = int32_t(model.config().n_vocab);
  for (int i = 0; i < n; ++i) batch.rows.push_back({int32_t((i * 7919 + 13) % vocab), i, 0, i == n - 1});
  const auto t0 = Clock::now();
  if (Status s = model.Forward(batch, layout, logits, pool); !s.ok()) Die(s.ToString());
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int Main(int argc, char** argv) {
  std::string path = std::getenv("LOCKSTEP_BENCH_MODEL") ? std::getenv("LOCKSTEP_BENCH_MODEL") : "";
  int threads = 2, decode_tokens = 128, prefill_tokens = 512, reps = 3;
  KvDtype kv_dtype = KvDtype::kF16;
  std::string recurrence_level;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--threads" || a == "-t")
      threads = std::atoi(next().c_str());
    else if (a == "--decode")
      decode_tokens = std::atoi(next().c_str());
    else if (a == "--prefill")
      prefill_tokens = std::atoi(next().c_str());
    else if (a == "--reps")
      reps = std::atoi(next().c_str());
    else if (a == "--kv") {
      const std::string name = next();
      const std::optional<KvDtype> dtype = ParseKvDtype(name);
      if (!dtype) Die("--kv must be f16, f32 or q8_0, got '" + name + "'");
      kv_dtype = *dtype;
    } else if (a == "--recurrence-level") {
      recurrence_level = next();
    } else if (!a.empty() && a[0] != '-')
      path = a;
    else
      Die("unknown flag " + a);
  }
  if (path.empty()) Die("usage: decode_bench MODEL.gguf [--threads N] [--decode N] [--prefill N] [--reps N]");
  if (threads < 1 || decode_tokens < 1 || prefill_tokens < 1 || reps < 1) Die("counts must be >= 1");
  auto file = GgufFile::Open(path);
  if (!file.ok()) Die(file.status().ToString());
  std::shared_ptr<const GgufFile> shared = std::move(file).value();
  const auto load_start = Clock::now();
  auto loaded = Model::Load(shared);
  if (!loaded.ok()) Die(loaded.status().ToString());
  const double load_ms = 1e3 * std::chrono::duration<double>(Clock::now() - load_start).count();
  Model& model = **loaded;
  // The second model: the same kernels but another level's delta rule.
  Kernels mixed = model.kernels();
  std::unique_ptr<Model> other;
  if (!recurrence_level.empty()) {
    const std::optional<CpuLevel> level = ParseCpuLevel(recurrence_level);
    if (!level) Die("--recurrence-level: unknown CPU level '" + recurrence_level + "'");
    auto k = KernelsForLevel(*level, ProbeCpuFeatures());
    if (!k.ok()) Die(k.status().ToString());
    mixed.recurrent = k->recurrent;
    auto second = Model::Load(shared, {.kernels = &mixed});
    if (!second.ok()) Die(second.status().ToString());
    other = std::move(second).value();
  }
  const GgufTensorInfo* q = shared->FindTensor("blk.0.attn_q.weight");
  if (q == nullptr) q = shared->FindTensor("blk.0.attn_qkv.weight");  // phi3, qwen35's recurrent layers
  const std::string type = q ? std::string(TensorTypeName(q->type)) : "?";
  if (decode_tokens + 0 > model.config().n_ctx_train || prefill_tokens > model.config().n_ctx_train) {
    Die("token counts exceed the model's context length");
  }

  ThreadPool pool(threads);
  const KvLayout layout = model.MakeKvLayout(kv_dtype);
  Decode(model, layout, std::min(decode_tokens, 16), pool);  // warm-up: page in weights, grow scratch
  Prefill(model, layout, std::min(prefill_tokens, 64), pool);
  if (other != nullptr) {
    Decode(*other, layout, std::min(decode_tokens, 16), pool);
    Prefill(*other, layout, std::min(prefill_tokens, 64), pool);
  }
  std::vector<double> decode_rates, prefill_rates, other_decode, other_prefill;
  for (int r = 0; r < reps; ++r) {
    decode_rates.push_back(decode_tokens / Decode(model, layout, decode_tokens, pool));
    prefill_rates.push_back(prefill_tokens / Prefill(model, layout, prefill_tokens, pool));
    if (other == nullptr) continue;
    other_decode.push_back(decode_tokens / Decode(*other, layout, decode_tokens, pool));
    other_prefill.push_back(prefill_tokens / Prefill(*other, layout, prefill_tokens, pool));
  }
  std::string recurrence;
  if (other != nullptr) {
    char buffer[256];
    std::snprintf(buffer, sizeof(buffer),
                  ", \"recurrence\": {\"level\": \"%s\", \"decode_tokens_per_s\": %.2f, "
                  "\"prefill_tokens_per_s\": %.2f, \"decode_best\": %.2f, \"prefill_best\": %.2f}",
                  recurrence_level.c_str(), Median(other_decode), Median(other_prefill),
                  *std::max_element(other_decode.begin(), other_decode.end()),
                  *std::max_element(other_prefill.begin(), other_prefill.end()));
    recurrence = buffer;
  }
  const std::string name = path.substr(path.find_last_of('/') + 1);
  std::printf(
      "{\"model\": \"%s\", \"type\": \"%s\", \"threads\": %d, \"decode_tokens\": %d, "
      "\"decode_tokens_per_s\": %.2f, "
      "\"prefill_tokens\": %d, \"prefill_tokens_per_s\": %.2f, \"decode_best\": %.2f, \"prefill_best\": "
      "%.2f, "
      "\"load_ms\": %.1f, \"kernels\": \"%s\"%s}\n",
      name.c_str(), type.c_str(), threads, decode_tokens, Median(decode_rates), prefill_tokens,
      Median(prefill_rates), *std::max_element(decode_rates.begin(), decode_rates.end()),
      *std::max_element(prefill_rates.begin(), prefill_rates.end()), load_ms,
      std::string(model.kernels().name()).c_str(), recurrence.c_str());
  return 0;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) { return lockstep::Main(argc, argv); }
