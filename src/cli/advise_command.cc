// `lockstep advise`: asks a lockstep server (--url) which way to send N questions of about M output tokens —
// one combined request, parallel requests or sequential ones — and prints the predicted wall time of each
// (GET /advisor: the server's engine fits its step time by batch rows and context from the steps it has
// run). --calibrate first runs a few short requests, alone and in parallel, so a fresh server has measured
// steps of several sizes (after one look at /advisor, so a server without it costs no requests).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/client_setup.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "client/advisor.h"
#include "client/fan_out.h"

namespace lockstep::cli {
namespace {

struct AdviseFlags {
  ClientFlags client;
  std::string model;
  int questions = 5;
  int tokens = 64;
  int prompt_tokens = 0;
  bool calibrate = false;
  bool json = false;
};

// Short fixed-length requests: one alone, then a few together, so the fit sees 1-row and multi-row steps.
void Calibrate(client::OpenAiClient& client, const std::string& model, int questions) {
  const int together = std::max(2, std::min(questions, 8));
  std::vector<client::ChatRequest> requests;
  for (int i = 0; i < together; ++i) {
    client::ChatRequest r;
    r.model = model;
    r.messages = {{"user", "Count from one to twenty, number " + std::to_string(i + 1) + "."}};
    r.max_tokens = 48;
    r.temperature = 0;
    r.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  client::CancellationToken token;
  for (const auto& batch : {std::vector<client::ChatRequest>{requests[0]}, requests}) {
    for (const client::ChatResult& r : client::RunFanOut(client, batch, 0, &token, {}, true)) {
      if (!r.status.ok()) Fail("calibration request failed: " + r.status.message());
    }
  }
}

void RunAdvise(const AdviseFlags& f) {
  if (f.client.urls.empty()) Fail("--url is required (a lockstep server; with several, the first is asked)");
  CheckUtf8OrDie(f.model, "--model-name");
  auto client = MakeClientOrDie(f.client);
  client::AdviceQuery query;
  query.questions = f.questions;
  query.tokens = f.tokens;
  query.prompt_tokens = f.prompt_tokens;
  client::CancellationToken token;
  auto advice = client::RunBlocking(client::FetchAdvice(*client, query, &token));
  if (f.calibrate) {
    // The advisor was asked first: a server without it (not lockstep) or a wrong key fails before the
    // calibration requests are spent on it.
    if (!advice.ok()) Fail(advice.status());
    Calibrate(*client, ModelOrFirstListed(*client, f.model), f.questions);
    advice = client::RunBlocking(client::FetchAdvice(*client, query, &token));
  }
  if (!advice.ok()) Fail(advice.status());
  if (f.json) {
    nlohmann::json modes = nlohmann::json::object();
    for (const client::ModeAdvice& m : advice->modes) {
      modes[m.name] = {{"wall_s", m.wall_s}, {"ttft_s", m.ttft_s}, {"steps", m.steps}};
    }
    std::printf("%s\n", nlohmann::json({{"questions", advice->questions},
                                        {"tokens", advice->tokens},
                                        {"prompt_tokens", advice->prompt_tokens},
                                        {"modes", modes},
                                        {"recommended", advice->recommended},
                                        {"reason", advice->reason},
                                        {"confident", advice->confident},
                                        {"note", advice->note}})
                            .dump(2)
                            .c_str());
  } else {
    std::printf("%s", client::FormatAdvice(*advice).c_str());
    if (!advice->confident && !f.calibrate) std::printf("(--calibrate runs a few short requests first)\n");
  }
  std::fflush(stdout);
}

}  // namespace

void RegisterAdviseCommand(CLI::App& app) {
  auto flags = std::make_shared<AdviseFlags>();
  CLI::App* cmd = app.add_subcommand(
      "advise", "Predict combined vs parallel vs sequential wall time on a lockstep server, and advise");
  AddClientFlags(cmd, &flags->client);
  cmd->get_option("--url")->description(
      "Server API root of a lockstep server, e.g. http://127.0.0.1:8080/v1; REQUIRED (or --url-file; with "
      "several, the first is asked)");
  AddModelNameFlag(*cmd, flags->model)->description("Model id for --calibrate (default: the first it lists)");
  cmd->add_option_function<std::string>(
         "--model",
         [flags](const std::string& name) {
           DeprecationNote("advise --model NAME", "--model-name NAME");
           flags->model = name;
         },
         "Deprecated: --model-name")
      ->group("");
  cmd->add_option("--questions", flags->questions, "Number of questions")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--tokens", flags->tokens, "Output tokens per answer")
      ->check(NumberIn(1))
      ->capture_default_str();
  cmd->add_option("--prompt-tokens", flags->prompt_tokens,
                  "Prompt tokens per question (default: the server's)")
      ->check(NumberIn(0));
  cmd->add_flag("--calibrate", flags->calibrate, "Run a few short requests first (for a fresh server)");
  cmd->add_flag("--json", flags->json, "Machine-readable output");
  cmd->callback([flags] { RunAdvise(*flags); });
}

}  // namespace lockstep::cli
