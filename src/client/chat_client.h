// OpenAiClient: streamed chat completions against any OpenAI-compatible server (lockstep, llama.cpp, vLLM,
// hosted APIs) over http or https. Each Chat() is one logical request: it streams (SSE), records the time to
// first token and the arrival time of every content chunk, takes token counts from the server's usage when
// given (else counts content chunks), and retries connection errors, 408/429/502/503/504 with exponential
// backoff and jitter honouring Retry-After — but only while no content has arrived. Each attempt has the
// per-request timeout; a cancelled token aborts the request at once (kCancelled).
//
// The base URL is the API root: "http://host:8080/v1"; a URL with no path gets "/v1" appended.
// Thread-safety: the client is immutable after Create(); Chat() may run concurrently from many coroutines.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/asio_awaitable.h"
#include "client/cancellation.h"
#include "client/http_connection.h"
#include "client/retry.h"
#include "client/url.h"

namespace lockstep::client {

struct ClientOptions {
  Url base_url;         // API root, e.g. http://127.0.0.1:8080/v1
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  TlsOptions tls;
  double timeout_s = 600;  // per attempt: connect + the whole streamed response
  RetryPolicy retry;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatRequest {
  std::string model;  // may be "" for servers that ignore it
  std::vector<ChatMessage> messages;
  int max_tokens = 0;  // 0 = the server's default
  std::optional<double> temperature;
  bool ignore_eos = false;                          // the common extension (lockstep, llama.cpp, vLLM)
  nlohmann::json extra = nlohmann::json::object();  // more fields merged into the body
};

struct ChatResult {
  Status status;        // OK, or why the request failed (after retries)
  int http_status = 0;  // of the last attempt (0 = no response)
  std::string content;
  std::string finish_reason;  // "stop", "length", ... ("" if the server sent none)
  int prompt_tokens = -1;     // from usage; -1 when the server did not report it
  int completion_tokens = 0;  // from usage, else the number of content chunks
  bool usage_reported = false;
  int attempts = 0;
  Clock::time_point start;            // when the successful (or last) attempt began
  double ttft_s = 0;                  // first content chunk, seconds after start (0 if none)
  double duration_s = 0;              // end of the response, seconds after start
  std::vector<double> token_times_s;  // arrival of each content chunk, seconds after start
};

// Called with each content delta as it arrives (on the I/O thread).
using DeltaCallback = std::function<void(const std::string& delta)>;

// Normalizes a user-given server URL into the API root (adds "/v1" to a bare host).
Result<Url> ApiBaseUrl(const std::string& text);

class OpenAiClient {
 public:
  static Result<std::unique_ptr<OpenAiClient>> Create(ClientOptions options);

  boost::asio::awaitable<ChatResult> Chat(const ChatRequest& request, CancellationToken* token,
                                          DeltaCallback on_delta = {}) const;
  // GET {base}/models: the model ids the server lists.
  boost::asio::awaitable<Result<std::vector<std::string>>> ListModels(CancellationToken* token) const;

  const ClientOptions& options() const { return options_; }
  // The JSON body Chat() sends (exposed for tests and --dry-run).
  static nlohmann::json RequestBody(const ChatRequest& request);

 private:
  OpenAiClient(ClientOptions options, std::shared_ptr<boost::asio::ssl::context> tls)
      : options_(std::move(options)), tls_(std::move(tls)) {}
  boost::asio::awaitable<void> RunAttempt(const std::string& body, CancellationToken* token,
                                          const DeltaCallback& on_delta, ChatResult* result,
                                          std::optional<double>* retry_after) const;
  Headers CommonHeaders() const;

  ClientOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // null for http
};

// Waits `seconds` on the current executor; returns false if the token was cancelled first.
boost::asio::awaitable<bool> SleepFor(double seconds, CancellationToken* token);

}  // namespace lockstep::client
