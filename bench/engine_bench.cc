// engine_bench: the "seed scenario" at engine level — why batching pays. On one model (default
// /tmp/smollm2-q8.gguf, made by `lockstep make-model --shape smollm2-135m --type q8_0 --vocab-from
// ../shared/testdata/vocab/ggml-vocab-llama-spm.gguf -o /tmp/smollm2-q8.gguf`), greedy, EOS ignored:
//   single:     1 request × 1000 new tokens
//   at_once:    5 requests × 200 new tokens, submitted together
//   sequential: 5 requests × 200 new tokens, one after another
// Prints a JSON report: wall seconds of each and the ratios sequential / at_once and single / at_once.
// Usage: engine_bench [--model PATH] [--threads N] [--prompt-len P] [--json FILE]
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

Request MakeRequest(int prompt_len, int max_tokens, uint64_t seed, int64_t n_vocab,
                    const Tokenizer* tokenizer) {
  return GreedyRequest(RandomPrompt(prompt_len, seed, n_vocab, tokenizer), max_tokens);
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) {
  using namespace lockstep;
  using namespace lockstep::bench;
  std::string model_path = "/tmp/smollm2-q8.gguf";
  std::string json_path;
  int threads = 2;
  int prompt_len = 32;
  CLI::App app{"engine_bench: 1x1000 vs 5x200 tokens together vs one after another"};
  AddCommonOptions(app, model_path, threads, json_path);
  app.add_option("--prompt-len", prompt_len)->check(CLI::Range(1, 1 << 20))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::shared_ptr<const GgufFile> file = OrDie(GgufFile::Open(model_path));
  std::shared_ptr<Model> model = OrDie(Model::Load(file));
  std::shared_ptr<const Tokenizer> tokenizer;
  if (auto t = Tokenizer::FromGguf(*file); t.ok()) tokenizer = std::move(t).value();
  EngineOptions options;
  options.threads = threads;
  options.max_seqs = 8;
  options.kv_tokens = 8 * (prompt_len + 1000 + 16);
  std::unique_ptr<Engine> engine = OrDie(Engine::Create(model, tokenizer, options));
  const int64_t n_vocab = model->config().n_vocab;

  RunTogether(*engine, {MakeRequest(prompt_len, 8, 99, n_vocab, tokenizer.get())});  // warm-up

  const Outcome single = RunTogether(*engine, {MakeRequest(prompt_len, 1000, 1, n_vocab, tokenizer.get())});
  std::vector<Request> five;
  for (int i = 0; i < 5; ++i)
    five.push_back(MakeRequest(prompt_len, 200, 10 + uint64_t(i), n_vocab, tokenizer.get()));
  const Outcome together = RunTogether(*engine, five);
  double sequential_s = 0;
  int64_t sequential_tokens = 0;
  for (const Request& r : five) {
    const Outcome one = RunTogether(*engine, {r});
    sequential_s += one.wall_s;
    sequential_tokens += one.generated();
  }
  const double single_s = single.wall_s, together_s = together.wall_s;
  const int64_t single_tokens = single.generated(), together_tokens = together.generated();

  nlohmann::json report = {
      {"model", model_path},
      {"threads", threads},
      {"prompt_len", prompt_len},
      {"single_1x1000",
       {{"wall_s", single_s}, {"tokens", single_tokens}, {"tokens_per_s", single_tokens / single_s}}},
      {"at_once_5x200",
       {{"wall_s", together_s}, {"tokens", together_tokens}, {"tokens_per_s", together_tokens / together_s}}},
      {"sequential_5x200",
       {{"wall_s", sequential_s},
        {"tokens", sequential_tokens},
        {"tokens_per_s", sequential_tokens / sequential_s}}},
      {"ratio_sequential_over_at_once", sequential_s / together_s},
      {"ratio_single_over_at_once", single_s / together_s},
  };
  WriteReport(report.dump(2), json_path);
  engine->Shutdown(/*drain=*/true);
  return 0;
}
