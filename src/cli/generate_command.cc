// `lockstep generate`: single-sequence text generation. The prompt is processed as one batch (prefill), then
// one token per step; text streams to stdout (or, with --ids, only the generated ids), timings go to stderr
// and optionally to a JSON file. Stops at end-of-generation tokens unless --ignore-eos, at -n tokens, or at a
// --stop string (which is not printed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "engine/sampler.h"
#include "gguf/gguf_file.h"
#include "model/local_kv.h"
#include "model/model.h"
#include "tensor/matmul_amx.h"
#include "tensor/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  int n_predict = 128;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int repeat_last_n = 64;
  int64_t seed = -1;
  bool ignore_eos = false;
  int threads = 0;
  bool ids = false;
  bool kv_f32 = false;
  std::string timings_json;
  std::vector<std::string> stops;
};

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<int32_t> ParsePromptIds(const std::string& text, int64_t n_vocab) {
  std::vector<int32_t> ids;
  std::string cleaned = text;
  std::replace(cleaned.begin(), cleaned.end(), ',', ' ');
  std::istringstream in(cleaned);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size()) Fail("--prompt-ids: '" + word + "' is not an integer token id");
    if (v < 0 || v >= n_vocab) {
      Fail("--prompt-ids: token id " + word + " is outside the vocabulary (0.." +
           std::to_string(n_vocab - 1) + ")");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) Fail("--prompt-ids: no token ids given");
  return ids;
}

// Runs the model over `tokens` at positions start.., asking for the last row's logits.
void RunStep(Model& model, const KvLayout& layout, LocalKv& kv, const std::vector<int32_t>& tokens,
             int32_t start, std::vector<float>& logits, ThreadPool& pool) {
  Batch batch;
  batch.sequences.push_back(kv.view());
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.rows.push_back({tokens[i], int32_t(start + i), 0, i + 1 == tokens.size()});
  }
  const Status status = model.Forward(batch, layout, logits, pool);
  if (!status.ok()) Fail(status);
}

class Output {
 public:
  Output(const Tokenizer* tokenizer, bool ids, std::vector<std::string> stops)
      : ids_(ids), stop_(std::move(stops)) {
    if (tokenizer != nullptr) detok_ = std::make_unique<IncrementalDetokenizer>(*tokenizer, false, true);
  }
  // Returns false when a stop string ended the output.
  bool Emit(int32_t token) {
    if (ids_) {
      std::printf("%s%d", first_ ? "" : " ", token);
      first_ = false;
      std::fflush(stdout);
      if (stop_.empty() || detok_ == nullptr) return true;
    }
    if (detok_ == nullptr) return true;
    const StopMatcher::Output out = stop_.Push(detok_->Push(token));
    if (!ids_) {
      std::fputs(out.text.c_str(), stdout);
      std::fflush(stdout);
    }
    return !out.stopped;
  }
  void Finish() {
    if (!ids_ && detok_ != nullptr && !stop_.stopped()) {
      std::fputs(stop_.Push(detok_->Flush()).text.c_str(), stdout);
      std::fputs(stop_.Flush().c_str(), stdout);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

 private:
  bool ids_;
  bool first_ = true;
  StopMatcher stop_;
  std::unique_ptr<IncrementalDetokenizer> detok_;
};

void RunGenerate(const GenerateFlags& f) {
  if (f.prompt.empty() == f.prompt_ids.empty()) Fail("give exactly one of -p/--prompt and --prompt-ids");
  if (f.n_predict < 0) Fail("-n must be >= 0");
  auto opened = GgufFile::Open(f.model);
  if (!opened.ok()) Fail(opened.status());
  std::shared_ptr<const GgufFile> file = std::move(opened).value();
  std::unique_ptr<Model> model = ValueOrDie(Model::Load(file));
  const ModelConfig& config = model->config();

  auto tokenizer_result = Tokenizer::FromGguf(*file);
  std::unique_ptr<Tokenizer> tokenizer;
  if (tokenizer_result.ok()) {
    tokenizer = std::move(tokenizer_result).value();
  } else if (!f.prompt.empty() || !f.ids) {
    Fail(tokenizer_result.status().WithContext(
        "tokenizer (needed for text; --prompt-ids with --ids works without)"));
  }
  std::vector<int32_t> prompt = f.prompt_ids.empty()
                                    ? ValueOrDie(tokenizer->Encode(f.prompt, tokenizer->add_bos(), true))
                                    : ParsePromptIds(f.prompt_ids, config.n_vocab);
  if (prompt.empty()) Fail("the prompt has no tokens");
  const int64_t total = int64_t(prompt.size()) + f.n_predict;
  if (total > config.n_ctx_train) {
    Fail("prompt (" + std::to_string(prompt.size()) + " tokens) + -n " + std::to_string(f.n_predict) +
         " exceeds the model's context length " + std::to_string(config.n_ctx_train));
  }

  SamplingParams params;
  params.temperature = f.temp;
  params.top_k = f.top_k;
  params.top_p = f.top_p;
  params.min_p = f.min_p;
  params.repetition_penalty = f.repeat_penalty;
  params.frequency_penalty = f.frequency_penalty;
  params.presence_penalty = f.presence_penalty;
  params.penalty_last_n = f.repeat_last_n;
  params.seed = f.seed >= 0 ? uint64_t(f.seed) : std::random_device{}();
  if (Status s = params.Validate(); !s.ok()) Fail(s);
  Sampler sampler(params);

  const int threads = ThreadsOrHardware(f.threads);
  ThreadPool pool(threads);
  const KvLayout layout = model->MakeKvLayout(f.kv_f32 ? KvDtype::kF32 : KvDtype::kF16);
  LocalKv kv(layout, total);
  std::vector<float> logits(config.n_vocab);
  std::vector<int32_t> history = prompt;
  Output output(tokenizer.get(), f.ids, f.stops);

  // Without a usable tokenizer (--prompt-ids --ids), stop at the metadata's EOS id if there is one.
  const int64_t fallback_eos = file->GetIntOr("tokenizer.ggml.eos_token_id", -1).ok()
                                   ? *file->GetIntOr("tokenizer.ggml.eos_token_id", -1)
                                   : -1;

  const auto t0 = Clock::now();
  RunStep(*model, layout, kv, prompt, 0, logits, pool);
  const double prompt_ms = MsSince(t0);
  const auto t1 = Clock::now();
  int generated = 0;
  for (int i = 0; i < f.n_predict; ++i) {
    if (i > 0) RunStep(*model, layout, kv, {history.back()}, int32_t(history.size() - 1), logits, pool);
    const int32_t token = sampler.Sample(logits, history).token;
    const bool eos = tokenizer != nullptr ? tokenizer->IsEndOfGeneration(token) : token == fallback_eos;
    if (eos && !f.ignore_eos) break;
    history.push_back(token);
    ++generated;
    if (!output.Emit(token)) break;
  }
  const double gen_ms = MsSince(t1);
  output.Finish();

  std::fprintf(stderr,
               "prompt: %zu tokens in %.1f ms (%.1f tok/s); generation: %d tokens in %.1f ms (%.1f tok/s); "
               "seed %llu, %d threads, kernels %s\n",
               prompt.size(), prompt_ms, prompt.size() * 1000.0 / std::max(prompt_ms, 1e-3), generated,
               gen_ms, generated * 1000.0 / std::max(gen_ms, 1e-3), (unsigned long long)params.seed, threads,
               MatMulPathName());
  if (!f.timings_json.empty()) {
    std::ofstream out(f.timings_json);
    out << "{\"prompt_tokens\": " << prompt.size() << ", \"prompt_ms\": " << prompt_ms
        << ", \"generated_tokens\": " << generated << ", \"generation_ms\": " << gen_ms << "}\n";
    if (!out) Fail("cannot write --timings-json file '" + f.timings_json + "'");
  }
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt with one sequence");
  cmd->add_option("-m,--model", f->model, "Model .gguf file")->required();
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (tokenized with the model's vocabulary)");
  cmd->add_option("--prompt-ids", f->prompt_ids,
                  "Prompt token ids, space separated, used exactly (no BOS added)");
  cmd->add_option("-n,--n-predict", f->n_predict, "Tokens to generate")->capture_default_str();
  cmd->add_option("--temp", f->temp, "Temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", f->top_k, "Top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", f->top_p, "Top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", f->min_p, "Min-p (0 = off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", f->repeat_penalty, "Repetition penalty (1 = off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", f->repeat_last_n, "Tokens the penalties look back (-1 = all)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", f->frequency_penalty, "Frequency penalty")->capture_default_str();
  cmd->add_option("--presence-penalty", f->presence_penalty, "Presence penalty")->capture_default_str();
  cmd->add_option("--seed", f->seed, "Sampling seed (default: random, printed on stderr)");
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Do not stop at end-of-generation tokens");
  cmd->add_option("-t,--threads", f->threads, "Threads (default: all cores)");
  cmd->add_flag("--ids", f->ids, "Print only the generated token ids, space separated");
  cmd->add_flag("--kv-f32", f->kv_f32, "Keep the KV cache in f32 (default f16)");
  cmd->add_option("--timings-json", f->timings_json, "Write timings as JSON to this file");
  cmd->add_option("--stop", f->stops, "Stop string (repeatable); not printed");
  cmd->callback([f] { RunGenerate(*f); });
}

}  // namespace lockstep::cli
