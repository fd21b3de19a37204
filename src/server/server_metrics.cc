#include "server/server_metrics.h"

#include <algorithm>
#include <string>

namespace lockstep::server {

namespace {
std::vector<double> LatencyBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}
}  // namespace

ServerMetrics::ServerMetrics(MetricsRegistry& r)
    : ttft(r.Histogram("lockstep_time_to_first_token_seconds",
                       "Time from request arrival to its first token.", LatencyBuckets())),
      itl(r.Histogram("lockstep_inter_token_latency_seconds", "Time between consecutive tokens of a request.",
                      LatencyBuckets())),
      e2e(r.Histogram("lockstep_e2e_request_latency_seconds", "Time from request arrival to its last token.",
                      LatencyBuckets())),
      queue_time(r.Histogram("lockstep_request_queue_time_seconds",
                             "Time a request waited before its first forward pass.", LatencyBuckets())),
      running(
          r.Gauge("lockstep_num_requests_running", "Requests holding KV cache (prefilling or decoding).")),
      waiting(r.Gauge("lockstep_num_requests_waiting", "Requests queued or preempted, waiting to run.")),
      kv_usage(r.Gauge("lockstep_kv_cache_usage_ratio", "Fraction of KV cache blocks in use (0..1).")),
      recurrent_slots_used(
          r.Gauge("lockstep_recurrent_state_slots_used",
                  "Recurrent state slots held by running requests (models with recurrent layers).")),
      recurrent_slots_total(r.Gauge("lockstep_recurrent_state_slots_total",
                                    "Recurrent state slots (--recurrent-slots); 0 for models without "
                                    "recurrent layers.")),
      recurrent_cache_slots_used(r.Gauge("lockstep_recurrent_state_cache_slots_used",
                                         "Prefix-cache snapshot slots holding a recurrent state snapshot.")),
      recurrent_cache_slots_total(r.Gauge("lockstep_recurrent_state_cache_slots_total",
                                          "Prefix-cache snapshot slots for recurrent states "
                                          "(--recurrent-cache-slots); 0 when there are none.")),
      recurrent_snapshots(
          r.Counter("lockstep_recurrent_state_snapshots_total",
                    "Recurrent state snapshots taken at KV block boundaries (prefix cache).")),
      recurrent_snapshot_hits(r.Counter("lockstep_recurrent_state_snapshot_hits_total",
                                        "Recurrent state snapshots copied into a request's state: prefix "
                                        "hits of models with recurrent layers.")),
      recurrent_snapshot_evictions(r.Counter("lockstep_recurrent_state_snapshot_evictions_total",
                                             "Recurrent state snapshots evicted for newer ones (least "
                                             "recently used).")),
      batch_rows(r.Gauge("lockstep_batch_rows", "Rows in the last forward pass.")),
      prompt_tokens(r.Counter("lockstep_prompt_tokens_total", "Prompt tokens of accepted requests.")),
      generation_tokens(r.Counter("lockstep_generation_tokens_total", "Tokens generated.")),
      preemptions(
          r.Counter("lockstep_num_preemptions_total", "Requests preempted (KV freed, recomputed later).")),
      requests_total(r.Counter("lockstep_requests_total", "API requests answered, by HTTP status.")),
      cancelled(r.Counter("lockstep_sequences_cancelled_total",
                          "Engine sequences cancelled (client gone, deadline, shutdown).")),
      prefix_queries(r.Counter("lockstep_prefix_cache_queries_total",
                               "Prompt tokens looked up in the prefix cache (each request once).")),
      prefix_hits(
          r.Counter("lockstep_prefix_cache_hits_total",
                    "Prompt tokens whose KV was reused (prefix cache, a neighbour, a fork) instead of "
                    "computed.")),
      prefix_hit_ratio(r.Gauge("lockstep_prefix_cache_hit_ratio",
                               "lockstep_prefix_cache_hits_total / lockstep_prefix_cache_queries_total.")),
      cached_blocks(
          r.Gauge("lockstep_kv_cache_cached_blocks",
                  "KV blocks findable by their prefix hash (in use or idle; idle ones count as free).")),
      prefix_cache_enabled(
          r.Gauge("lockstep_prefix_cache_enabled", "1 when automatic prefix caching is on.")),
      cache_config(r.Gauge("lockstep_cache_config_info",
                           "The KV cache's configuration in its labels (as vLLM's cache_config_info); "
                           "value 1.")),
      draft_tokens(r.Counter("lockstep_spec_decode_num_draft_tokens_total",
                             "Speculative decoding (--draft-max): tokens drafted by n-gram lookup.")),
      draft_accepted(
          r.Counter("lockstep_spec_decode_num_accepted_tokens_total",
                    "Drafted tokens the model confirmed (each saved a forward pass for its request).")) {}

void ServerMetrics::UpdateFromStats(const EngineStats& s) {
  running->Set(s.running);
  waiting->Set(s.waiting);
  kv_usage->Set(s.kv_usage());
  recurrent_slots_used->Set(s.recurrent_slots_used);
  recurrent_slots_total->Set(s.recurrent_slots_total);
  recurrent_cache_slots_used->Set(s.recurrent_cache_slots_used);
  recurrent_cache_slots_total->Set(s.recurrent_cache_slots_total);
  recurrent_snapshots->Set(static_cast<double>(s.recurrent_snapshots_total));
  recurrent_snapshot_hits->Set(static_cast<double>(s.recurrent_snapshot_hits_total));
  recurrent_snapshot_evictions->Set(static_cast<double>(s.recurrent_snapshot_evictions_total));
  batch_rows->Set(s.step_rows);
  prompt_tokens->Set(static_cast<double>(s.prompt_tokens_total));
  generation_tokens->Set(static_cast<double>(s.generation_tokens_total));
  preemptions->Set(static_cast<double>(s.preemptions_total));
  cancelled->Set(static_cast<double>(s.requests_cancelled));
  prefix_queries->Set(static_cast<double>(s.prefix_cache_queries_total));
  prefix_hits->Set(static_cast<double>(s.prefix_cache_hits_total));
  prefix_hit_ratio->Set(s.prefix_cache_hit_ratio());
  draft_tokens->Set(static_cast<double>(s.draft_tokens_total));
  draft_accepted->Set(static_cast<double>(s.draft_accepted_total));
  cached_blocks->Set(static_cast<double>(s.kv_blocks_cached));
  prefix_cache_enabled->Set(s.prefix_caching ? 1 : 0);
  cache_config->Set(1, {{"block_size", std::to_string(s.block_tokens)},
                        {"cache_dtype", KvDtypeName(s.kv_dtype)},
                        {"num_blocks", std::to_string(s.kv_blocks_total)}});
}

void ServerMetrics::ObserveRequest(const RequestTiming& t) {
  if (t.generated_tokens > 0) ttft->Observe(t.ttft_s);
  e2e->Observe(t.e2e_s);
  queue_time->Observe(t.queue_s);
  // Exponential moving average (weight 1/8 for the newest request), updated lock-free.
  const double run = std::max(0.0, t.e2e_s - t.queue_s);
  double old_mean = mean_run_s_.load();
  while (
      !mean_run_s_.compare_exchange_weak(old_mean, old_mean == 0 ? run : old_mean + (run - old_mean) / 8)) {
  }
}

}  // namespace lockstep::server
