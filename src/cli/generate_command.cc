// `lockstep generate`: text generation for one prompt, through the engine (one request, max_seqs 1: the same
// prefill, decode, sampling, EOS and stop handling as every other request). Text streams to stdout (or, with
// --ids, only the generated ids); timings go to stderr and optionally to a JSON file. Stops at
// end-of-generation tokens unless --ignore-eos, at -n tokens, or at a --stop string (which is not printed).
#include <algorithm>
#include <cstdio>
#include <memory>
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
#include "kv/saved_prefix.h"

namespace lockstep::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  std::string prompt_ids;
  int n_predict = 128;
  SamplingFlags sampling;
  bool ignore_eos = false;
  int threads = 0;
  bool ids = false;
  std::string kv_type = "f16";
  int draft_max = 0;
  std::string timings_json;
  std::vector<std::string> stops;
  std::vector<LoraFlag> lora;
  std::string prompt_cache;
};

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

// --prompt-cache (llama-cli's): the cached KV of an earlier run's prompt and reply, read into the engine's
// prefix cache before the request (a prompt that starts the same way computes only the rest) and written
// back after it. A file of another model is refused; a missing one is where the first run starts.
void RestorePromptCache(Engine& engine, const std::string& path, uint64_t fingerprint) {
  Result<SavedPrefix> read = ReadSavedPrefix(path);
  if (read.status().code() == StatusCode::kNotFound) return;
  SavedPrefix saved = ValueOrDie(std::move(read), "--prompt-cache");
  if (saved.model_fingerprint != fingerprint) {
    Fail("--prompt-cache: '" + path + "' was written for another model file");
  }
  const int32_t restored =
      ValueOrDie(engine.ImportPrefix(std::make_shared<const SavedPrefix>(std::move(saved))),
                 "--prompt-cache '" + path + "'");
  std::fprintf(stderr, "prompt cache: %d tokens restored from %s\n", restored, path.c_str());
}

void SavePromptCache(Engine& engine, const std::string& path, uint64_t fingerprint,
                     std::vector<int32_t> tokens) {
  SavedPrefix saved = ValueOrDie(engine.ExportPrefix(std::move(tokens)), "--prompt-cache");
  saved.model_fingerprint = fingerprint;
  if (Status s = WriteSavedPrefix(path, saved); !s.ok()) Fail(s.WithContext("--prompt-cache"));
  std::fprintf(stderr, "prompt cache: %zu tokens saved to %s\n", saved.tokens.size(), path.c_str());
}

void RunGenerate(GenerateFlags f) {
  // Checked before the model loads and the text is generated, which would otherwise be lost.
  if (!f.timings_json.empty()) {
    if (Status s = CheckOutputFile(f.timings_json, "--timings-json"); !s.ok()) Fail(s);
  }
  if (!f.prompt_cache.empty()) {
    if (Status s = CheckOutputFile(f.prompt_cache, "--prompt-cache"); !s.ok()) Fail(s);
  }
  std::string prompt_source = "-p/--prompt";  // for messages about the text
  if (!f.prompt_file.empty()) {
    if (!f.prompt.empty()) Fail("give one of -p/--prompt and -f/--file, not both");
    f.prompt = ReadFlagFileOrDie(f.prompt_file, "-f/--file");
    if (f.prompt.empty()) Fail("-f/--file: '" + f.prompt_file + "' is empty");
    prompt_source = "-f/--file '" + f.prompt_file + "'";
  }
  if (f.prompt.empty() == f.prompt_ids.empty()) {
    Fail("give exactly one of -p/--prompt, -f/--file and --prompt-ids");
  }
  // The tokenizer takes UTF-8 only: refused before the model loads, naming where the text came from.
  CheckUtf8OrDie(f.prompt, prompt_source);
  if (f.n_predict < 0) Fail("-n must be >= 0");
  LoadedModel loaded = LoadModelOrDie(f.model, LoraPaths(f.lora));
  const ModelConfig& config = loaded.model->config();
  if (loaded.tokenizer == nullptr && (!f.prompt.empty() || !f.ids)) {
    Fail(f.model +
         ": the model has no usable tokenizer (needed for text; --prompt-ids with --ids works "
         "without)");
  }
  const std::vector<int32_t> prompt =
      f.prompt_ids.empty() ? ValueOrDie(loaded.tokenizer->Encode(f.prompt, loaded.tokenizer->add_bos(),
                                                                 /*parse_special=*/true),
                                        prompt_source)
                           : ParsePromptIds(f.prompt_ids, config.n_vocab);
  if (prompt.empty()) Fail("the prompt has no tokens");
  const int64_t total = int64_t(prompt.size()) + f.n_predict;
  if (total > config.n_ctx_train) {
    Fail("prompt (" + std::to_string(prompt.size()) + " tokens) + -n " + std::to_string(f.n_predict) +
         " exceeds the model's context length " + std::to_string(config.n_ctx_train));
  }

  // One request, alone: a KV pool just big enough for it.
  EngineFlags engine_flags;
  engine_flags.threads = f.threads;
  engine_flags.max_seqs = 1;
  engine_flags.max_batch_tokens = int(std::max<size_t>(prompt.size(), 1));
  engine_flags.kv_tokens = total + 2 * 16;  // two spare blocks: admission keeps one free per request
  engine_flags.kv_type = f.kv_type;
  engine_flags.draft_max = f.draft_max;
  const EngineOptions options = EngineOptionsOrDie(engine_flags);
  std::unique_ptr<Engine> engine = ValueOrDie(Engine::Create(loaded.model, loaded.tokenizer, options));
  const uint64_t fingerprint =
      f.prompt_cache.empty() ? 0 : ValueOrDie(ModelFileFingerprint(f.model), "--prompt-cache");
  if (!f.prompt_cache.empty()) RestorePromptCache(*engine, f.prompt_cache, fingerprint);

  Request request;
  request.prompt_ids = prompt;
  const SamplingParams sampling = SamplingParamsOrDie(f.sampling, loaded.tokenizer.get());
  request.sampling = sampling;
  request.max_tokens = std::max(f.n_predict, 1);  // -n 0: prefill only; the one token is not shown
  request.ignore_eos = f.ignore_eos;
  request.stop = f.stops;
  for (const LoraFlag& adapter : f.lora) request.lora_scales.push_back(adapter.scale);
  if (loaded.tokenizer == nullptr && !f.ignore_eos) {
    // Without a usable tokenizer (--prompt-ids --ids) the engine knows no EOS: stop at the metadata's.
    const auto eos_id = loaded.file->GetIntOr("tokenizer.ggml.eos_token_id", -1);
    const int64_t eos = eos_id.ok() ? *eos_id : -1;
    if (eos >= 0 && eos < config.n_vocab) request.stop_token_ids.push_back(int32_t(eos));
  }
  if (!f.stops.empty() && loaded.tokenizer == nullptr) Fail("--stop needs a model with a tokenizer");
  std::shared_ptr<RequestHandle> handle = ValueOrDie(engine->Submit(std::move(request)));

  int generated = 0;
  std::vector<int32_t> sampled;
  bool first = true;
  TokenEvent last;
  while (std::optional<TokenEvent> event = handle->Next()) {
    const bool ends_with_stop_token =
        event->stop_kind == StopKind::kEos || event->stop_kind == StopKind::kStopToken;
    const bool shown = f.n_predict > 0 && event->token != kNoToken && !ends_with_stop_token;
    if (event->token != kNoToken) sampled.push_back(event->token);
    if (shown) {
      ++generated;
      if (f.ids) {
        std::printf("%s%d", first ? "" : " ", event->token);
        first = false;
      }
    }
    if (!f.ids && f.n_predict > 0) std::fputs(event->text_delta.c_str(), stdout);
    std::fflush(stdout);
    if (event->last()) last = std::move(*event);
  }
  std::printf("\n");
  std::fflush(stdout);
  const EngineStats stats = engine->Stats();
  if (!f.prompt_cache.empty() && last.finish_reason != FinishReason::kError) {
    std::vector<int32_t> tokens = prompt;  // the prompt and every sampled token: what the KV holds
    tokens.insert(tokens.end(), sampled.begin(), sampled.end());
    SavePromptCache(*engine, f.prompt_cache, fingerprint, std::move(tokens));
  }
  engine->Shutdown(/*drain=*/true);
  if (last.finish_reason == FinishReason::kError) Fail("generation failed: " + last.error);

  // prompt: submit to the first token (the prefill and one sampling); generation: the tokens after the
  // first over the time after it (the decode steps).
  const RequestTiming& t = last.timing;
  const double prompt_ms = t.ttft_s * 1e3;
  const double gen_ms = f.n_predict > 0 ? (t.e2e_s - t.ttft_s) * 1e3 : 0.0;
  std::fprintf(stderr,
               "prompt: %zu tokens in %.1f ms (%.1f tok/s); generation: %d tokens in %.1f ms (%.1f tok/s); "
               "seed %llu, %d threads, kernels %s, KV %s\n",
               prompt.size(), prompt_ms, prompt.size() * 1000.0 / std::max(prompt_ms, 1e-3), generated,
               gen_ms, std::max(generated - 1, 0) * 1000.0 / std::max(gen_ms, 1e-3),
               (unsigned long long)sampling.seed, options.threads,
               std::string(loaded.model->kernels().name()).c_str(), KvDtypeName(options.kv_dtype));
  if (f.draft_max > 0) {
    std::fprintf(stderr, "drafts: %lld tokens drafted, %lld accepted; %lld steps\n",
                 (long long)stats.draft_tokens_total, (long long)stats.draft_accepted_total,
                 (long long)stats.steps);
  }
  if (!f.timings_json.empty()) {
    std::ostringstream timings;
    timings << "{\"prompt_tokens\": " << prompt.size() << ", \"prompt_ms\": " << prompt_ms
            << ", \"generated_tokens\": " << generated << ", \"generation_ms\": " << gen_ms
            << ", \"steps\": " << stats.steps << ", \"draft_tokens\": " << stats.draft_tokens_total
            << ", \"draft_accepted\": " << stats.draft_accepted_total << "}\n";
    WriteFlagFileOrDie(f.timings_json, "--timings-json", timings.str());
  }
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd =
      app.add_subcommand("generate", "Generate text from a prompt (one request through the engine)");
  AddModelFileFlag(*cmd, f->model);
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (tokenized with the model's vocabulary)");
  cmd->add_option("-f,--file", f->prompt_file, "Prompt text from this file, exactly as it is")
      ->type_name("FILE")
      ->check(NotEmpty());
  cmd->add_option("--prompt-ids", f->prompt_ids,
                  "Prompt token ids, space separated, used exactly (no BOS added)");
  cmd->add_option("-n,--n-predict", f->n_predict, "Tokens to generate")->capture_default_str();
  AddSamplingFlags(*cmd, f->sampling);
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Do not stop at end-of-generation tokens");
  AddThreadsFlag(*cmd, f->threads);
  cmd->add_flag("--ids", f->ids, "Print only the generated token ids, space separated");
  AddKvTypeFlag(*cmd, f->kv_type);
  AddDraftFlags(*cmd, f->draft_max, nullptr);
  AddLoraFlags(*cmd, f->lora);
  cmd->add_flag_callback(
         "--kv-f32",
         [f] {
           DeprecationNote("--kv-f32", "--kv-type f32");
           f->kv_type = "f32";
         },
         "Deprecated: --kv-type f32")
      ->group("");
  cmd->add_option("--timings-json", f->timings_json, "Write timings as JSON to this file")->check(NotEmpty());
  cmd->add_option("--stop", f->stops, "Stop string (repeatable); not printed");
  cmd->add_option("--prompt-cache", f->prompt_cache,
                  "File of cached KV (llama-cli's): read before the prompt, when it exists, so that a prompt "
                  "starting with the same tokens computes only the rest; written after the reply")
      ->check(NotEmpty());
  cmd->callback([f] { RunGenerate(*f); });
}

}  // namespace lockstep::cli
