// HttpConnection: one HTTP/1.1 client connection (plain TCP or TLS through OpenSSL) used with C++20
// coroutines on an Asio executor: Connect, Send one request, ReadHead, then ReadBody piece by piece (chunked
// and content-length bodies, for streaming). Each connection carries one request (Connection: close
// semantics).
//
// TLS: certificates are always verified — the system CA store (OpenSSL's default paths, which honour
// SSL_CERT_FILE / SSL_CERT_DIR) or TlsOptions::ca_file — with SNI and host name (or IP) checking.
// Deadline: every operation fails with kDeadlineExceeded past the deadline given at Connect (SetDeadline
// moves it); connecting and the TLS handshake have a shorter one of their own (connect_timeout_s), so a
// server that accepts the connection and never answers the handshake — a plain-http port given an https
// URL — fails in seconds, not at the end of the request's deadline. Cancellation: the token aborts the
// connection from any thread (kCancelled); Cancel() on the executor does too. Errors reaching the server
// (resolve, connect, reset) are kUnavailable (retryable by callers: another replica may answer), a connection
// not made in time too (an address that drops connection requests); a failed TLS handshake is not
// (kInvalidArgument, or kDeadlineExceeded when it timed out; the message asks whether the server speaks
// plain http). Thread-safety: use one connection from one coroutine; owned through shared_ptr (the token
// callback holds a weak_ptr).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "client/asio_awaitable.h"
#include "client/cancellation.h"
#include "client/url.h"

namespace lockstep::client {

using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;

// The default bound on connecting plus the TLS handshake, in seconds (the request's deadline still applies
// when it is sooner).
inline constexpr double kDefaultConnectTimeoutS = 15;

struct TlsOptions {
  std::string ca_file;  // PEM bundle to trust instead of the system store ("" = system store)
};

// A TLS client context with verification on; shared by connections (thread-safe once built).
Result<std::shared_ptr<boost::asio::ssl::context>> MakeTlsContext(const TlsOptions& options);

struct HttpRequest {
  std::string method = "GET";
  Url url;
  Headers headers;  // Host, User-Agent and Content-Length are added
  std::string body;
};

struct HttpResponseHead {
  int status = 0;
  std::string reason;
  Headers headers;
  // The first header named `name` (case-insensitive), or "".
  std::string Header(const std::string& name) const;
};

// A complete response (Fetch).
struct HttpResponse {
  HttpResponseHead head;
  std::string body;
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  ~HttpConnection();

  // Resolves and connects to url.host:url.port; for https, handshakes with `tls` (required then). Connecting
  // and the handshake must finish within connect_timeout_s and by `deadline`; later operations by `deadline`.
  static boost::asio::awaitable<Result<std::shared_ptr<HttpConnection>>> Connect(
      const Url& url, std::shared_ptr<boost::asio::ssl::context> tls, Clock::time_point deadline,
      CancellationToken* token, double connect_timeout_s = kDefaultConnectTimeoutS);

  boost::asio::awaitable<Status> Send(const HttpRequest& request);
  boost::asio::awaitable<Result<HttpResponseHead>> ReadHead();
  // Appends the next piece of the body to *out; returns false once the body is complete (nothing appended).
  boost::asio::awaitable<Result<bool>> ReadBody(std::string* out);

  void SetDeadline(Clock::time_point deadline) { deadline_ = deadline; }
  // Aborts pending and later operations (kCancelled). Call on the connection's executor.
  void Cancel();

  struct Impl;

 private:
  explicit HttpConnection(std::unique_ptr<Impl> impl);
  Status ErrorStatus(const std::string& what, const boost::system::error_code& ec) const;
  void ArmDeadline();

  std::unique_ptr<Impl> impl_;
  Clock::time_point deadline_;
  bool cancelled_ = false;
  std::unique_ptr<CancellationRegistration> registration_;
};

// Sends one request on a fresh connection and reads the whole response (body capped at max_body bytes).
// Follows no redirects. connect_timeout_s as for HttpConnection::Connect.
boost::asio::awaitable<Result<HttpResponse>> Fetch(const HttpRequest& request,
                                                   std::shared_ptr<boost::asio::ssl::context> tls,
                                                   Clock::time_point deadline, CancellationToken* token,
                                                   size_t max_body = 64 << 20,
                                                   double connect_timeout_s = kDefaultConnectTimeoutS);

}  // namespace lockstep::client
