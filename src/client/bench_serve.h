// A serving load test (`lockstep bench serve`), in the manner of vLLM's serving benchmark: requests sent
// open-loop at a rate (Poisson or gamma arrivals) or closed-loop at a fixed concurrency, streamed;
// per-request TTFT, TPOT
// ((e2e - ttft) / (output tokens - 1)), ITL (gaps between streamed chunks) and end-to-end latency, summarized
// as mean / median / p90 / p99; request and output-token throughput; goodput (requests per second meeting
// every given SLO); outputs as JSON, Markdown and SVG charts (latency CDFs, throughput over time). Runs on
// the calling thread.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/bench_workload.h"
#include "client/cancellation.h"
#include "client/chat_client.h"

namespace lockstep::client {

struct ServeOptions {
  std::string model, server;
  double rate = 0;                          // requests/s (open loop); 0 = all at once
  int concurrency = 0;                      // > 0: closed loop with this many in flight (rate ignored)
  double burstiness = 1;                    // gamma shape of the inter-arrival gaps
  int warmup = 0;                           // requests sent (and discarded) first
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // 0 = no SLO on that metric
  bool ignore_eos = true;
  uint64_t seed = 0;
};

struct ServeRecord {
  bool ok = false;
  std::string error;
  double send_s = 0;  // seconds after the benchmark's start
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;
  int prompt_tokens = -1, output_tokens = 0, max_tokens = 0;
  int cached_tokens = -1;            // prompt tokens the server reported cached (-1: not reported)
  int conversation = -1, turn = -1;  // multi-turn workload (client/bench_conversation.h)
  std::vector<double> itl_s;
  std::vector<double> token_times_s;  // chunk arrivals, seconds after the benchmark's start
  std::string endpoint;               // the API root that served it (last attempt)
};

struct LatencySummary {
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

struct ServeReport {
  ServeOptions options;
  std::vector<ServeRecord> records;
  double duration_s = 0;
  int completed = 0, failed = 0;
  long total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0;
  double goodput = -1;                               // requests/s meeting the SLOs; -1 when no SLO was given
  std::map<std::string, LatencySummary> latency_ms;  // "ttft", "tpot", "itl", "e2e"
  int short_outputs = 0;                             // ignore_eos requested but fewer tokens than max_tokens
  // Prefix cache, from the server's usage: cached prompt tokens / prompt tokens (-1 when not reported).
  double prefix_hit_ratio = -1;
  long total_cached_tokens = 0;
  int turns = 0;                        // multi-turn workload: turns per conversation (0 otherwise)
  std::vector<double> ttft_by_turn_ms;  // mean TTFT of each turn over the conversations
  std::vector<double> hit_ratio_by_turn;
};

// Parses "ttft=200,tpot=50" (milliseconds) into the options.
Status ParseSlo(const std::string& text, ServeOptions* options);

using ServeProgressFn = std::function<void(int done, int total)>;
// One finished request as a record (times relative to the benchmark's start), and the report's summaries
// from its records (for workloads beside RunServe's).
ServeRecord ToServeRecord(const ChatResult& result, Clock::time_point bench_start, int max_tokens);
void AggregateServeReport(ServeReport* report);
Result<ServeReport> RunServe(const OpenAiClient& client, const std::vector<WorkItem>& work,
                             const ServeOptions& options, CancellationToken* token,
                             const ServeProgressFn& progress = {});

nlohmann::json ServeJson(const ServeReport& report);
std::string ServeMarkdown(const ServeReport& report);
std::string ServeLatencySvg(const ServeReport& report);     // CDFs of TTFT, TPOT, ITL, e2e
std::string ServeThroughputSvg(const ServeReport& report);  // output tokens/s and requests/s over time
// Writes result.json, result.md, latency_cdf.svg and throughput.svg into dir (and turns.svg for the
// multi-turn workload).
Status WriteServeOutputs(const ServeReport& report, const std::string& dir);

}  // namespace lockstep::client
