// `lockstep bench serve`: a serving load test against a server (--url) or a lockstep server started
// in-process
// (-m MODEL): open-loop arrivals (--rate, --burstiness) or fixed --concurrency; random prompts (--prompt-len
// L[:SPREAD], --output-len L[:SPREAD]) or a JSONL --dataset (format in client/bench_workload.h and
// docs/client.md). Prints the Markdown summary; writes result.json, result.md, latency_cdf.svg,
// throughput.svg.
#include <unistd.h>

#include <cstdio>
#include <limits>

#include "base/file_util.h"
#include "cli/cli_util.h"
#include "cli/client_setup.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "client/bench_conversation.h"
#include "client/bench_serve.h"
#include "client/fan_out.h"

namespace lockstep::cli {
namespace {

struct ServeFlags {
  ClientFlags client;
  std::string model_path, model, dataset, slo;
  double rate = 0;
  int concurrency = 0;
  int requests = 100;
  std::string prompt_len = "128";
  std::string output_len = "128";
  double burstiness = 1;
  int warmup = 1;
  std::string out = "bench-serve";
  bool no_ignore_eos = false;
  uint64_t seed = 0;
  int threads = 0;
  client::ConversationOptions chat;  // --multi-turn N (conversations; 0 = off)
};

void DrawProgress(int done, int total) {
  const int width = 40;
  const int filled = total > 0 ? done * width / total : width;
  std::fprintf(stderr, "\r[%s%s] %d/%d", std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

// --prompt-len counts tokens as the server's tokenizer does (its POST /tokenize). A server without that route
// gets prompts of as many words, with one warning (*counted turns false).
std::string PromptOfTokens(const client::OpenAiClient& http, int tokens, std::mt19937_64& rng,
                           bool* counted) {
  if (*counted) {
    auto prompt = client::RandomPromptOfTokens(tokens, rng, [&](const std::string& text) {
      return client::RunBlocking(http.CountTokens(text, nullptr));
    });
    if (prompt.ok()) return *prompt;
    std::fprintf(stderr,
                 "lockstep: warning: cannot count tokens on the server (%s); --prompt-len counts words from "
                 "here on (about one token each on most vocabularies)\n",
                 prompt.status().message().c_str());
    *counted = false;
  }
  return client::RandomPrompt(tokens, rng);
}

void RunServeCommand(ServeFlags f) {
  ClientModelFlags(f.client.urls.empty() ? "" : f.client.urls.front(), &f.model_path, &f.model);
  if (f.client.urls.empty() == f.model_path.empty()) Fail("give exactly one of --url URL or -m MODEL");
  if (f.rate > 0 && f.concurrency > 0) Fail("give at most one of --rate and --concurrency");
  if (!(f.burstiness > 0)) Fail("--burstiness must be positive");
  CheckUtf8OrDie(f.model, "--model-name");
  // Checked before a server is reached or started and the load test runs.
  if (Status s = CheckOutputDirectory(f.out, "--out"); !s.ok()) Fail(s);
  client::ServeOptions options;
  options.rate = f.rate;
  options.concurrency = f.concurrency;
  options.burstiness = f.burstiness;
  options.warmup = f.warmup;
  options.ignore_eos = !f.no_ignore_eos;
  options.seed = f.seed;
  if (!f.slo.empty()) {
    if (Status s = client::ParseSlo(f.slo, &options); !s.ok()) Fail(s);
  }
  const auto prompt = ValueOrDie(client::ParseLengthSpec(f.prompt_len, "--prompt-len"));
  const auto output = ValueOrDie(client::ParseLengthSpec(f.output_len, "--output-len"));
  std::mt19937_64 rng(f.seed);
  // The dataset is read before a server is reached or started, so a bad file costs nothing.
  const std::vector<client::WorkItem> dataset = f.dataset.empty()
                                                    ? std::vector<client::WorkItem>()
                                                    : ValueOrDie(client::LoadDataset(f.dataset, output, rng));
  BenchTarget target = ConnectBenchTargetOrDie(f.client, f.model_path, f.threads, f.model);
  std::vector<client::WorkItem> work;
  bool counted = true;
  if (!f.dataset.empty()) {
    for (int i = 0; i < f.requests; ++i) work.push_back(dataset[i % dataset.size()]);
  } else {
    for (int i = 0; i < f.requests; ++i) {
      client::WorkItem w;
      w.messages = {
          {"user", PromptOfTokens(*target.client, client::SampleLength(prompt, rng), rng, &counted)}};
      w.max_tokens = client::SampleLength(output, rng);
      work.push_back(std::move(w));
    }
  }
  options.server = target.server;
  options.model = target.model;
  client::ServeProgressFn progress;
  if (isatty(STDERR_FILENO)) progress = DrawProgress;
  client::CancellationToken token;
  client::ConversationOptions chat = f.chat;
  chat.output_len = output.length;
  auto report = chat.conversations > 0
                    ? client::RunConversations(*target.client, chat, options, &token, progress)
                    : client::RunServe(*target.client, work, options, &token, progress);
  if (!report.ok()) Fail(report.status());
  if (Status s = client::WriteServeOutputs(*report, f.out); !s.ok()) Fail(s);
  std::printf("%s\nWrote %s/result.json, result.md, latency_cdf.svg, throughput.svg%s\n",
              client::ServeMarkdown(*report).c_str(), f.out.c_str(),
              chat.conversations > 0 ? ", turns.svg" : "");
  if (report->failed > 0) {
    for (const auto& r : report->records) {
      if (!r.ok) {
        std::fprintf(stderr, "lockstep: %d requests failed; first error: %s\n", report->failed,
                     r.error.c_str());
        break;
      }
    }
    std::exit(1);
  }
}

}  // namespace

void RegisterBenchServeCommand(CLI::App& bench) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd =
      bench.add_subcommand("serve", "Serving load test: latency percentiles, throughput, goodput");
  AddClientFlags(cmd, &flags->client);
  cmd->get_option("--url")->description(
      "Server API root, e.g. http://127.0.0.1:8080/v1 (a bare host gets /v1); give it or -m FILE");
  AddModelFileFlag(*cmd, flags->model_path, "GGUF model file: start a lockstep server in-process (or --url)",
                   /*required=*/false);
  AddModelNameFlag(*cmd, flags->model);
  AddDeprecatedModelPathFlag(*cmd, flags->model_path);
  cmd->add_option("--rate", flags->rate,
                  "Request rate (req/s) with Poisson/gamma arrivals (default: all at once)")
      ->check(NumberIn(0));
  cmd->add_option("--concurrency", flags->concurrency, "Fixed number of requests in flight (closed loop)")
      ->check(NumberIn(0));
  cmd->add_option("--requests", flags->requests, "Number of measured requests")
      ->check(NumberIn(1))
      ->capture_default_str();
  cmd->add_option("--prompt-len", flags->prompt_len,
                  "Random prompt length in tokens (counted by the server's POST /tokenize): L or L:SPREAD");
  cmd->add_option("--output-len", flags->output_len, "Output tokens per request: L or L:SPREAD");
  cmd->add_option("--dataset", flags->dataset, "JSONL requests: {\"prompt\"|\"messages\", \"output_len\"?}")
      ->check(NotEmpty());
  cmd->add_option("--burstiness", flags->burstiness, "Gamma shape of arrival gaps (1 = Poisson)")
      ->check(NumberAbove(0))
      ->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "Warm-up requests (not measured)")
      ->check(NumberIn(0))
      ->capture_default_str();
  cmd->add_option("--slo", flags->slo, "Goodput SLOs in ms, e.g. ttft=500,tpot=50")->check(NotEmpty());
  cmd->add_option("--out", flags->out, "Output directory");
  cmd->add_flag("--no-ignore-eos", flags->no_ignore_eos, "Do not ask for fixed output lengths (ignore_eos)");
  cmd->add_option("--seed", flags->seed, "Seed for prompts and arrivals")
      ->check(IntegerIn(0, std::numeric_limits<uint64_t>::max()));
  AddThreadsFlag(*cmd, flags->threads);
  flags->chat.conversations = 0;
  cmd->add_option(
         "--multi-turn", flags->chat.conversations,
         "Multi-turn chat: N conversations at once, each turn re-sending the history (then --requests, "
         "--rate and --prompt-len do not apply; --output-len is each reply's length)")
      ->check(NumberIn(0));
  cmd->add_option("--turns", flags->chat.turns, "Multi-turn: turns per conversation")
      ->capture_default_str()
      ->check(NumberIn(1));
  cmd->add_option("--system-words", flags->chat.system_words, "Multi-turn: words of the shared system prompt")
      ->capture_default_str();
  cmd->add_option("--user-words", flags->chat.user_words, "Multi-turn: words of each user message")
      ->capture_default_str();
  cmd->callback([flags] { RunServeCommand(*flags); });
}

}  // namespace lockstep::cli
