#include "server/dashboard_routes.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/excerpt.h"
#include "server/api_context.h"
#include "server/dashboard_feed.h"
#include "server/http_request.h"
#include "server/latency_advisor.h"
#include "server/request_fields.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/web_assets.h"

namespace lockstep::server {

using nlohmann::json;

namespace {

constexpr const char* kJson = "application/json";
// The page loads nothing from elsewhere: the server works offline, and a CDN reference would fail here.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'";

void SendJson(RouteState& state, ResponseWriter& writer, int status, const json& body) {
  state.metrics->CountResponse(status);
  writer.Send(status, kJson, DumpJson(body));
}

void SendError(RouteState& state, ResponseWriter& writer, const ApiError& error) {
  state.metrics->CountResponse(HttpStatusFor(error, ApiFlavor::kOpenAI));
  SendApiError(writer, error, ApiFlavor::kOpenAI);
}

// An integer query parameter in [lo, hi] (`fallback` when absent); an ApiError naming it otherwise.
Parsed<int> IntParam(const HttpRequest& request, const std::string& name, int fallback, int lo, int hi) {
  const std::string text = QueryParam(request.target, name);
  if (text.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < lo || v > hi) {
    return ApiError::Field(name, name + " must be an integer in [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "], got '" + Excerpt(text) + "'");
  }
  return int(v);
}

json FitJson(const StepTimeFit& fit) {
  return {{"intercept_s", fit.intercept_s},
          {"per_decode_row_s", fit.per_decode_row_s},
          {"per_prefill_row_s", fit.per_prefill_row_s},
          {"per_attended_position_s", fit.per_attended_position_s},
          {"samples", fit.samples},
          {"multi_row_decode_samples", fit.multi_row_decode_samples},
          {"prefill_samples", fit.prefill_samples},
          {"max_decode_rows_seen", fit.max_decode_rows_seen},
          {"rms_relative_error", fit.rms_relative_error}};
}

// The event stream of one subscriber: re-arms itself on the connection's strand every interval.
class Subscription : public std::enable_shared_from_this<Subscription> {
 public:
  Subscription(RouteState& state, std::shared_ptr<ResponseWriter> writer, double interval_s, size_t max_steps)
      : state_(state), writer_(std::move(writer)), interval_s_(interval_s), max_steps_(max_steps) {}

  void Start() {
    json first = state_.feed->Update(cursor_, state_.engine->Stats(), DashboardFeed::kMaxSteps);
    first["server"] = {{"model", state_.ctx.model_id},
                       {"architecture", state_.ctx.architecture},
                       {"max_context", state_.ctx.max_context},
                       {"max_seqs", state_.engine->options().max_seqs},
                       {"max_batch_tokens", state_.engine->options().max_batch_tokens},
                       {"interval_ms", int(interval_s_ * 1000)},
                       {"auth", state_.guard->needs_key()}};
    writer_->Write(SseEvent(DumpJson(first), "snapshot"));
    Arm();
  }

 private:
  void Arm() {
    auto self = shared_from_this();
    writer_->PostAfter(interval_s_, [self] { self->Tick(); });
  }
  void Tick() {
    if (writer_->closed()) return;
    if (state_.draining.load()) {
      writer_->End();
      return;
    }
    json update = state_.feed->Update(cursor_, state_.engine->Stats(), max_steps_);
    writer_->Write(SseEvent(DumpJson(update), "update"));
    Arm();
  }

  RouteState& state_;
  std::shared_ptr<ResponseWriter> writer_;
  double interval_s_;
  size_t max_steps_;
  DashboardFeed::Cursor cursor_;
};

}  // namespace

std::string QueryParam(const std::string& target, const std::string& name) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return "";
  size_t pos = q + 1;
  while (pos <= target.size()) {
    size_t end = target.find('&', pos);
    if (end == std::string::npos) end = target.size();
    const std::string pair = target.substr(pos, end - pos);
    const size_t eq = pair.find('=');
    if (PercentDecode(pair.substr(0, eq), /*plus_is_space=*/true) == name)
      return eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1), /*plus_is_space=*/true);
    pos = end + 1;
  }
  return "";
}

bool ServeWebPage(RouteState& state, const HttpRequest& request, ResponseWriter& writer) {
  if (request.method != "GET") return false;
  const std::string& path = request.path;
  std::string file;
  if (path == "/") {
    // Browsers ask for HTML; API clients (TGI's POST /, probes) keep their behaviour.
    if (request.Header("accept").find("text/html") == std::string::npos) return false;
    file = "index.html";
  } else if (path == "/dashboard" || path == "/dashboard/") {
    file = "index.html";
  } else if (path.rfind("/dashboard/", 0) == 0 && path != "/dashboard/events") {
    file = path.substr(11);
  } else {
    return false;
  }
  const WebAsset* asset = FindWebAsset(file);
  if (asset == nullptr) {
    SendError(state, writer, ApiError{NotFound("no dashboard file '" + Excerpt(file) + "'"), "", false});
    return true;
  }
  state.metrics->CountResponse(200);
  writer.Send(200, std::string(asset->content_type), std::string(asset->body),
              {{"Content-Security-Policy", kContentSecurityPolicy},
               {"Cache-Control", "no-cache"},
               {"X-Content-Type-Options", "nosniff"}});
  return true;
}

void StreamDashboardEvents(RouteState& state, const HttpRequest& request,
                           std::shared_ptr<ResponseWriter> writer) {
  if (state.feed == nullptr) {
    return SendError(state, *writer, ApiError{Unimplemented("this server has no dashboard feed"), "", false});
  }
  auto interval_ms = IntParam(request, "interval_ms", 250, 100, 10000);
  if (!interval_ms.ok()) return SendError(state, *writer, interval_ms.error);
  auto max_steps = IntParam(request, "max_steps", 200, 1, int(DashboardFeed::kMaxSteps));
  if (!max_steps.ok()) return SendError(state, *writer, max_steps.error);
  state.metrics->CountResponse(200);
  writer->StartStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  auto subscription =
      std::make_shared<Subscription>(state, writer, *interval_ms.value / 1000.0, size_t(*max_steps.value));
  subscription->Start();
}

void HandleAdvisor(RouteState& state, const HttpRequest& request, ResponseWriter& writer) {
  if (state.step_model == nullptr) {
    return SendError(state, writer, ApiError{Unimplemented("this server has no step-time model"), "", false});
  }
  const int context = std::max(2, state.ctx.max_context);
  AdviceQuery q;
  q.max_seqs = state.engine->options().max_seqs;
  q.max_batch_tokens = state.engine->options().max_batch_tokens;
  auto questions = IntParam(request, "questions", 5, 1, 4096);
  auto tokens = IntParam(request, "tokens", 64, 1, context);
  auto prompt_tokens = IntParam(request, "prompt_tokens", 32, 1, context);
  auto combined = IntParam(request, "combined_prompt_tokens", 0, 0, 1 << 30);
  for (const Parsed<int>* p : {&questions, &tokens, &prompt_tokens, &combined}) {
    if (!p->ok()) return SendError(state, writer, p->error);
  }
  q.questions = *questions.value;
  q.tokens = *tokens.value;
  q.prompt_tokens = *prompt_tokens.value;
  q.combined_prompt_tokens = *combined.value > 0 ? *combined.value : q.questions * q.prompt_tokens;
  const StepTimeFit fit = state.step_model->Fit();
  const Advice advice = Advise(q, fit);
  json modes = json::array();
  for (const ModePrediction& m : advice.modes) {
    modes.push_back({{"name", m.name}, {"wall_s", m.wall_s}, {"ttft_s", m.ttft_s}, {"steps", m.steps}});
  }
  json body = {{"questions", q.questions},
               {"tokens", q.tokens},
               {"prompt_tokens", q.prompt_tokens},
               {"combined_prompt_tokens", q.combined_prompt_tokens},
               {"limits", {{"max_seqs", q.max_seqs}, {"max_batch_tokens", q.max_batch_tokens}}},
               {"step_time_model", FitJson(fit)},
               {"modes", std::move(modes)},
               {"recommended", advice.recommended},
               {"reason", advice.reason},
               {"confident", advice.confident},
               {"note", advice.note}};
  SendJson(state, writer, 200, body);
}

void HandleSplit(RouteState& state, const HttpRequest& request, ResponseWriter& writer) {
  if (!state.split_questions) {
    return SendError(
        state, writer,
        ApiError{Unimplemented("this server was started without a question splitter"), "", false});
  }
  auto body = ParseJsonObject(request.body);
  if (!body.ok()) return SendError(state, writer, body.error);
  FieldReader f(*body.value);
  const std::optional<std::string> read = f.String("text");
  if (f.failed()) return SendError(state, writer, f.error());
  if (!read) {
    return SendError(state, writer, ApiError::Field("text", "text must be a string (the combined prompt)"));
  }
  const std::string& text = *read;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return SendError(state, writer, ApiError::Field("text", "text is empty"));
  }
  const SplitQuestionsResult split = state.split_questions(text);
  // Prompt tokens as the chat route will count them: the model's template around one user message.
  auto chat_tokens = [&](const std::string& content) -> int64_t {
    auto prompt =
        state.ctx.chat_template->Apply(json::array({{{"role", "user"}, {"content", content}}}), true);
    if (!prompt.ok()) return -1;
    auto ids = EncodePrompt(state.ctx, *prompt, "text");
    return ids.ok() ? int64_t(ids.value->size()) : -1;
  };
  json prompt_tokens = json::array();
  for (const std::string& p : split.prompts) prompt_tokens.push_back(chat_tokens(p));
  SendJson(state, writer, 200,
           {{"preamble", split.preamble},
            {"questions", split.questions},
            {"kind", split.kind},
            {"prompts", split.prompts},
            {"prompt_tokens", std::move(prompt_tokens)},
            {"combined_prompt_tokens", chat_tokens(text)}});
}

}  // namespace lockstep::server
