// `lockstep batch`: offline batch mode. Every line of the prompts file is one request (an empty line is
// refused); all are submitted at once to the continuous-batching engine. Prints one line per request in input
// order — its generated text (newlines and backslashes escaped as \n and \\ so each request stays on one
// line), or with --ids its generated token ids space separated (an ending EOS / stop token is not printed) —
// and per-request timings on stderr.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/engine_setup.h"
#include "cli/flag_checks.h"
#include "engine/engine.h"

namespace lockstep::cli {
namespace {

struct BatchFlags {
  std::string model;
  std::string prompts;
  std::string prompt_ids_file;
  int n_predict = 64;
  SamplingFlags sampling;
  bool ignore_eos = false;
  bool ids = false;
  std::vector<std::string> stops;
  EngineFlags engine;
};

std::string EscapeLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  TokenEvent last;
};

void RunBatch(const BatchFlags& f) {
  if (f.prompts.empty() == f.prompt_ids_file.empty())
    Fail("give exactly one of --prompts or --prompt-ids-file");
  if (f.n_predict < 1) Fail("-n must be >= 1, got " + std::to_string(f.n_predict));
  EngineOptions options = EngineOptionsOrDie(f.engine);
  LoadedModel loaded = LoadModelOrDie(f.model);
  const std::vector<std::vector<int32_t>> prompts =
      f.prompts.empty() ? ReadIdPromptsOrDie(f.prompt_ids_file, loaded.model->config().n_vocab)
                        : ReadTextPromptsOrDie(f.prompts, loaded.tokenizer.get());
  options.max_queue = int(prompts.size()) + 1;
  std::unique_ptr<Engine> engine = ValueOrDie(Engine::Create(loaded.model, loaded.tokenizer, options));
  const SamplingParams sampling =
      SamplingParamsOrDie(f.sampling, loaded.tokenizer.get());  // every request uses the same seed

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request request;
    request.prompt_ids = prompts[i];
    request.max_tokens = f.n_predict;
    request.ignore_eos = f.ignore_eos;
    request.stop = f.stops;
    request.sampling = sampling;
    auto handle = engine->Submit(std::move(request));
    if (!handle.ok()) Fail(handle.status().WithContext("prompt " + std::to_string(i + 1)));
    handles.push_back(std::move(handle).value());
  }
  std::vector<Outcome> outcomes(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    while (std::optional<TokenEvent> event = handles[i]->Next()) {
      Outcome& o = outcomes[i];
      o.text += event->text_delta;
      const bool ends_with_stop_token =
          event->stop_kind == StopKind::kEos || event->stop_kind == StopKind::kStopToken;
      if (event->token != kNoToken && !ends_with_stop_token) o.ids.push_back(event->token);
      if (event->last()) o.last = std::move(*event);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t generated = 0;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& o = outcomes[i];
    if (f.ids) {
      std::string line;
      for (size_t k = 0; k < o.ids.size(); ++k) line += (k ? " " : "") + std::to_string(o.ids[k]);
      std::printf("%s\n", line.c_str());
    } else {
      std::printf("%s\n", EscapeLine(o.text).c_str());
    }
    const RequestTiming& t = o.last.timing;
    generated += t.generated_tokens;
    std::fprintf(stderr,
                 "request %zu: prompt %d tokens, generated %d, finish %s, queue %.1f ms, ttft %.1f ms, "
                 "tpot %.2f ms, e2e %.1f ms, preemptions %d%s%s\n",
                 i + 1, t.prompt_tokens, t.generated_tokens, FinishReasonName(o.last.finish_reason),
                 t.queue_s * 1e3, t.ttft_s * 1e3, t.tpot_s * 1e3, t.e2e_s * 1e3, t.preemptions,
                 o.last.error.empty() ? "" : ", error: ", o.last.error.c_str());
  }
  std::fflush(stdout);
  const EngineStats stats = engine->Stats();
  std::fprintf(stderr,
               "batch: %zu requests, %lld tokens generated in %.3f s (%.1f tok/s), %lld steps, "
               "%lld preemptions, %d threads, seed %llu\n",
               outcomes.size(), (long long)generated, wall, generated / std::max(wall, 1e-9),
               (long long)stats.steps, (long long)stats.preemptions_total, engine->options().threads,
               (unsigned long long)sampling.seed);
  engine->Shutdown(/*drain=*/true);
  for (const Outcome& o : outcomes) {
    if (o.last.finish_reason == FinishReason::kError) Fail("a request failed: " + o.last.error);
  }
}

}  // namespace

void RegisterBatchCommand(CLI::App& app) {
  auto flags = std::make_shared<BatchFlags>();
  CLI::App* cmd = app.add_subcommand("batch", "Offline batch generation: one request per line, all at once");
  AddModelFileFlag(*cmd, flags->model);
  cmd->add_option("--prompts", flags->prompts,
                  "Text file: one prompt per line (an empty line is an error, named by its number)")
      ->check(NotEmpty());
  cmd->add_option("--prompt-ids-file", flags->prompt_ids_file,
                  "File: one prompt per line as token ids (an empty line is an error)")
      ->check(NotEmpty());
  cmd->add_option("-n,--n-predict", flags->n_predict, "New tokens per request at most")
      ->capture_default_str();
  AddSamplingFlags(*cmd, flags->sampling);
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_option("--stop", flags->stops, "Stop string (repeatable)");
  cmd->add_flag("--ids", flags->ids, "Print generated token ids instead of text");
  AddEngineFlags(*cmd, flags->engine);
  AddDraftFlags(*cmd, flags->engine.draft_max, &flags->engine.draft_max_seqs);
  cmd->callback([flags] { RunBatch(*flags); });
}

}  // namespace lockstep::cli
