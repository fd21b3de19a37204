// Routes: the HTTP request router of the server — authentication, readiness/draining checks, and the handlers
// of every route (OpenAI, TGI, /health, /ready, /metrics, /info, /v1/models). GET /health is liveness (200
// once loaded, also while draining); GET /ready is readiness for balancers (200 only while loaded and no
// drain has started). Handlers run on the connection's
// strand; generation runs in the engine and its events come back through GenerationJob. Thread-safe: the
// state it reads is immutable once `ready` is set, and the counters are atomic.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/api_context.h"
#include "server/dashboard_routes.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/server_metrics.h"

namespace lockstep::server {

class DashboardFeed;
class StepTimeModel;

struct RouteState {
  ApiContext ctx;            // valid once ready
  Engine* engine = nullptr;  // valid once ready
  MetricsRegistry* registry = nullptr;
  ServerMetrics* metrics = nullptr;
  std::string api_key;
  double request_timeout_s = 0;
  std::atomic<bool> ready{false};
  // A drain has begun: GET /ready answers 503 while new requests are still served (the drain grace).
  std::atomic<bool> drain_started{false};
  // New API requests are refused with 503 (the listener is closed; in-flight requests finish).
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> next_id{1};
  uint64_t id_salt = 0;
  DashboardFeed* feed = nullptr;        // dashboard event feed (null: none)
  StepTimeModel* step_model = nullptr;  // latency advisor's fit (null: none)
  SplitQuestionsFn split_questions;     // POST /split (empty: unavailable)
};

// Handles one request (the HttpHandler of the server).
void HandleRequest(RouteState& state, HttpRequest request, std::shared_ptr<ResponseWriter> writer);

}  // namespace lockstep::server
