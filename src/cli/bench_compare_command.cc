// `lockstep bench compare`: the combined-vs-parallel-vs-sequential experiment against a server (--url) or a
// lockstep server started in-process (-m MODEL). Prints the table and writes result.json, result.md and
// chart.svg to --out.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/cli_util.h"
#include "cli/client_setup.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "client/bench_compare.h"
#include "client/fan_out.h"

namespace lockstep::cli {
namespace {

struct CompareFlags {
  ClientFlags client;
  std::string model_path;
  std::string model;
  std::string questions_file;
  bool builtin = false;
  int max_tokens = 64;
  int repeat = 3;
  std::string out = "bench-compare";
  bool no_ignore_eos = false;
  double temperature = 0;
  int threads = 0;
  std::string context;  // FILE or "builtin"
  std::string modes = "combined,parallel,sequential,fan-out";
  bool cold = false;
};

std::string ReadContextOrDie(const std::string& path, const std::string& flag) {
  std::string text = ReadFlagFileOrDie(path, flag);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.empty()) Fail(flag + ": '" + path + "' is empty");
  return text;
}

std::vector<std::string> SplitModes(const std::string& text) {
  std::vector<std::string> modes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) modes.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return modes;
}

std::vector<std::string> ReadQuestions(const std::string& path) {
  std::vector<std::string> questions;
  for (std::string& line : SplitLines(ReadFlagFileOrDie(path, "--questions"))) {
    if (!IsBlank(line)) questions.push_back(std::move(line));
  }
  if (questions.empty()) Fail("--questions: '" + path + "' has no questions (one per line)");
  return questions;
}

void RunCompareCommand(CompareFlags f) {
  ClientModelFlags(f.client.urls.empty() ? "" : f.client.urls.front(), &f.model_path, &f.model);
  if (f.client.urls.empty() == f.model_path.empty()) Fail("give exactly one of --url URL or -m MODEL");
  const bool builtin_context = f.context == "builtin";
  if (f.builtin && !f.questions_file.empty()) Fail("give at most one of --questions FILE and --builtin");
  if (!f.builtin && f.questions_file.empty() && !builtin_context) {
    Fail("give --questions FILE or --builtin (or --context builtin, which brings its own questions)");
  }
  // Checked before a server is reached or started and the benchmark runs.
  if (Status s = CheckOutputDirectory(f.out, "--out"); !s.ok()) Fail(s);
  client::CompareOptions options;
  options.questions = f.builtin                   ? client::BuiltinQuestions()
                      : !f.questions_file.empty() ? ReadQuestions(f.questions_file)
                                                  : client::BuiltinContextQuestions();
  if (!f.context.empty())
    options.context = builtin_context ? client::BuiltinContext() : ReadContextOrDie(f.context, "--context");
  // They go into JSON requests, which hold UTF-8 only.
  const std::string source = f.builtin || f.questions_file.empty() ? "the built-in questions"
                                                                   : "--questions '" + f.questions_file + "'";
  CheckQuestionsUtf8OrDie(options.questions, source);
  CheckUtf8OrDie(options.context, "--context '" + f.context + "'");
  CheckUtf8OrDie(f.model, "--model-name");
  options.modes = SplitModes(f.modes);
  // Checked before a server is reached or started (RunCompare checks them too, but only then).
  const std::vector<std::string> known = client::CompareOptions().modes;
  std::string known_list;
  for (const std::string& mode : known) known_list += (known_list.empty() ? "" : ", ") + mode;
  if (options.modes.empty()) Fail("--modes: no mode given (" + known_list + ")");
  for (const std::string& mode : options.modes) {
    if (std::find(known.begin(), known.end(), mode) == known.end()) {
      Fail("--modes: unknown mode '" + mode + "' (modes: " + known_list + ")");
    }
  }
  options.cold = f.cold;
  options.max_tokens = f.max_tokens;
  options.repeat = f.repeat;
  options.ignore_eos = !f.no_ignore_eos;
  options.temperature = f.temperature;
  BenchTarget target = ConnectBenchTargetOrDie(f.client, f.model_path, f.threads, f.model);
  options.server = target.server;
  options.model = target.model;
  client::CancellationToken token;
  auto report = client::RunCompare(*target.client, options, &token, [](const std::string& line) {
    std::fprintf(stderr, "  %s\n", line.c_str());
  });
  if (!report.ok()) Fail(report.status());
  if (Status s = client::WriteCompareOutputs(*report, f.out); !s.ok()) Fail(s);
  std::printf("%s\nWrote %s/result.json, result.md, chart.svg and requests.json\n",
              client::CompareMarkdown(*report).c_str(), f.out.c_str());
  std::fflush(stdout);
  if (!report->eos_warnings.empty()) {
    std::fprintf(stderr,
                 "lockstep: warning: the server did not honour ignore_eos (%zu answers stopped early)\n",
                 report->eos_warnings.size());
  }
}

}  // namespace

void RegisterBenchCompareCommand(CLI::App& bench) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* cmd = bench.add_subcommand("compare", "One combined request vs parallel vs sequential requests");
  AddClientFlags(cmd, &flags->client);
  cmd->get_option("--url")->description(
      "Server API root, e.g. http://127.0.0.1:8080/v1 (a bare host gets /v1); give it or -m FILE");
  AddModelFileFlag(*cmd, flags->model_path, "GGUF model file: start a lockstep server in-process (or --url)",
                   /*required=*/false);
  AddModelNameFlag(*cmd, flags->model);
  AddDeprecatedModelPathFlag(*cmd, flags->model_path);
  cmd->add_option("--questions", flags->questions_file, "File with one question per line")->check(NotEmpty());
  cmd->add_flag("--builtin", flags->builtin, "Use the 5 built-in short questions");
  cmd->add_option("--max-tokens", flags->max_tokens, "Max tokens per question (combined: N x this)")
      ->check(NumberIn(1))
      ->capture_default_str();
  cmd->add_option("--repeat", flags->repeat, "Repetitions per mode (medians reported)")
      ->check(NumberIn(1))
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "Output directory for result.json, result.md, chart.svg");
  cmd->add_flag("--no-ignore-eos", flags->no_ignore_eos, "Do not ask for fixed output lengths (ignore_eos)");
  cmd->add_option("--temperature,--temp", flags->temperature,
                  "Sampling temperature sent with every request (0 = greedy, so runs compare)")
      ->check(NumberIn(0, kMaxTemperature))
      ->capture_default_str();
  AddThreadsFlag(*cmd, flags->threads);
  cmd->add_option("--context", flags->context,
                  "Shared text (a document) before the questions in every mode: FILE, or 'builtin' for a "
                  "~620-token document with five questions of its own")
      ->check(NotEmpty());
  cmd->add_option("--modes", flags->modes,
                  "Modes to run, comma separated: combined, parallel, sequential, fan-out (server-side)")
      ->capture_default_str();
  cmd->add_flag("--cold", flags->cold, "Start every run with its own line so no run reuses another's cache");
  cmd->callback([flags] { RunCompareCommand(*flags); });
}

}  // namespace lockstep::cli
