#include "client/http_connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

namespace lockstep::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::use_awaitable;
using tcp = asio::ip::tcp;

namespace {

bool IsIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// A failed TLS handshake: not retryable (the same port gives the same answer), with the likeliest cause.
// A plain-http server either waits for a request line until its own timeout (llama.cpp's server: `why` is
// the timeout) or answers the ClientHello with an error page ("wrong version number").
Status TlsHandshakeFailed(const Url& url, const std::string& why, StatusCode code) {
  Url plain = url;
  plain.scheme = "http";
  plain.path = "/";
  return Status(code, "TLS handshake with " + url.HostHeader() + " failed (" + why +
                          "): does the server speak plain http? try " + plain.ToString());
}

std::string SecondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// A host name look-up running on a thread of its own, shared by that thread and the coroutine waiting for it.
struct PendingLookup {
  std::mutex mu;
  // Wakes the coroutine (a post to its executor); emptied, on the coroutine's side, once it stops waiting:
  // the thread then drops the answer and never touches the executor, which may be gone. Guarded by mu.
  std::function<void()> wake;
  std::optional<Result<std::vector<tcp::endpoint>>> answer;  // guarded by mu
};

}  // namespace

Result<std::vector<tcp::endpoint>> SystemResolve(const std::string& host, int port) {
  asio::io_context context;  // a blocking resolve runs getaddrinfo on this thread; no thread of Asio's
  tcp::resolver resolver(context);
  boost::system::error_code ec;
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Unavailable("cannot resolve " + host + ": " + ec.message());
  std::vector<tcp::endpoint> addresses;
  for (const auto& entry : results) addresses.push_back(entry.endpoint());
  if (addresses.empty()) return Unavailable("cannot resolve " + host + ": no address");
  return addresses;
}

struct HttpConnection::Impl {
  explicit Impl(asio::any_io_executor ex) : tcp(ex), lookup_wait(ex) {}
  beast::tcp_stream tcp;
  asio::steady_timer lookup_wait;  // Resolve() waits on it: woken by the look-up's answer or Cancel()
  std::shared_ptr<ssl::context> tls_context;
  std::optional<beast::ssl_stream<beast::tcp_stream&>> tls;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;

  // Runs f on the TLS stream when there is one, else on the TCP stream.
  template <typename F>
  auto With(F&& f) {
    if (tls.has_value()) return f(*tls);
    return f(tcp);
  }
};

Result<std::shared_ptr<ssl::context>> MakeTlsContext(const TlsOptions& options) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (options.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return Unavailable("cannot load the system CA store: " + ec.message());
  } else {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) return InvalidArgument("cannot load CA file '" + options.ca_file + "': " + ec.message());
  }
  return ctx;
}

std::string HttpResponseHead::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

HttpConnection::HttpConnection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpConnection::~HttpConnection() = default;

void HttpConnection::Cancel() {
  cancelled_ = true;
  boost::system::error_code ignored;
  impl_->tcp.socket().close(ignored);
  impl_->lookup_wait.cancel();
}

void HttpConnection::ArmDeadline() {
  if (deadline_ == Clock::time_point::max()) {
    impl_->tcp.expires_never();
  } else {
    impl_->tcp.expires_at(deadline_);
  }
}

Status HttpConnection::ErrorStatus(const std::string& what, const boost::system::error_code& ec) const {
  if (cancelled_) return Cancelled(what + ": request cancelled");
  if (ec == beast::error::timeout || Clock::now() >= deadline_) {
    return Status(StatusCode::kDeadlineExceeded, what + ": timed out");
  }
  if (ec == http::error::partial_message) {
    return Unavailable(what + ": the server closed the connection mid-response (partial message)");
  }
  return Unavailable(what + ": " + ec.message());
}

asio::awaitable<Result<std::vector<tcp::endpoint>>> HttpConnection::Resolve(const Url& url,
                                                                            const HostResolver& resolver) {
  boost::system::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(url.host, ec);
  if (!ec) co_return std::vector<tcp::endpoint>{tcp::endpoint(ip, static_cast<unsigned short>(url.port))};
  // getaddrinfo cannot be interrupted or given a timeout: it runs on a thread of its own, which the
  // coroutine stops waiting for at the deadline or on cancellation (the thread then drops the answer). Not
  // Asio's async_resolve: it runs look-ups one after another on one thread per io_context, so one that
  // hangs would hold up those of every other endpoint.
  auto lookup = std::make_shared<PendingLookup>();
  std::weak_ptr<HttpConnection> weak = shared_from_this();
  auto ex = co_await asio::this_coro::executor;
  lookup->wake = [ex, weak] {
    asio::post(ex, [weak] {
      if (auto conn = weak.lock()) conn->impl_->lookup_wait.cancel();
    });
  };
  struct StopWaiting {  // also when the coroutine is destroyed while it waits (its io_context goes)
    PendingLookup* lookup;
    ~StopWaiting() {
      std::lock_guard lock(lookup->mu);
      lookup->wake = nullptr;
    }
  } stop_waiting{lookup.get()};
  try {
    std::thread([lookup, resolver = resolver ? resolver : HostResolver(SystemResolve), host = url.host,
                 port = url.port] {
      Result<std::vector<tcp::endpoint>> answer = Internal("the look-up of " + host + " failed");
      try {
        answer = resolver(host, port);
      } catch (const std::exception& e) {
        answer = Internal("the look-up of " + host + " failed: " + e.what());
      }
      std::lock_guard lock(lookup->mu);
      if (!lookup->wake) return;  // nobody waits any more
      lookup->answer = std::move(answer);
      lookup->wake();
    }).detach();
  } catch (const std::system_error& e) {
    co_return Unavailable("cannot resolve " + url.host + ": no thread for the look-up: " + e.what());
  }
  impl_->lookup_wait.expires_at(deadline_);
  for (;;) {
    {
      std::lock_guard lock(lookup->mu);
      if (lookup->answer.has_value()) co_return std::move(*lookup->answer);
    }
    if (cancelled_) co_return Cancelled("request cancelled");
    if (Clock::now() >= deadline_) co_return Status(StatusCode::kDeadlineExceeded, "timed out");
    co_await impl_->lookup_wait.async_wait(asio::redirect_error(use_awaitable, ec));
  }
}

asio::awaitable<Result<std::shared_ptr<HttpConnection>>> HttpConnection::Connect(
    const Url& url, std::shared_ptr<ssl::context> tls, Clock::time_point deadline, CancellationToken* token,
    double connect_timeout_s, const HostResolver& resolver) {
  auto ex = co_await asio::this_coro::executor;
  auto conn = std::shared_ptr<HttpConnection>(new HttpConnection(std::make_unique<Impl>(ex)));
  // The look-up, connecting and the handshake run under the sooner of the two deadlines; then the request's
  // own.
  const Clock::time_point connect_deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::clamp(connect_timeout_s, 0.0, 1e8)));
  // What a look-up, connect or handshake that ran out of time says: the connect timeout's, when it came
  // first.
  const std::string timed_out = connect_deadline < deadline ? "no answer within the connect timeout of " +
                                                                  SecondsText(connect_timeout_s) + " s"
                                                            : "timed out";
  conn->deadline_ = std::min(deadline, connect_deadline);
  std::weak_ptr<HttpConnection> weak = conn;
  conn->registration_ = std::make_unique<CancellationRegistration>(token, [weak, ex] {
    asio::post(ex, [weak] {
      if (auto c = weak.lock()) c->Cancel();
    });
  });
  if (token != nullptr && token->cancelled()) co_return Cancelled("request cancelled");
  const std::string where = url.HostHeader();
  auto endpoints = co_await conn->Resolve(url, resolver);
  if (!endpoints.ok()) {
    // A look-up not done in time is unavailable too (another replica's name may resolve).
    if (endpoints.status().code() != StatusCode::kDeadlineExceeded) co_return endpoints.status();
    co_return Unavailable("cannot resolve " + url.host + ": " + timed_out);
  }
  if (conn->cancelled_) co_return Cancelled("request cancelled");
  boost::system::error_code ec;
  conn->ArmDeadline();
  co_await conn->impl_->tcp.async_connect(*endpoints, asio::redirect_error(use_awaitable, ec));
  if (ec) {
    Status error = conn->ErrorStatus("cannot connect to " + where, ec);
    // Not connected in time (an address that drops connection requests, a host whose accept queue is full):
    // unavailable like a refused connection, so that callers retry, on another replica where there is one.
    if (error.code() == StatusCode::kDeadlineExceeded) {
      error = Unavailable("cannot connect to " + where + ": " + timed_out);
    }
    co_return error;
  }
  if (!url.tls()) {
    conn->deadline_ = deadline;
    co_return conn;
  }
  if (tls == nullptr) co_return InvalidArgument("https URL " + url.ToString() + " needs a TLS context");
  Impl& impl = *conn->impl_;
  impl.tls_context = tls;
  impl.tls.emplace(impl.tcp, *tls);
  SSL* native = impl.tls->native_handle();
  if (IsIpLiteral(url.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), url.host.c_str());
  } else {
    SSL_set_tlsext_host_name(native, url.host.c_str());
    SSL_set1_host(native, url.host.c_str());
  }
  conn->ArmDeadline();
  co_await impl.tls->async_handshake(ssl::stream_base::client, asio::redirect_error(use_awaitable, ec));
  if (ec) {
    const long verify = SSL_get_verify_result(native);
    if (verify != X509_V_OK && !conn->cancelled_) {
      co_return Status(StatusCode::kUnauthenticated, "TLS certificate verification failed for " + where +
                                                         ": " + X509_verify_cert_error_string(verify));
    }
    Status error = conn->ErrorStatus("TLS handshake with " + where, ec);
    if (error.code() == StatusCode::kCancelled) co_return error;
    if (error.code() == StatusCode::kDeadlineExceeded) {
      co_return TlsHandshakeFailed(url, timed_out, StatusCode::kDeadlineExceeded);
    }
    co_return TlsHandshakeFailed(url, ec.message(), StatusCode::kInvalidArgument);
  }
  conn->deadline_ = deadline;
  co_return conn;
}

asio::awaitable<Status> HttpConnection::Send(const HttpRequest& request) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(request.url.path);
  req.version(11);
  req.set(http::field::host, request.url.HostHeader());
  req.set(http::field::user_agent, "lockstep-client/0.1");
  for (const auto& [k, v] : request.headers) req.insert(k, v);
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    req.body() = request.body;
    req.prepare_payload();
  }
  boost::system::error_code ec;
  if (cancelled_) co_return Cancelled("request cancelled");
  ArmDeadline();
  co_await impl_->With([&](auto& s) -> asio::awaitable<void> {
    co_await http::async_write(s, req, asio::redirect_error(use_awaitable, ec));
  });
  if (ec) co_return ErrorStatus("sending request to " + request.url.HostHeader(), ec);
  co_return Status::Ok();
}

asio::awaitable<Result<HttpResponseHead>> HttpConnection::ReadHead() {
  boost::system::error_code ec;
  for (;;) {
    impl_->parser.emplace();
    impl_->parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (cancelled_) co_return Cancelled("request cancelled");
    ArmDeadline();
    co_await impl_->With([&](auto& s) -> asio::awaitable<void> {
      co_await http::async_read_header(s, impl_->buffer, *impl_->parser,
                                       asio::redirect_error(use_awaitable, ec));
    });
    if (ec) co_return ErrorStatus("reading response headers", ec);
    const auto& msg = impl_->parser->get();
    if (msg.result_int() >= 100 && msg.result_int() < 200) continue;  // 100 Continue and friends
    HttpResponseHead head;
    head.status = static_cast<int>(msg.result_int());
    head.reason = std::string(msg.reason());
    for (const auto& field : msg)
      head.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    co_return head;
  }
}

asio::awaitable<Result<bool>> HttpConnection::ReadBody(std::string* out) {
  auto& parser = *impl_->parser;
  if (parser.is_done()) co_return false;
  std::array<char, 16384> buf;
  parser.get().body().data = buf.data();
  parser.get().body().size = buf.size();
  boost::system::error_code ec;
  if (cancelled_) co_return Cancelled("request cancelled");
  ArmDeadline();
  co_await impl_->With([&](auto& s) -> asio::awaitable<void> {
    co_await http::async_read_some(s, impl_->buffer, parser, asio::redirect_error(use_awaitable, ec));
  });
  if (ec == http::error::need_buffer) ec = {};
  if (ec == ssl::error::stream_truncated && parser.need_eof()) {
    ec = {};
    parser.put_eof(ec);
  }
  if (ec == http::error::end_of_stream && parser.is_done()) ec = {};
  if (ec) co_return ErrorStatus("reading response body", ec);
  out->append(buf.data(), buf.size() - parser.get().body().size);
  co_return true;
}

asio::awaitable<Result<HttpResponse>> Fetch(const HttpRequest& request, std::shared_ptr<ssl::context> tls,
                                            Clock::time_point deadline, CancellationToken* token,
                                            size_t max_body, double connect_timeout_s,
                                            const HostResolver& resolver) {
  auto conn =
      co_await HttpConnection::Connect(request.url, tls, deadline, token, connect_timeout_s, resolver);
  if (!conn.ok()) co_return conn.status();
  Status sent = co_await (*conn)->Send(request);
  if (!sent.ok()) co_return sent;
  auto head = co_await (*conn)->ReadHead();
  if (!head.ok()) co_return head.status();
  HttpResponse response{std::move(*head), {}};
  for (;;) {
    auto more = co_await (*conn)->ReadBody(&response.body);
    if (!more.ok()) co_return more.status();
    if (!*more) break;
    if (response.body.size() > max_body) {
      co_return ResourceExhausted("response from " + request.url.ToString() + " exceeds " +
                                  std::to_string(max_body) + " bytes");
    }
  }
  co_return response;
}

}  // namespace lockstep::client
