#include "client/chat_client.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

#include "base/excerpt.h"
#include "client/affinity_key.h"
#include "client/sse_parser.h"

namespace lockstep::client {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr size_t kMaxErrorBody = 1 << 20;
constexpr size_t kMaxPendingEvent = 8 << 20;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The message of an OpenAI-style {"error": {"message": ...}} or TGI-style {"error": "..."} value `j`, else an
// Excerpt of `raw`, the text it was parsed from. Looks two levels down and never dumps `j`: a server's JSON
// may nest deep enough to overflow a recursive walk.
std::string ErrorMessageOf(const json& j, std::string_view raw) {
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_string()) return Excerpt(e.get_ref<const std::string&>(), 1024);
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return Excerpt(e["message"].get_ref<const std::string&>(), 1024);
  }
  return raw.empty() ? "(empty body)" : Excerpt(raw, 300);
}

std::string ErrorMessage(const std::string& body) {
  return ErrorMessageOf(json::parse(body, nullptr, false), body);
}

StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
    case 404:
    case 413:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
    case 403:
      return StatusCode::kUnauthenticated;
    case 408:
    case 504:
      return StatusCode::kDeadlineExceeded;
    case 429:
      return StatusCode::kResourceExhausted;
    default:
      return StatusCode::kUnavailable;
  }
}

// Applies one parsed chunk (streamed) or whole response (non-streamed) to the result; `raw` is its text.
Status ApplyChunk(const json& j, std::string_view raw, bool streamed, Clock::time_point start,
                  const DeltaCallback& on_delta, ChatResult* result) {
  if (!j.is_object()) return InvalidArgument("server sent a non-object JSON event");
  if (j.contains("error")) return Unavailable("server error mid-stream: " + ErrorMessageOf(j, raw));
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    for (const json& c : j["choices"]) {
      if (c.is_object() && c.contains("index") && c["index"].is_number_integer()) {
        result->choices = std::max(result->choices, c["index"].get<int>() + 1);
      }
    }
    result->choices = std::max(result->choices, 1);
    const json& choice = j["choices"][0];
    const char* key = streamed ? "delta" : "message";
    if (choice.contains(key) && choice[key].is_object()) {
      const json& m = choice[key];
      if (m.contains("content") && m["content"].is_string()) {
        const std::string piece = m["content"].get<std::string>();
        if (!piece.empty()) {
          const double t = SecondsSince(start);
          if (result->token_times_s.empty()) result->ttft_s = t;
          result->token_times_s.push_back(t);
          result->content += piece;
          if (on_delta) on_delta(piece);
        }
      }
    }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
      result->finish_reason = choice["finish_reason"].get<std::string>();
    }
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      result->completion_tokens = u["completion_tokens"].get<int>();
      result->usage_reported = true;
    }
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
      result->prompt_tokens = u["prompt_tokens"].get<int>();
    }
    const json* details = u.contains("prompt_tokens_details") ? &u["prompt_tokens_details"] : nullptr;
    if (details != nullptr && details->is_object() && details->contains("cached_tokens") &&
        (*details)["cached_tokens"].is_number_integer()) {
      result->cached_tokens = (*details)["cached_tokens"].get<int>();
    }
  }
  // llama.cpp's server: "timings": {"prompt_n": prompt tokens computed}.
  if (j.contains("timings") && j["timings"].is_object() && j["timings"].contains("prompt_n") &&
      j["timings"]["prompt_n"].is_number_integer()) {
    result->prompt_computed_tokens = j["timings"]["prompt_n"].get<int>();
  }
  return Status::Ok();
}

// The figures the server did not report, from what it sent: completion tokens as the content chunks received
// (whether the response completed or broke off), cached tokens from llama.cpp's timings.
void CountsFromWhatArrived(ChatResult* result) {
  if (!result->usage_reported) result->completion_tokens = static_cast<int>(result->token_times_s.size());
  if (result->cached_tokens < 0 && result->prompt_computed_tokens >= 0 && result->prompt_tokens >= 0) {
    result->cached_tokens = std::max(0, result->prompt_tokens - result->prompt_computed_tokens);
  }
}

// `j` as JSON text, or an error naming `what` where it holds text that is not UTF-8 (nlohmann's dump() throws
// type_error 316 there).
Result<std::string> JsonText(const json& j, const std::string& what) {
  try {
    return j.dump();
  } catch (const json::exception& e) {
    return InvalidArgument(what + " cannot be sent as JSON: " + e.what());
  }
}

// An attempt in flight on one endpoint, from construction to destruction.
class InFlight {
 public:
  InFlight(EndpointSet* endpoints, size_t index) : endpoints_(endpoints), index_(index) {
    endpoints_->Begin(index_);
  }
  ~InFlight() { endpoints_->End(index_); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  EndpointSet* endpoints_;
  size_t index_;
};

uint64_t RandomSeed() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter++ * 0x9E3779B97F4A7C15ull);
}

}  // namespace

ChatResult NotRunResult() {
  ChatResult r;
  r.status = Internal("the request was not run");
  return r;
}

Result<Url> ApiBaseUrl(const std::string& text) {
  LOCKSTEP_ASSIGN_OR_RETURN(Url url, ParseUrl(text));
  if (url.path == "/") url.path = "/v1";
  return url;
}

Result<std::unique_ptr<OpenAiClient>> OpenAiClient::Create(ClientOptions options) {
  std::shared_ptr<asio::ssl::context> tls;
  if (options.base_url.tls() || !options.tls.ca_file.empty()) {
    LOCKSTEP_ASSIGN_OR_RETURN(tls, MakeTlsContext(options.tls));
  }
  for (const Url& u : options.more_urls) {
    if (u.tls() && !tls) {
      LOCKSTEP_ASSIGN_OR_RETURN(tls, MakeTlsContext(options.tls));
    }
  }
  if (options.timeout_s <= 0) return InvalidArgument("timeout must be positive");
  if (options.connect_timeout_s <= 0) return InvalidArgument("connect timeout must be positive");
  std::vector<Url> urls = {options.base_url};
  urls.insert(urls.end(), options.more_urls.begin(), options.more_urls.end());
  LOCKSTEP_ASSIGN_OR_RETURN(auto endpoints,
                            EndpointSet::Create(std::move(urls), options.retry, RandomSeed()));
  return std::unique_ptr<OpenAiClient>(
      new OpenAiClient(std::move(options), std::move(tls), std::move(endpoints)));
}

json OpenAiClient::RequestBody(const ChatRequest& request) {
  json body = json::object();
  if (!request.model.empty()) body["model"] = request.model;
  json messages = json::array();
  for (const auto& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(messages);
  if (request.max_tokens > 0) body["max_tokens"] = request.max_tokens;
  if (request.temperature.has_value()) body["temperature"] = *request.temperature;
  if (request.ignore_eos) body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  for (const auto& [k, v] : request.extra.items()) body[k] = v;
  return body;
}

Headers OpenAiClient::CommonHeaders() const {
  Headers h;
  if (!options_.api_key.empty()) h.emplace_back("Authorization", "Bearer " + options_.api_key);
  return h;
}

asio::awaitable<void> OpenAiClient::RunAttempt(const Url& base_url, const std::string& body,
                                               const Headers& extra_headers, CancellationToken* token,
                                               const DeltaCallback& on_delta, ChatResult* result,
                                               std::optional<double>* retry_after) const {
  result->start = Clock::now();
  const auto deadline = result->start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(options_.timeout_s));
  HttpRequest req{"POST", base_url.WithPath("/chat/completions"), CommonHeaders(), body};
  req.headers.insert(req.headers.end(), extra_headers.begin(), extra_headers.end());
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("Accept", "text/event-stream");
  auto conn_or = co_await HttpConnection::Connect(req.url, tls_, deadline, token, options_.connect_timeout_s,
                                                  options_.resolver);
  if (!conn_or.ok()) {
    result->status = conn_or.status();
    co_return;
  }
  auto conn = *conn_or;
  if (Status s = co_await conn->Send(req); !s.ok()) {
    result->status = s;
    co_return;
  }
  auto head = co_await conn->ReadHead();
  if (!head.ok()) {
    result->status = head.status();
    co_return;
  }
  result->http_status = head->status;
  std::string pending;
  if (head->status != 200) {
    while (pending.size() < kMaxErrorBody) {
      auto more = co_await conn->ReadBody(&pending);
      if (!more.ok() || !*more) break;
    }
    *retry_after = ParseRetryAfter(head->Header("Retry-After"));
    result->status =
        Status(CodeForHttpStatus(head->status), "HTTP " + std::to_string(head->status) + " from " +
                                                    req.url.ToString() + ": " + ErrorMessage(pending));
    co_return;
  }
  const bool streamed = head->Header("Content-Type").find("text/event-stream") != std::string::npos;
  SseParser parser;
  bool done = false;
  for (;;) {
    pending.clear();
    auto more = co_await conn->ReadBody(&pending);
    if (!more.ok()) {
      result->status = more.status();
      co_return;
    }
    if (!*more) break;
    if (!streamed) {
      result->content.append(pending);  // whole JSON body; parsed below
      if (result->content.size() > kMaxPendingEvent) break;
      continue;
    }
    for (const SseEvent& event : parser.Feed(pending)) {
      if (event.data == "[DONE]") {
        done = true;
        continue;
      }
      json j = json::parse(event.data, nullptr, false);
      if (j.is_discarded()) {
        result->status =
            InvalidArgument("server sent an SSE event that is not JSON: " + Excerpt(event.data, 200));
        co_return;
      }
      if (Status s = ApplyChunk(j, event.data, true, result->start, on_delta, result); !s.ok()) {
        result->status = s;
        co_return;
      }
    }
    if (parser.buffered_bytes() > kMaxPendingEvent) {
      result->status = InvalidArgument("server sent an SSE event larger than 8 MiB");
      co_return;
    }
  }
  if (!streamed) {
    const std::string body = std::move(result->content);
    result->content.clear();
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) {
      result->status = InvalidArgument("server sent a response that is neither SSE nor JSON");
      co_return;
    }
    if (Status s = ApplyChunk(j, body, false, result->start, on_delta, result); !s.ok()) {
      result->status = s;
      co_return;
    }
    done = true;
  }
  (void)done;  // servers differ on [DONE]; the end of the body ends the response either way
  result->duration_s = SecondsSince(result->start);
  result->status = Status::Ok();
}

asio::awaitable<ChatResult> OpenAiClient::Chat(const ChatRequest& request, CancellationToken* token,
                                               DeltaCallback on_delta) const {
  std::string error;
  try {
    co_return co_await SendChat(request, token, std::move(on_delta));
  } catch (const std::exception& e) {
    error = e.what();
  }
  ChatResult failed;
  failed.status = Internal("the request failed: " + error);
  co_return failed;
}

asio::awaitable<ChatResult> OpenAiClient::SendChat(const ChatRequest& request, CancellationToken* token,
                                                   DeltaCallback on_delta) const {
  auto encoded = JsonText(RequestBody(request), "the request");
  if (!encoded.ok()) {
    ChatResult failed;
    failed.status = encoded.status();
    co_return failed;
  }
  const std::string body = std::move(*encoded);
  Headers extra;
  if (options_.send_affinity_key) extra.emplace_back(kAffinityKeyHeader, AffinityKey(request.messages));
  EndpointSet& endpoints = *endpoints_;
  const int max_retries = options_.retry.max_retries + static_cast<int>(endpoints.size()) - 1;
  std::vector<size_t> tried;
  ChatResult result;
  for (int attempt = 0;; ++attempt) {
    const EndpointSet::Choice choice = endpoints.Pick(tried);
    if (choice.wait_s > 0 && !co_await SleepFor(choice.wait_s, token)) {
      result.status = Cancelled("request cancelled");
      co_return result;
    }
    tried.push_back(choice.index);
    result = ChatResult{};
    result.attempts = attempt + 1;
    result.endpoint = endpoints.url(choice.index).ToString();
    std::optional<double> retry_after;
    {
      InFlight in_flight(&endpoints, choice.index);  // ended on an exception too (Chat() catches it)
      co_await RunAttempt(endpoints.url(choice.index), body, extra, token, on_delta, &result, &retry_after);
    }
    CountsFromWhatArrived(&result);  // a stream that broke off too: its chunks arrived
    if (result.status.ok()) {
      endpoints.MarkUp(choice.index);
      co_return result;
    }
    result.duration_s = SecondsSince(result.start);
    if (token != nullptr && token->cancelled()) {
      result.status = Cancelled("request cancelled");
      co_return result;
    }
    const bool endpoint_failed =
        (result.http_status == 0 && result.status.code() == StatusCode::kUnavailable) ||
        IsRetryableStatus(result.http_status);
    if (endpoint_failed) endpoints.MarkDown(choice.index, retry_after);
    if (!result.token_times_s.empty()) {
      result.status = Status(result.status.code(), result.status.message() + " (after " +
                                                       std::to_string(result.token_times_s.size()) +
                                                       " streamed chunks; not re-sent)");
      co_return result;
    }
    if (!endpoint_failed || attempt >= max_retries) co_return result;
  }
}

asio::awaitable<Result<std::vector<std::string>>> OpenAiClient::ListModels(CancellationToken* token,
                                                                           int* http_status) const {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.timeout_s));
  // The first endpoint that answers (they serve one model); one that does not is tried no further here.
  std::vector<size_t> tried;
  HttpRequest req;
  Result<HttpResponse> resp = Unavailable("no endpoint");
  while (tried.size() < endpoints_->size()) {
    const size_t i = endpoints_->Pick(tried).index;
    tried.push_back(i);
    req = HttpRequest{"GET", endpoints_->url(i).WithPath("/models"), CommonHeaders(), ""};
    resp = co_await Fetch(req, tls_, deadline, token, kMaxErrorBody * 8, options_.connect_timeout_s,
                          options_.resolver);
    if (resp.ok() && !IsRetryableStatus(resp->head.status)) break;
    // Not reached (refused, not connected in time) or a retryable status: in backoff, as a chat request would
    // put it, so that the requests that follow start on the endpoint that answered.
    if (resp.ok()) {
      endpoints_->MarkDown(i, ParseRetryAfter(resp->head.Header("Retry-After")));
    } else if (resp.status().code() == StatusCode::kUnavailable) {
      endpoints_->MarkDown(i, std::nullopt);
    }
  }
  if (http_status != nullptr) *http_status = resp.ok() ? resp->head.status : 0;
  if (!resp.ok()) co_return resp.status();
  if (resp->head.status != 200) {
    co_return Status(CodeForHttpStatus(resp->head.status), "HTTP " + std::to_string(resp->head.status) +
                                                               " from " + req.url.ToString() + ": " +
                                                               ErrorMessage(resp->body));
  }
  json j = json::parse(resp->body, nullptr, false);
  std::vector<std::string> ids;
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    co_return InvalidArgument("GET " + req.url.ToString() + ": expected {\"data\": [...]}");
  }
  for (const json& m : j["data"]) {
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  }
  co_return ids;
}

asio::awaitable<Result<int>> OpenAiClient::CountTokens(const std::string& text,
                                                       CancellationToken* token) const {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.timeout_s));
  const Url root = ServerRoot(options_.base_url);  // "/v1/" too: trailing slashes go first
  // llama.cpp reads content and add_special, vLLM prompt and add_special_tokens; lockstep either.
  const json body = {
      {"content", text}, {"add_special", false}, {"prompt", text}, {"add_special_tokens", false}};
  auto encoded = JsonText(body, "the text to count");
  if (!encoded.ok()) co_return encoded.status();
  HttpRequest req{"POST", root.WithPath("/tokenize"), CommonHeaders(), std::move(*encoded)};
  req.headers.emplace_back("Content-Type", "application/json");
  auto resp = co_await Fetch(req, tls_, deadline, token, kMaxErrorBody * 8, options_.connect_timeout_s,
                             options_.resolver);
  if (!resp.ok()) co_return resp.status();
  if (resp->head.status != 200) {
    co_return Status(CodeForHttpStatus(resp->head.status), "HTTP " + std::to_string(resp->head.status) +
                                                               " from " + req.url.ToString() + ": " +
                                                               ErrorMessage(resp->body));
  }
  const json j = json::parse(resp->body, nullptr, false);
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
    co_return InvalidArgument("POST " + req.url.ToString() + ": expected {\"tokens\": [...]}");
  }
  co_return static_cast<int>(j["tokens"].size());
}

asio::awaitable<bool> SleepFor(double seconds, CancellationToken* token) {
  auto ex = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(ex);
  timer->expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  std::weak_ptr<asio::steady_timer> weak = timer;
  CancellationRegistration reg(token, [weak, ex] {
    asio::post(ex, [weak] {
      if (auto t = weak.lock()) t->cancel();
    });
  });
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return !(token != nullptr && token->cancelled());
}

}  // namespace lockstep::client
