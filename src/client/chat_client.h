// OpenAiClient: streamed chat completions against any OpenAI-compatible server (lockstep, llama.cpp, vLLM,
// hosted APIs) over http or https. Each Chat() is one logical request: it streams (SSE), records the time to
// first token and the arrival time of every content chunk, takes token counts from the server's usage when
// given (else counts content chunks), and retries connection errors, 408/429/502/503/504 with exponential
// backoff and jitter honouring Retry-After — but only while no content has arrived. Each attempt has the
// per-request timeout; a cancelled token aborts the request at once (kCancelled).
//
// Several endpoints (base_url plus more_urls: replicas of one model): each attempt goes to the endpoint with
// the fewest of this client's requests in flight that is not in backoff (client/endpoints.h). A connection
// refused or not made within the connect timeout, or a retryable status, puts that endpoint in backoff and
// the request moves to another endpoint at once (waiting only when every endpoint is in backoff); the retry
// budget grows by one per extra endpoint so that each can be tried. A response that breaks off after content
// has streamed is never re-sent: the request fails (kUnavailable, "... not re-sent"), keeping the content
// received so far. With send_affinity_key, every chat request carries X-Affinity-Key (client/affinity_key.h)
// for balancers.
//
// The base URL is the API root: "http://host:8080/v1"; a URL with no path gets "/v1" appended.
// Thread-safety: the options are immutable after Create(); the endpoints' in-flight and backoff state is
// shared and locked; Chat() may run concurrently from many coroutines.
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
#include "client/endpoints.h"
#include "client/http_connection.h"
#include "client/retry.h"
#include "client/url.h"

namespace lockstep::client {

struct ClientOptions {
  Url base_url;         // API root, e.g. http://127.0.0.1:8080/v1
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  TlsOptions tls;
  double timeout_s = 600;  // per attempt: connect + the whole streamed response
  // Per attempt: looking up the host, connecting and the TLS handshake (within timeout_s too). A connection
  // not made in time is retried like a refused one; a failed or timed-out handshake is not retried.
  double connect_timeout_s = kDefaultConnectTimeoutS;
  HostResolver resolver;  // looks up host names, within connect_timeout_s (empty = SystemResolve)
  RetryPolicy retry;
  std::vector<Url> more_urls;     // further API roots; requests spread over base_url and these
  bool send_affinity_key = true;  // X-Affinity-Key on chat requests (client/affinity_key.h)
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
  // From usage, else the number of content chunks received (also when the response broke off: then status
  // is not OK and this counts the partial answer in `content`).
  int completion_tokens = 0;
  // Prompt tokens the server did not compute (its prefix cache): usage.prompt_tokens_details.cached_tokens,
  // or prompt_tokens - timings.prompt_n (llama.cpp's server); -1 when the server reported neither.
  int cached_tokens = -1;
  int prompt_computed_tokens = -1;  // llama.cpp's timings.prompt_n (-1 when absent)
  int choices = 0;                  // distinct choice indexes seen (n > 1, server-side fan-out)
  bool usage_reported = false;
  int attempts = 0;
  std::string endpoint;               // the API root of the last attempt
  Clock::time_point start;            // when the successful (or last) attempt began
  double ttft_s = 0;                  // first content chunk, seconds after start (0 if none)
  double duration_s = 0;              // end of the response, seconds after start
  std::vector<double> token_times_s;  // arrival of each content chunk, seconds after start
};

// A failed result for a request that was never run (so that no result defaults to OK).
ChatResult NotRunResult();

// Called with each content delta as it arrives (on the I/O thread).
using DeltaCallback = std::function<void(const std::string& delta)>;

// Normalizes a user-given server URL into the API root (adds "/v1" to a bare host).
Result<Url> ApiBaseUrl(const std::string& text);

class OpenAiClient {
 public:
  static Result<std::unique_ptr<OpenAiClient>> Create(ClientOptions options);

  // Never throws: whatever goes wrong inside the request comes back as a failed result (a request that
  // cannot be encoded, such as text that is not UTF-8, as kInvalidArgument; an exception, from on_delta too,
  // as kInternal).
  boost::asio::awaitable<ChatResult> Chat(const ChatRequest& request, CancellationToken* token,
                                          DeltaCallback on_delta = {}) const;
  // GET {base}/models: the model ids the server lists, from the first endpoint that answers; the ones that
  // do not (or answer a retryable status) are put in backoff as Chat() does. *http_status (when given) is
  // the status of the last answer, 0 when no endpoint answered.
  boost::asio::awaitable<Result<std::vector<std::string>>> ListModels(CancellationToken* token,
                                                                      int* http_status = nullptr) const;

  // POST {server root}/tokenize (the API root without its /v1), the route llama.cpp's server, vLLM and
  // lockstep share: how many tokens the server's tokenizer makes of `text`, no special tokens added. An
  // error status when the server has no such route or answers something else.
  boost::asio::awaitable<Result<int>> CountTokens(const std::string& text, CancellationToken* token) const;

  const ClientOptions& options() const { return options_; }
  // The endpoints requests spread over (base_url first).
  EndpointSet& endpoints() const { return *endpoints_; }
  // The JSON body Chat() sends (exposed for tests and --dry-run).
  static nlohmann::json RequestBody(const ChatRequest& request);

 private:
  OpenAiClient(ClientOptions options, std::shared_ptr<boost::asio::ssl::context> tls,
               std::unique_ptr<EndpointSet> endpoints)
      : options_(std::move(options)), tls_(std::move(tls)), endpoints_(std::move(endpoints)) {}
  boost::asio::awaitable<void> RunAttempt(const Url& base_url, const std::string& body,
                                          const Headers& extra_headers, CancellationToken* token,
                                          const DeltaCallback& on_delta, ChatResult* result,
                                          std::optional<double>* retry_after) const;
  boost::asio::awaitable<ChatResult> SendChat(const ChatRequest& request, CancellationToken* token,
                                              DeltaCallback on_delta) const;  // Chat() without the catch
  Headers CommonHeaders() const;

  ClientOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // null for http
  std::unique_ptr<EndpointSet> endpoints_;          // base_url first, then more_urls
};

// Waits `seconds` on the current executor; returns false if the token was cancelled first.
boost::asio::awaitable<bool> SleepFor(double seconds, CancellationToken* token);

}  // namespace lockstep::client
