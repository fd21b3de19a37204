// `lockstep ask`: fans questions out to any OpenAI-compatible server as independent streamed chat requests
// (at most --concurrency in flight), then prints the answers in the original order with time to first token,
// tokens and duration, and the total wall time. --split turns one combined prompt into questions (shared
// instruction kept as a preamble); --dry-run shows the split without sending. Ctrl-C cancels every request.
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/client_setup.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "client/advisor.h"
#include "client/fan_out.h"
#include "text/question_splitter.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;

struct AskFlags {
  ClientFlags client;
  std::string model;
  std::vector<std::string> questions;
  std::string file;
  std::string split;
  int concurrency = 0;
  int max_tokens = 256;
  double temperature = 0;
  bool temperature_given = false;
  bool json = false;
  bool dry_run = false;
  bool verbose = false;
};

// The questions and shared preamble from whichever input flag was given.
text::SplitResult GatherQuestions(const AskFlags& f) {
  const int sources = !f.questions.empty() + !f.file.empty() + !f.split.empty();
  if (sources != 1) Fail("give exactly one of -q QUESTION..., --file FILE or --split TEXT|-");
  text::SplitResult r;
  if (!f.questions.empty()) {
    r.kind = "flags";
    r.questions = f.questions;
  } else if (!f.file.empty()) {
    r.kind = "file";
    for (std::string& line : SplitLines(ReadFlagFileOrDie(f.file, "--file"))) {
      if (!IsBlank(line)) r.questions.push_back(std::move(line));
    }
  } else {
    r = text::SplitQuestions(f.split == "-" ? ReadFlagFileOrDie("-", "--split") : f.split);
  }
  if (r.questions.empty()) Fail("no questions given (the input is empty)");
  // Each goes into a JSON request, which holds UTF-8 only.
  const std::string source = !f.questions.empty() ? "-q"
                             : !f.file.empty()    ? "--file '" + f.file + "'"
                                                  : "--split";
  CheckUtf8OrDie(r.preamble, "the shared preamble of " + source);
  CheckQuestionsUtf8OrDie(r.questions, source);
  CheckUtf8OrDie(f.model, "--model-name");
  return r;
}

json ResultJson(size_t i, const std::string& question, const client::ChatResult& r) {
  json j = {{"index", i},
            {"question", question},
            {"answer", r.content},
            {"ttft_s", r.ttft_s},
            {"duration_s", r.duration_s},
            {"completion_tokens", r.completion_tokens},
            {"prompt_tokens", r.prompt_tokens >= 0 ? json(r.prompt_tokens) : json(nullptr)},
            {"finish_reason", r.finish_reason},
            {"attempts", r.attempts},
            {"endpoint", r.endpoint}};
  if (!r.status.ok()) j["error"] = r.status.message();
  return j;
}

void PrintAnswer(size_t i, size_t n, const std::string& question, const client::ChatResult& r) {
  std::printf("[%zu/%zu] %s\n", i + 1, n, ShowNul(question).c_str());
  if (r.status.ok()) {
    std::printf("%s\n(ttft %.3f s, %d tokens, %.3f s)\n\n", r.content.c_str(), r.ttft_s, r.completion_tokens,
                r.duration_s);
  } else {
    std::printf("error: %s\n\n", r.status.message().c_str());
  }
  std::fflush(stdout);
}

// -v: what the server's latency advisor predicts for these questions (lockstep servers only), on stderr.
void PrintAdvice(const client::OpenAiClient& client, size_t questions, int max_tokens) {
  client::AdviceQuery query;
  query.questions = int(questions);
  query.tokens = max_tokens;
  client::CancellationToken token;
  auto advice = client::RunBlocking(client::FetchAdvice(client, query, &token));
  if (!advice.ok()) {
    std::fprintf(stderr, "advisor: unavailable (%s)\n", advice.status().message().c_str());
    return;
  }
  std::fprintf(stderr, "advisor: %s", client::FormatAdvice(*advice).c_str());
}

void RunAsk(const AskFlags& f) {
  const text::SplitResult split = GatherQuestions(f);
  if (f.dry_run) {
    if (f.json) {
      std::printf("%s\n",
                  json({{"preamble", split.preamble}, {"questions", split.questions}}).dump(2).c_str());
    } else {
      // Whole, as they would be sent: a NUL byte (valid UTF-8, sent as \u0000) is shown as \0.
      std::printf("preamble: %s\n", split.preamble.empty() ? "(none)" : ShowNul(split.preamble).c_str());
      for (size_t i = 0; i < split.questions.size(); ++i)
        std::printf("%zu. %s\n", i + 1, ShowNul(split.questions[i]).c_str());
    }
    return;
  }
  if (f.client.urls.empty()) Fail("--url is required (or use --dry-run)");
  auto client = MakeClientOrDie(f.client);
  const std::string model = ModelOrFirstListed(*client, f.model);
  std::vector<client::ChatRequest> requests;
  for (const auto& q : split.questions) {
    client::ChatRequest r;
    r.model = model;
    r.messages = {{"user", text::ComposeQuestion(split.preamble, q)}};
    r.max_tokens = f.max_tokens;
    if (f.temperature_given) r.temperature = f.temperature;
    requests.push_back(std::move(r));
  }
  if (f.verbose) PrintAdvice(*client, requests.size(), f.max_tokens);
  // Print each answer as soon as it and all before it are done.
  std::vector<const client::ChatResult*> done(requests.size(), nullptr);
  size_t next_to_print = 0;
  client::FanOutCallbacks callbacks;
  if (!f.json) {
    callbacks.on_done = [&](size_t i, const client::ChatResult& r) {
      done[i] = &r;
      while (next_to_print < done.size() && done[next_to_print] != nullptr) {
        PrintAnswer(next_to_print, done.size(), split.questions[next_to_print], *done[next_to_print]);
        ++next_to_print;
      }
    };
  }
  client::CancellationToken token;
  const auto start = client::Clock::now();
  auto results =
      client::RunFanOut(*client, requests, f.concurrency, &token, callbacks, /*cancel_on_sigint=*/true);
  const double wall = std::chrono::duration<double>(client::Clock::now() - start).count();
  int failed = 0;
  json out = {{"url", EndpointList(*client)},
              {"model", model},
              {"preamble", split.preamble},
              {"wall_s", wall},
              {"results", json::array()}};
  for (size_t i = 0; i < results.size(); ++i) {
    failed += !results[i].status.ok();
    out["results"].push_back(ResultJson(i, split.questions[i], results[i]));
  }
  if (f.json) {
    // An error message may quote a server's bytes, which need not be UTF-8.
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    std::printf("total wall time: %.3f s (%zu requests, %d failed%s)\n", wall, results.size(), failed,
                token.cancelled() ? ", cancelled" : "");
  }
  std::fflush(stdout);
  if (token.cancelled()) std::exit(130);
  if (failed > 0) std::exit(1);
}

}  // namespace

void RegisterAskCommand(CLI::App& app) {
  auto flags = std::make_shared<AskFlags>();
  CLI::App* cmd =
      app.add_subcommand("ask", "Send questions to an OpenAI-compatible server as parallel requests");
  AddClientFlags(cmd, &flags->client);
  cmd->get_option("--url")->description(
      "Server API root, e.g. http://127.0.0.1:8080/v1 (a bare host gets /v1); REQUIRED unless --dry-run");
  AddModelNameFlag(*cmd, flags->model);
  cmd->add_option_function<std::string>(
         "--model",
         [flags](const std::string& name) {
           DeprecationNote("ask --model NAME", "--model-name NAME");
           flags->model = name;
         },
         "Deprecated: --model-name")
      ->group("");
  cmd->add_option("-q,--question", flags->questions, "A question (repeatable)");
  cmd->add_option("--file", flags->file, "File with one question per line ('-' = stdin)")->check(NotEmpty());
  cmd->add_option("--split", flags->split, "A combined prompt to split into questions ('-' = stdin)")
      ->check(NotEmpty());
  cmd->add_option("--concurrency", flags->concurrency, "Requests in flight at most (0 = all)")
      ->check(NumberIn(0))
      ->capture_default_str();
  cmd->add_option("--max-tokens", flags->max_tokens, "Max tokens per answer")
      ->check(NumberIn(1))
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--temperature,--temp",
         [flags](double t) {
           flags->temperature = t;
           flags->temperature_given = true;
         },
         "Sampling temperature (default: the server's)")
      ->check(NumberIn(0, kMaxTemperature));
  cmd->add_flag("--json", flags->json, "Machine-readable output");
  cmd->add_flag("--dry-run", flags->dry_run, "Show the questions without sending");
  cmd->add_flag("-v,--verbose", flags->verbose,
                "Also print the server's latency advice (combined vs parallel vs sequential) first");
  cmd->callback([flags] { RunAsk(*flags); });
}

}  // namespace lockstep::cli
