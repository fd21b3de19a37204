// Fuzzes what a connection does with the bytes a client sends, in-process and without sockets: the request
// parser with the server's limits and framing checks (server/http_request.h ParseRequests: pipelined
// requests, chunked bodies, smuggling attempts) and then the router (server/routes.h HandleRequest: access
// checks, methods, every route, request parsing and submission to a real engine on the tiny model). The
// client goes away as soon as the handler returns, so submitted requests are cancelled before they run far.
// Properties: a protocol error is a 4xx/5xx with a JSON error body in the route's shape; every request is
// answered with a valid status before the handler returns, but for those that generate (answered later).
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "engine/engine.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/tiny_model.h"
#include "model/model.h"
#include "server/dashboard_feed.h"
#include "server/http_request.h"
#include "server/routes.h"
#include "server/slot_view.h"
#include "server/step_time_model.h"

namespace lockstep::fuzz {
namespace {

// A ResponseWriter that records the response. The client stays while the handler runs and goes away right
// after (OnClose's callback runs then), so submitted jobs are cancelled before they run far. Events the
// engine thread posts are dropped (a non-streamed job is never answered).
class RecordingWriter : public server::ResponseWriter {
 public:
  void Send(int status, const std::string&, std::string, server::HeaderList) override { Answer(status); }
  void StartStream(int status, const std::string&, server::HeaderList) override { Answer(status); }
  void Write(std::string) override { Require(started_, "no body before the response started"); }
  void End() override {}
  void Post(std::function<void()>) override {}
  std::function<void()> PostAfter(double, std::function<void()>) override {
    return [] {};
  }
  void OnClose(std::function<void()> fn) override {
    if (closed_) {
      fn();
    } else {
      on_close_ = std::move(fn);
    }
  }
  bool closed() const override { return closed_; }
  void Close() {
    closed_ = true;
    if (on_close_) std::exchange(on_close_, nullptr)();
  }
  int responses() const { return responses_; }  // 0 or 1: a response started

 private:
  void Answer(int status) {
    Require(status >= 100 && status <= 599, "a valid HTTP status");
    if (!started_) responses_++;
    started_ = true;
  }
  bool started_ = false;
  bool closed_ = false;
  int responses_ = 0;
  std::function<void()> on_close_;
};

struct Router {
  server::MetricsRegistry registry;
  server::ServerMetrics metrics{registry};
  server::StepTimeModel step_model;
  server::DashboardFeed feed{&step_model};
  server::SlotView slots{4};
  std::unique_ptr<Engine> engine;
  server::RouteState state;

  Router() {
    auto model = Model::Load(TinyModelFile());
    if (!model.ok()) std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    Require(model.ok(), "loading the tiny model");
    EngineOptions options;
    options.threads = 1;
    options.max_seqs = 4;
    options.max_queue = 4;
    auto created = Engine::Create(std::shared_ptr<Model>(std::move(model).value()), TinyTokenizer(), options);
    if (!created.ok()) std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    Require(created.ok(), "creating the engine");
    engine = std::move(created).value();
    state.ctx = TinyApiContext();
    state.engine = engine.get();
    state.registry = &registry;
    state.metrics = &metrics;
    server::GuardOptions guard;
    guard.allowed_origins = {"https://app.example"};
    state.guard = std::make_shared<server::RequestGuard>(guard);
    state.request_timeout_s = 5;
    state.feed = &feed;
    state.slots = &slots;
    state.step_model = &step_model;
    state.ready.store(true);
  }
};

}  // namespace
}  // namespace lockstep::fuzz

namespace {
// Lives for the process (the engine thread runs on).
lockstep::fuzz::Router& Routes() {
  static auto* router = new lockstep::fuzz::Router();
  return *router;
}
}  // namespace

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Routes();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::Router* router = &Routes();
  server::HttpLimits limits;
  limits.max_body_bytes = 64 << 10;
  limits.max_header_bytes = 8 << 10;
  const server::BufferParse parsed =
      server::ParseRequests(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (parsed.error) {
    fuzz::Require(parsed.error->status >= 400 && parsed.error->status <= 505, "a protocol error is 4xx/5xx");
    for (const char* path : {"/generate", "/v1/completions", "/completion"}) {
      const auto body = nlohmann::json::parse(server::ProtocolErrorBody(*parsed.error, path), nullptr, false);
      fuzz::Require(body.is_object() && body.contains("error"), "a protocol error has a JSON error body");
    }
  }
  for (const server::HttpRequest& request : parsed.requests) {
    auto writer = std::make_shared<fuzz::RecordingWriter>();
    // Generation and the dashboard's event stream may answer later, from the engine's events; every other
    // request is answered before HandleRequest returns.
    const bool may_answer_later =
        (request.method == "POST" &&
         (request.path == "/v1/completions" || request.path == "/v1/chat/completions" ||
          request.path == "/generate" || request.path == "/generate_stream" || request.path == "/" ||
          request.path == "/completion" || request.path == "/completions" || request.path == "/split" ||
          request.path == "/v1/responses" || request.path == "/infill")) ||
        request.path == "/dashboard/events";
    server::HandleRequest(router->state, request, writer);
    writer->Close();
    fuzz::Require(writer->responses() == 1 || may_answer_later, "a request is answered");
  }
  return 0;
}
