// `lockstep perplexity`: a model's perplexity over a text file, measured as llama.cpp's llama-perplexity
// measures it (eval/perplexity.h: chunks of -c tokens, BOS first, the second half of each chunk scored), so
// that a quantized file can be judged against its original, or lockstep against llama.cpp on one file. The
// chunks run as parallel sequences in the engine. Prints each chunk's running estimate like llama-perplexity,
// then the final estimate; --json writes the figures as JSON.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file_util.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/engine_setup.h"
#include "cli/flag_checks.h"
#include "eval/perplexity.h"

namespace lockstep::cli {
namespace {

struct PerplexityFlags {
  std::string model;
  std::string file;
  int context = 512;
  int chunks = 0;
  std::string json;
  EngineFlags engine;
};

void RunPerplexity(const PerplexityFlags& f) {
  EngineOptions options = EngineOptionsOrDie(f.engine);
  // Checked before the model loads and the text is scored, which would otherwise be lost.
  if (!f.json.empty()) {
    if (Status s = CheckOutputFile(f.json, "--json"); !s.ok()) Fail(s);
  }
  const std::string text = ReadFlagFileOrDie(f.file, "-f/--file");
  LoadedModel loaded = LoadModelOrDie(f.model);
  if (loaded.tokenizer == nullptr)
    Fail("perplexity needs the model's vocabulary, and " + f.model + " has none");
  const Tokenizer& tokenizer = *loaded.tokenizer;
  auto encoded = tokenizer.Encode(text, tokenizer.add_bos(), /*parse_special=*/false);
  if (!encoded.ok()) Fail(encoded.status().WithContext("-f/--file '" + f.file + "'"));
  const std::vector<int32_t>& tokens = *encoded;
  PerplexityOptions measure;
  measure.context = f.context;
  measure.max_chunks = f.chunks;
  measure.bos = tokenizer.add_bos() ? tokenizer.bos_id() : -1;
  const int64_t chunks = PerplexityChunks(tokens.size(), measure);
  options.max_queue = int(std::min<int64_t>(chunks, INT32_MAX - 1)) + 1;
  std::unique_ptr<Engine> engine = ValueOrDie(Engine::Create(loaded.model, loaded.tokenizer, options));
  std::fprintf(
      stderr, "perplexity: %zu tokens, %lld chunks of %d (scoring the last %d of each), %d threads\n",
      tokens.size(), (long long)chunks, f.context, f.context - 1 - f.context / 2, engine->options().threads);
  auto measured = MeasurePerplexity(*engine, tokens, measure);
  engine->Shutdown(/*drain=*/true);
  if (!measured.ok()) Fail(measured.status().WithContext("-f/--file '" + f.file + "'"));
  const PerplexityResult& r = *measured;
  for (size_t i = 0; i < r.running.size(); ++i) std::printf("[%zu]%.4f,", i + 1, r.running[i]);
  std::printf("\nFinal estimate: PPL over %d chunks for n_ctx=%d = %.4f +/- %.5f\n", r.chunks, f.context,
              r.ppl, r.ppl_error);
  std::fflush(stdout);
  std::fprintf(stderr, "perplexity: %lld tokens scored in %.2f s (%.1f prompt tok/s)\n", (long long)r.scored,
               r.seconds, double(r.chunks) * f.context / std::max(r.seconds, 1e-9));
  if (!f.json.empty()) {
    const nlohmann::json out = {
        {"model", f.model},          {"file", f.file}, {"n_ctx", f.context},       {"chunks", r.chunks},
        {"tokens_scored", r.scored}, {"ppl", r.ppl},   {"ppl_error", r.ppl_error}, {"running", r.running},
        {"seconds", r.seconds}};
    WriteFlagFileOrDie(f.json, "--json", out.dump(2) + "\n");
  }
}

}  // namespace

void RegisterPerplexityCommand(CLI::App& app) {
  auto flags = std::make_shared<PerplexityFlags>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "A model's perplexity over a text file, measured as llama.cpp's llama-perplexity does");
  AddModelFileFlag(*cmd, flags->model);
  cmd->add_option("-f,--file", flags->file, "Text file to score (\"-\": standard input)")->required();
  cmd->add_option("-c,--ctx-size", flags->context, "Tokens per chunk (the second half of each is scored)")
      ->capture_default_str()
      ->check(CLI::Range(4, 1 << 20));
  cmd->add_option("--chunks", flags->chunks, "Score at most this many chunks (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--json", flags->json, "Also write the figures to this JSON file")->check(NotEmpty());
  AddEngineFlags(*cmd, flags->engine);
  cmd->callback([flags] { RunPerplexity(*flags); });
}

}  // namespace lockstep::cli
