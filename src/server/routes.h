// Routes: the HTTP request router of the server — access checks (RequestGuard: API key, Origin/CORS, Host),
// methods (405 with Allow; GET routes answer HEAD; OPTIONS answers 204), readiness/draining checks, and the
// handlers of every route (OpenAI, TGI, llama.cpp's /completion and /props, /health, /ready, /metrics, /info,
// /v1/models, the dashboard's). GET /health is liveness (200 once loaded, also while draining); GET /ready is
// readiness for balancers (200 only while loaded and no drain has started). lockstep_requests_total counts
// the API routes' responses only (not /health, /ready, /metrics or unknown paths). Handlers run on the
// connection's strand; generation runs in the engine and its events come back through GenerationJob.
// Thread-safe: the state it reads is immutable once `ready` is set, and the counters are atomic.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/api_context.h"
#include "server/dashboard_routes.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_guard.h"
#include "server/server_metrics.h"

namespace lockstep::server {

class DashboardFeed;
class SlotView;
class StepTimeModel;

struct RouteState {
  ApiContext ctx;            // valid once ready
  Engine* engine = nullptr;  // valid once ready
  MetricsRegistry* registry = nullptr;
  ServerMetrics* metrics = nullptr;
  std::shared_ptr<const RequestGuard> guard;  // API key, Origin and Host checks
  double request_timeout_s = 0;
  std::atomic<bool> ready{false};
  // A drain has begun: GET /ready answers 503 while new requests are still served (the drain grace).
  std::atomic<bool> drain_started{false};
  // New API requests are refused with 503 (the listener is closed; in-flight requests finish).
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> next_id{1};
  uint64_t id_salt = 0;
  DashboardFeed* feed = nullptr;  // dashboard event feed (null: none)
  SlotView* slots = nullptr;      // GET /slots (null: none)
  // POST /slots/{id}?action=... (server/slot_files.h): --slot-save-path ("": refused) and the model file's
  // fingerprint.
  std::string slot_save_path;
  uint64_t model_fingerprint = 0;
  StepTimeModel* step_model = nullptr;  // latency advisor's fit (null: none)
  SplitQuestionsFn split_questions;     // POST /split (empty: unavailable)
};

// Handles one request (the HttpHandler of the server).
void HandleRequest(RouteState& state, HttpRequest request, std::shared_ptr<ResponseWriter> writer);

// The body of an error the HTTP layer answers itself (HttpServerOptions::protocol_error_body), in the error
// shape of the route `path` names (TGI or OpenAI).
std::string ProtocolErrorBody(const ProtocolError& error, const std::string& path);

}  // namespace lockstep::server
