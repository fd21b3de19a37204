#include "server/api_error.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace lockstep::server {

int HttpStatusFor(const ApiError& error, ApiFlavor flavor) {
  const bool tgi = flavor == ApiFlavor::kTgi;
  if (error.http_status != 0) return error.http_status;
  if (error.malformed_json) return 400;
  switch (error.status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return tgi ? 422 : 400;
    case StatusCode::kResourceExhausted:
      return tgi ? 429 : 503;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return tgi ? 424 : 500;
  }
}

namespace {

void OpenAiTypeAndCode(const ApiError& error, std::string* type, std::string* code) {
  *type = "invalid_request_error";
  *code = "";
  switch (error.status.code()) {
    case StatusCode::kOutOfRange:
      *code = "context_length_exceeded";
      break;
    case StatusCode::kResourceExhausted:
      *type = "server_error";
      *code = "server_overloaded";
      break;
    case StatusCode::kUnavailable:
      *type = "server_error";
      *code = "service_unavailable";
      break;
    case StatusCode::kUnauthenticated:
      *code = "invalid_api_key";
      break;
    case StatusCode::kNotFound:
      *type = "not_found_error";
      *code = "not_found";
      break;
    case StatusCode::kDeadlineExceeded:
      *type = "server_error";
      *code = "timeout";
      break;
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnimplemented:
      if (error.malformed_json) *code = "invalid_json";
      break;
    default:
      *type = "server_error";
      *code = "internal_error";
      break;
  }
}

std::string TgiType(const ApiError& error) {
  if (error.http_status == 403) return "forbidden";
  switch (error.status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return "validation";
    case StatusCode::kResourceExhausted:
      return "overloaded";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kUnauthenticated:
      return "authentication";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kDeadlineExceeded:
      return "timeout";
    default:
      return "generation";
  }
}

// llama.cpp's error types, by HTTP status.
const char* LlamaCppType(int status) {
  switch (status) {
    case 400:
    case 405:
    case 413:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 501:
      return "not_supported_error";
    case 503:
      return "unavailable_error";
    default:
      return "server_error";
  }
}

}  // namespace

std::string ErrorBody(const ApiError& error, ApiFlavor flavor) {
  nlohmann::json body;
  if (flavor == ApiFlavor::kTgi) {
    body = {{"error", error.status.message()}, {"error_type", TgiType(error)}};
  } else if (flavor == ApiFlavor::kLlamaCpp) {
    const int status = HttpStatusFor(error, flavor);
    body["error"] = {{"code", status},
                     {"message", error.status.message()},
                     {"type", LlamaCppType(status)},
                     {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)}};
  } else {
    std::string type, code;
    OpenAiTypeAndCode(error, &type, &code);
    if (!error.code.empty()) code = error.code;
    body["error"] = {{"message", error.status.message()},
                     {"type", type},
                     {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
                     {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  }
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HeaderList ErrorHeaders(const ApiError& error, ApiFlavor flavor) {
  const int status = HttpStatusFor(error, flavor);
  if (status == 503 || status == 429)
    return {{"Retry-After", std::to_string(std::max(1, error.retry_after_s))}};
  if (status == 401) return {{"WWW-Authenticate", "Bearer"}};
  return {};
}

int RetryAfterSeconds(int64_t waiting, int64_t running, double mean_run_s) {
  if (!(mean_run_s > 0)) return 1;
  const double drain_s = static_cast<double>(std::max<int64_t>(0, waiting) + 1) * mean_run_s /
                         static_cast<double>(std::max<int64_t>(1, running));
  return static_cast<int>(std::clamp(std::ceil(drain_s), 1.0, 60.0));
}

void SendApiError(ResponseWriter& writer, const ApiError& error, ApiFlavor flavor) {
  writer.Send(HttpStatusFor(error, flavor), "application/json", ErrorBody(error, flavor),
              ErrorHeaders(error, flavor));
}

}  // namespace lockstep::server
