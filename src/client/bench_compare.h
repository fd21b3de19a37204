// The combined-vs-parallel experiment (`lockstep bench compare`): the same N questions answered (a) combined
// — all in one request with N x max_tokens, (b) parallel — one request per question, all at once, (c)
// sequential — one after another. Each mode runs `repeat` times (modes interleaved per repetition, after one
// warm-up request); the report has per-mode medians, the speedup of parallel over combined, the per-request
// time spans of the median run of each mode (for the overlap chart), and whether the server honoured
// ignore_eos (fixed output lengths). Works against any OpenAI-compatible server. Not thread-safe; runs on the
// calling thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/cancellation.h"
#include "client/chat_client.h"

namespace lockstep::client {

struct CompareOptions {
  std::vector<std::string> questions;
  std::string model;
  std::string server;   // label for the report (the URL)
  int max_tokens = 64;  // per question
  int repeat = 3;
  bool ignore_eos = true;
  double temperature = 0;
};

struct RequestSpan {  // seconds after the run's start
  double start_s = 0, first_token_s = 0, end_s = 0;
  int tokens = 0;
};

struct CompareRun {
  double wall_s = 0;
  double ttft_s = 0;  // run start to the first token of any answer
  int output_tokens = 0;
  std::vector<RequestSpan> spans;
};

struct CompareMode {
  std::string name;  // "combined", "parallel", "sequential"
  std::vector<CompareRun> runs;
  double median_wall_s = 0, median_ttft_s = 0, tokens_per_s = 0;
  int output_tokens = 0;
  size_t median_run = 0;  // index into runs
};

struct CompareReport {
  std::vector<CompareMode> modes;
  double speedup_parallel_over_combined = 0;
  std::string server, model;
  int questions = 0, max_tokens = 0, repeat = 0;
  bool ignore_eos_requested = false;
  std::vector<std::string> eos_warnings;  // requests that stopped short of max_tokens
};

// The five short questions of --builtin.
std::vector<std::string> BuiltinQuestions();
// The single prompt of combined mode.
std::string CombinedPrompt(const std::vector<std::string>& questions);

using ProgressFn = std::function<void(const std::string& line)>;
// Runs the experiment. A failed request fails the whole run with its status.
Result<CompareReport> RunCompare(const OpenAiClient& client, const CompareOptions& options,
                                 CancellationToken* token, const ProgressFn& progress = {});

nlohmann::json CompareJson(const CompareReport& report);  // the result.json shape
std::string CompareMarkdown(const CompareReport& report);
std::string CompareSvg(const CompareReport& report);  // bars per mode + per-request timelines
// Writes result.json, result.md, chart.svg and requests.json (every run's per-request intervals:
// {"combined"|"parallel"|"sequential": [[{start_s, first_token_s, end_s, tokens}, ...] per run]}) into dir.
Status WriteCompareOutputs(const CompareReport& report, const std::string& dir);

}  // namespace lockstep::client
