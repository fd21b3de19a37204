// The combined-vs-parallel experiment (`lockstep bench compare`): the same N questions answered (a) combined
// — all in one request with N x max_tokens, (b) parallel — one request per question, all at once, (c)
// sequential — one after another, (d) fan-out — the combined request once more, with "fan_out": "choices"
// asking the server to answer each question as its own sequence (lockstep's server-side fan-out; a server
// without it answers once with one question's max_tokens: the mode is then marked not comparable, runs no
// more rounds and gets no ratio). With a shared context (a document) every prompt
// starts with it, so the modes show what a prefix cache saves: each mode reports the prompt tokens the
// server computed and the ones it reported cached. Each mode runs `repeat` rounds (modes interleaved per
// round, after one warm-up request without the context); the report has per-mode medians, per-round
// ratios to combined, the per-request time spans of each mode's median run (for the overlap chart), and
// whether the server honoured ignore_eos. Works against any OpenAI-compatible server. Not thread-safe; runs
// on the calling thread.
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
  std::string context;  // shared text before the questions in every mode ("" = none)
  std::vector<std::string> modes = {"combined", "parallel", "sequential", "fan-out"};
  // Each run starts with its own line ("Run 3, parallel."), so no run reuses another's cached prefix (the
  // requests within one run still share theirs).
  bool cold = false;
};

struct RequestSpan {  // seconds after the run's start
  double start_s = 0, first_token_s = 0, end_s = 0;
  int tokens = 0;
};

struct CompareRun {
  double wall_s = 0;
  double ttft_s = 0;  // run start to the first token of any answer
  int output_tokens = 0;
  int prompt_tokens = 0;   // sum over the run's requests (as the server reported them)
  int cached_tokens = -1;  // of those, reported cached; -1 when the server reported nothing
  int choices = 0;         // answers returned (fan-out: one per question when the server fans out)
  std::vector<RequestSpan> spans;
};

struct CompareMode {
  std::string name;  // "combined", "parallel", "sequential", "fan-out"
  std::vector<CompareRun> runs;
  double median_wall_s = 0, median_ttft_s = 0, tokens_per_s = 0;
  int output_tokens = 0;
  int prompt_tokens = 0, cached_tokens = -1;  // medians over runs
  size_t median_run = 0;                      // index into runs
  // Why this mode's figures do not compare with the others ("" = they do): "not fanned out by this server"
  // when fan-out came back as one answer. Such a mode runs once and gets no ratio and no chart bar.
  std::string not_comparable;
};

struct CompareReport {
  std::vector<CompareMode> modes;
  double speedup_parallel_over_combined = 0;
  // Per round: wall(mode) / wall(combined) of the same round, for every mode but combined and those not
  // comparable.
  std::vector<std::pair<std::string, std::vector<double>>> ratios_to_combined;
  std::string server, model;
  int questions = 0, max_tokens = 0, repeat = 0;
  bool ignore_eos_requested = false;
  bool has_context = false, cold = false;
  std::vector<std::string> eos_warnings;  // requests that stopped short of max_tokens
  std::vector<std::string> notes;         // e.g. the server did not fan out
  const CompareMode* Mode(const std::string& name) const;
};

// The five short questions of --builtin.
std::vector<std::string> BuiltinQuestions();
// The built-in shared document (~620 tokens with a Llama vocabulary: a lighthouse's history) and five
// questions about it.
std::string BuiltinContext();
std::vector<std::string> BuiltinContextQuestions();
// The single prompt of combined mode (after the context, when there is one).
std::string CombinedPrompt(const std::vector<std::string>& questions);

using ProgressFn = std::function<void(const std::string& line)>;
// Runs the experiment. A failed request fails the whole run with its status.
Result<CompareReport> RunCompare(const OpenAiClient& client, const CompareOptions& options,
                                 CancellationToken* token, const ProgressFn& progress = {});

nlohmann::json CompareJson(const CompareReport& report);  // the result.json shape
std::string CompareMarkdown(const CompareReport& report);
std::string CompareSvg(const CompareReport& report);  // bars per mode + per-request timelines
// Writes result.json, result.md, chart.svg and requests.json (every run's per-request intervals:
// {mode: [[{start_s, first_token_s, end_s, tokens}, ...] per run]}) into dir.
Status WriteCompareOutputs(const CompareReport& report, const std::string& dir);

}  // namespace lockstep::client
