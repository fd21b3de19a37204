// ApiError: THE one place where errors become HTTP statuses and error bodies, for both API flavours.
//
//   StatusCode            OpenAI routes                                   TGI routes
//   kInvalidArgument      400 invalid_request_error (param = the field)   422 validation
//   (malformed JSON)      400 invalid_request_error                       400 validation
//   kOutOfRange           400 invalid_request_error, context_length_exceeded  422 validation
//   kResourceExhausted    503 + Retry-After, server_overloaded            429 overloaded (+ Retry-After)
//   kUnavailable          503 + Retry-After (loading / shutting down)     503 unavailable
//   kUnauthenticated      401 invalid_api_key                             401 authentication
//   (http_status 403)     403 permission_denied (Origin / Host refused)   403 forbidden
//   kNotFound             404 not_found_error (model_not_found: unknown model)  404 not_found
//   kDeadlineExceeded     504 timeout                                     504 timeout
//   kUnimplemented        400 invalid_request_error (unsupported field)   422 validation
//   anything else         500 server_error                                424 generation
// Bodies: OpenAI {"error": {"message", "type", "param", "code"}}; TGI {"error", "error_type"}. llama.cpp's
// native routes (/completion, /props) take OpenAI's statuses with llama.cpp's body {"error": {"code": <the
// HTTP status>, "message", "type", "param"}} (type by status: invalid_request_error, authentication_error,
// permission_error, not_found_error, unavailable_error, server_error).
// Requests past the body limit get 413 from the HTTP layer (http_server.cc) before any route is known.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/excerpt.h"
#include "base/status.h"
#include "server/http_server.h"

namespace lockstep::server {

enum class ApiFlavor { kOpenAI, kTgi, kLlamaCpp };

struct ApiError {
  static constexpr size_t kMaxMessageBytes = 1024;
  static constexpr size_t kMaxParamBytes = 256;

  ApiError() = default;
  // The message and param are cut to kMaxMessageBytes and kMaxParamBytes (Excerpt): both may hold pieces of
  // the request (a bad value, a schema's property names), and an error never repeats a request back.
  ApiError(Status status, std::string param, bool malformed_json = false, std::string code = "")  // NOLINT
      : status(status.message().size() <= kMaxMessageBytes
                   ? std::move(status)
                   : Status(status.code(), Excerpt(status.message(), kMaxMessageBytes))),
        param(param.size() <= kMaxParamBytes ? std::move(param) : Excerpt(param, kMaxParamBytes)),
        malformed_json(malformed_json),
        code(std::move(code)) {}

  Status status;
  std::string param;  // the offending request field ("" = none)
  bool malformed_json = false;
  std::string code;       // OpenAI "code" in place of the status code's default ("" = the default)
  int retry_after_s = 1;  // the Retry-After of a 503 / 429
  int http_status = 0;    // overrides the mapping above (403: a refused Origin or Host)

  static ApiError Forbidden(const std::string& message) {
    ApiError e{Status(StatusCode::kInvalidArgument, message), ""};
    e.http_status = 403;
    e.code = "permission_denied";
    return e;
  }

  static ApiError Field(const std::string& param, const std::string& message) {
    return {InvalidArgument(message), param, false};
  }
};

int HttpStatusFor(const ApiError& error, ApiFlavor flavor);
std::string ErrorBody(const ApiError& error, ApiFlavor flavor);
HeaderList ErrorHeaders(const ApiError& error, ApiFlavor flavor);  // Retry-After where it applies

// Seconds a client refused for a full queue should wait (Retry-After): the time the queue ahead of it takes
// to drain at the current pace — (waiting + 1) requests, `running` at a time, each taking mean_run_s — at
// least 1, at most 60. 1 while no request has finished yet (mean_run_s <= 0).
int RetryAfterSeconds(int64_t waiting, int64_t running, double mean_run_s);
// Sends the error as a whole response (ignored if the response has started).
void SendApiError(ResponseWriter& writer, const ApiError& error, ApiFlavor flavor);

// A value or an ApiError; what request parsing returns.
template <typename T>
struct Parsed {
  std::optional<T> value;
  ApiError error;
  Parsed(T v) : value(std::move(v)) {}         // NOLINT
  Parsed(ApiError e) : error(std::move(e)) {}  // NOLINT
  bool ok() const { return value.has_value(); }
};

}  // namespace lockstep::server
