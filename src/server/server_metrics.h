// ServerMetrics: the lockstep_* metric families exposed on GET /metrics, declared once in a MetricsRegistry.
// Engine gauges/totals are refreshed from EngineStats (observer callbacks and at every scrape); per-request
// latencies are observed when a request finishes. Thread-safe (see metrics.h).
#pragma once

#include <atomic>

#include "engine/engine.h"
#include "server/metrics.h"

namespace lockstep::server {

struct ServerMetrics {
  explicit ServerMetrics(MetricsRegistry& registry);

  // Copies gauges and engine totals from a stats snapshot.
  void UpdateFromStats(const EngineStats& stats);
  // Observes one finished engine request's latencies.
  void ObserveRequest(const RequestTiming& timing);
  // Mean time a request ran (end to end less its queue time), a moving average over recent requests; 0
  // before the first one finished. Feeds Retry-After.
  double mean_run_s() const { return mean_run_s_.load(); }
  // Counts one API response by HTTP status.
  void CountResponse(int http_status) { requests_total->Inc({{"status", std::to_string(http_status)}}); }

  MetricFamily* ttft;
  MetricFamily* itl;
  MetricFamily* e2e;
  MetricFamily* queue_time;
  MetricFamily* running;
  MetricFamily* waiting;
  MetricFamily* kv_usage;
  // Models with recurrent layers (qwen35): state slots held by running requests, and all of them (0: none).
  MetricFamily* recurrent_slots_used;
  MetricFamily* recurrent_slots_total;
  // Their prefix cache's state snapshots: slots holding one, and all of them (0: none).
  MetricFamily* recurrent_cache_slots_used;
  MetricFamily* recurrent_cache_slots_total;
  // ... snapshots taken, copied into a request's state (its prefix hit) and evicted.
  MetricFamily* recurrent_snapshots;
  MetricFamily* recurrent_snapshot_hits;
  MetricFamily* recurrent_snapshot_evictions;
  MetricFamily* batch_rows;
  MetricFamily* prompt_tokens;
  MetricFamily* generation_tokens;
  MetricFamily* preemptions;
  MetricFamily* requests_total;
  MetricFamily* cancelled;
  // Prefix cache (engine/engine.h EngineStats): tokens looked up and found, their ratio, cached blocks.
  MetricFamily* prefix_queries;
  MetricFamily* prefix_hits;
  MetricFamily* prefix_hit_ratio;
  MetricFamily* cached_blocks;
  MetricFamily* prefix_cache_enabled;
  MetricFamily* cache_config;
  // Speculative decoding (EngineOptions::draft_tokens): tokens drafted, and those confirmed.
  MetricFamily* draft_tokens;
  MetricFamily* draft_accepted;

 private:
  std::atomic<double> mean_run_s_{0};
};

}  // namespace lockstep::server
