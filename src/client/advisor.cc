#include "client/advisor.h"

#include <cstdio>

namespace lockstep::client {

using nlohmann::json;

namespace {

// Type-checked reads of the advisor's answer; each names the field on error.
Status Want(const json& j, const char* field, json::value_t a, json::value_t b = json::value_t::discarded) {
  if (!j.is_object() || !j.contains(field))
    return InvalidArgument(std::string("advisor: no field '") + field + "'");
  const json::value_t t = j[field].type();
  const bool number = a == json::value_t::number_float &&
                      (t == json::value_t::number_integer || t == json::value_t::number_unsigned);
  if (t != a && t != b && !number)
    return InvalidArgument(std::string("advisor: field '") + field + "' has the wrong type");
  return Status::Ok();
}

Status ReadDouble(const json& j, const char* field, double* out) {
  LOCKSTEP_RETURN_IF_ERROR(Want(j, field, json::value_t::number_float));
  *out = j[field].get<double>();
  return Status::Ok();
}

template <typename Int>
Status ReadInt(const json& j, const char* field, Int* out) {
  LOCKSTEP_RETURN_IF_ERROR(Want(j, field, json::value_t::number_unsigned, json::value_t::number_integer));
  *out = j[field].get<Int>();
  return Status::Ok();
}

Status ReadString(const json& j, const char* field, std::string* out) {
  LOCKSTEP_RETURN_IF_ERROR(Want(j, field, json::value_t::string));
  *out = j[field].get<std::string>();
  return Status::Ok();
}

std::string Seconds(double s) {
  char buf[32];
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  }
  return buf;
}

}  // namespace

const ModeAdvice* LatencyAdvice::Mode(const std::string& name) const {
  for (const ModeAdvice& m : modes) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

Result<LatencyAdvice> ParseAdvice(const json& body) {
  LatencyAdvice a;
  if (!body.is_object()) return InvalidArgument("advisor: the answer is not a JSON object");
  LOCKSTEP_RETURN_IF_ERROR(ReadInt(body, "questions", &a.questions));
  LOCKSTEP_RETURN_IF_ERROR(ReadInt(body, "tokens", &a.tokens));
  LOCKSTEP_RETURN_IF_ERROR(ReadInt(body, "prompt_tokens", &a.prompt_tokens));
  LOCKSTEP_RETURN_IF_ERROR(ReadInt(body, "combined_prompt_tokens", &a.combined_prompt_tokens));
  LOCKSTEP_RETURN_IF_ERROR(ReadString(body, "recommended", &a.recommended));
  LOCKSTEP_RETURN_IF_ERROR(ReadString(body, "reason", &a.reason));
  LOCKSTEP_RETURN_IF_ERROR(ReadString(body, "note", &a.note));
  LOCKSTEP_RETURN_IF_ERROR(Want(body, "confident", json::value_t::boolean));
  a.confident = body["confident"].get<bool>();
  LOCKSTEP_RETURN_IF_ERROR(Want(body, "modes", json::value_t::array));
  for (const json& m : body["modes"]) {
    ModeAdvice mode;
    LOCKSTEP_RETURN_IF_ERROR(ReadString(m, "name", &mode.name));
    LOCKSTEP_RETURN_IF_ERROR(ReadDouble(m, "wall_s", &mode.wall_s));
    LOCKSTEP_RETURN_IF_ERROR(ReadDouble(m, "ttft_s", &mode.ttft_s));
    LOCKSTEP_RETURN_IF_ERROR(ReadInt(m, "steps", &mode.steps));
    a.modes.push_back(std::move(mode));
  }
  for (const char* name : {"combined", "parallel", "sequential"}) {
    if (a.Mode(name) == nullptr)
      return InvalidArgument(std::string("advisor: no prediction for mode '") + name + "'");
  }
  LOCKSTEP_RETURN_IF_ERROR(Want(body, "step_time_model", json::value_t::object));
  const json& fit = body["step_time_model"];
  LOCKSTEP_RETURN_IF_ERROR(ReadDouble(fit, "intercept_s", &a.intercept_s));
  LOCKSTEP_RETURN_IF_ERROR(ReadDouble(fit, "per_decode_row_s", &a.per_decode_row_s));
  LOCKSTEP_RETURN_IF_ERROR(ReadDouble(fit, "per_prefill_row_s", &a.per_prefill_row_s));
  LOCKSTEP_RETURN_IF_ERROR(ReadDouble(fit, "per_attended_position_s", &a.per_attended_position_s));
  LOCKSTEP_RETURN_IF_ERROR(ReadInt(fit, "samples", &a.samples));
  LOCKSTEP_RETURN_IF_ERROR(ReadDouble(fit, "rms_relative_error", &a.rms_relative_error));
  return a;
}

boost::asio::awaitable<Result<LatencyAdvice>> FetchAdvice(const OpenAiClient& client,
                                                          const AdviceQuery& query,
                                                          CancellationToken* token) {
  const ClientOptions& options = client.options();
  std::string path =
      "/advisor?questions=" + std::to_string(query.questions) + "&tokens=" + std::to_string(query.tokens);
  if (query.prompt_tokens > 0) path += "&prompt_tokens=" + std::to_string(query.prompt_tokens);
  if (query.combined_prompt_tokens > 0) {
    path += "&combined_prompt_tokens=" + std::to_string(query.combined_prompt_tokens);
  }
  HttpRequest request{"GET", ServerRoot(options.base_url).WithPath(path), {}, ""};
  request.headers.emplace_back("Accept", "application/json");
  if (!options.api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + options.api_key);
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (request.url.tls()) {
    auto made = MakeTlsContext(options.tls);
    if (!made.ok()) co_return made.status();
    tls = *made;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeout_s));
  auto response =
      co_await Fetch(request, tls, deadline, token, 1 << 20, options.connect_timeout_s, options.resolver);
  if (!response.ok()) co_return response.status();
  const int status = response->head.status;
  json body = json::parse(response->body, nullptr, false);
  if (status != 200) {
    std::string message = "HTTP " + std::to_string(status) + " from " + request.url.ToString();
    if (body.is_object() && body.contains("error") && body["error"].is_object() &&
        body["error"].contains("message") && body["error"]["message"].is_string()) {
      message += ": " + body["error"]["message"].get<std::string>();
    }
    if (status == 404 || status == 405) {
      co_return NotFound(message + " (the latency advisor needs a lockstep server)");
    }
    co_return Status(status == 401 ? StatusCode::kUnauthenticated : StatusCode::kInvalidArgument, message);
  }
  if (body.is_discarded())
    co_return InvalidArgument("advisor: the answer from " + request.url.ToString() + " is not JSON");
  co_return ParseAdvice(body);
}

std::string FormatAdvice(const LatencyAdvice& a) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%d questions x %d tokens (prompt ~%d tokens each, combined %d):\n",
                a.questions, a.tokens, a.prompt_tokens, a.combined_prompt_tokens);
  out += line;
  for (const ModeAdvice& m : a.modes) {
    std::snprintf(line, sizeof line, "  %-10s %10s  (first token %s, %lld steps)%s\n", m.name.c_str(),
                  Seconds(m.wall_s).c_str(), Seconds(m.ttft_s).c_str(), static_cast<long long>(m.steps),
                  m.name == a.recommended ? "  <- use this" : "");
    out += line;
  }
  out += "advice: " + a.reason + "\n";
  if (!a.confident) out += "caution: " + a.note + "\n";
  std::snprintf(
      line, sizeof line,
      "step time model: %.3f ms + %.4f ms/decode row + %.4f ms/prefill row + %.3f ns/attended position "
      "(%lld steps, rms error %.0f %%)\n",
      a.intercept_s * 1e3, a.per_decode_row_s * 1e3, a.per_prefill_row_s * 1e3,
      a.per_attended_position_s * 1e9, static_cast<long long>(a.samples), a.rms_relative_error * 100);
  out += line;
  return out;
}

}  // namespace lockstep::client
