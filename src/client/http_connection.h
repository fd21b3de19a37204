// HttpConnection: one HTTP/1.1 client connection (plain TCP or TLS through OpenSSL) used with C++20
// coroutines on an Asio executor: Connect, Send one request, ReadHead, then ReadBody piece by piece (chunked
// and content-length bodies, for streaming). Each connection carries one request (Connection: close
// semantics).
//
// TLS: certificates are always verified — the system CA store (OpenSSL's default paths, which honour
// SSL_CERT_FILE / SSL_CERT_DIR) or TlsOptions::ca_file — with SNI and host name (or IP) checking.
// Deadline: every operation fails with kDeadlineExceeded past the deadline given at Connect (SetDeadline
// moves it); looking up the host, connecting and the TLS handshake have a shorter one of their own
// (connect_timeout_s), so a resolver that does not answer, an address that drops connection requests or a
// server that accepts the connection and never answers the handshake — a plain-http port given an https
// URL — fails in seconds, not at the end of the request's deadline. Cancellation: the token aborts the
// connection from any thread (kCancelled); Cancel() on the executor does too. Errors reaching the server
// (resolve, connect, reset) are kUnavailable (retryable by callers: another replica may answer), a look-up
// or connection not done in time too; a failed TLS handshake is not (kInvalidArgument, or kDeadlineExceeded
// when it timed out; the message asks whether the server speaks plain http). Thread-safety: use one
// connection from one coroutine; owned through shared_ptr (the token callback holds a weak_ptr).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <functional>
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

// The default bound on looking up the host, connecting and the TLS handshake, in seconds (the request's
// deadline still applies when it is sooner).
inline constexpr double kDefaultConnectTimeoutS = 15;

// Looks up a host name, blocking: the addresses to try, in order, or an error (kUnavailable). Connect runs
// it on a thread of its own, one per look-up, and stops waiting at the connect deadline or on cancellation;
// a look-up cannot be interrupted, so that thread ends when the resolver gives up and its answer is dropped.
// Not called for an IP address. Called from those threads: must be thread-safe. Empty = SystemResolve;
// tests pass one that hangs or fails.
using HostResolver =
    std::function<Result<std::vector<boost::asio::ip::tcp::endpoint>>(const std::string& host, int port)>;

// The system's resolver (getaddrinfo, as Asio calls it: addresses of configured families only).
Result<std::vector<boost::asio::ip::tcp::endpoint>> SystemResolve(const std::string& host, int port);

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

  // Resolves (with `resolver`, empty = SystemResolve) and connects to url.host:url.port; for https,
  // handshakes with `tls` (required then). The look-up, connecting and the handshake must finish within
  // connect_timeout_s and by `deadline`; later operations by `deadline`.
  static boost::asio::awaitable<Result<std::shared_ptr<HttpConnection>>> Connect(
      const Url& url, std::shared_ptr<boost::asio::ssl::context> tls, Clock::time_point deadline,
      CancellationToken* token, double connect_timeout_s = kDefaultConnectTimeoutS,
      const HostResolver& resolver = {});

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
  // The addresses of url.host, by the current deadline (see HostResolver).
  boost::asio::awaitable<Result<std::vector<boost::asio::ip::tcp::endpoint>>> Resolve(
      const Url& url, const HostResolver& resolver);
  void ArmDeadline();

  std::unique_ptr<Impl> impl_;
  Clock::time_point deadline_;
  bool cancelled_ = false;
  std::unique_ptr<CancellationRegistration> registration_;
};

// Sends one request on a fresh connection and reads the whole response (body capped at max_body bytes).
// Follows no redirects. connect_timeout_s and resolver as for HttpConnection::Connect.
boost::asio::awaitable<Result<HttpResponse>> Fetch(const HttpRequest& request,
                                                   std::shared_ptr<boost::asio::ssl::context> tls,
                                                   Clock::time_point deadline, CancellationToken* token,
                                                   size_t max_body = 64 << 20,
                                                   double connect_timeout_s = kDefaultConnectTimeoutS,
                                                   const HostResolver& resolver = {});

}  // namespace lockstep::client
