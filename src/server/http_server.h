// HttpServer: asynchronous HTTP/1.1 on Boost.Beast/Asio. A small pool of I/O threads runs every connection;
// an idle keep-alive connection costs a socket and a few buffers, never a thread. Each connection is a
// strand (a Session, http_session.h): its reads, writes and callbacks never run concurrently.
//
// Per connection: read headers (header timeout; idle timeout between keep-alive requests) → read the body
// (body timeout; Content-Length or chunked bodies above max_body_bytes get 413 and the connection is closed)
// → call the handler with the request and a ResponseWriter. While the response is produced the connection
// keeps a read pending so that a client that goes away is noticed at once (ResponseWriter::OnClose), also
// while the request is still queued. Responses are either whole (Send) or streamed with chunked transfer
// encoding (StartStream / Write / End; HTTP/1.0 clients get an unchunked stream and Connection: close).
//
// Every write of a response must complete within write_timeout_s, or the connection is closed (and OnClose
// runs): a client that stops reading cannot pin a request and grow its output queue.
//
// Requests the HTTP layer refuses itself (http_request.h: malformed or ambiguous framing 400, headers too
// large 431, body too large 413, unknown transfer coding 501) are answered with a body from
// HttpServerOptions::protocol_error_body and the connection is closed. HEAD responses carry the headers of
// the response (Content-Length included) and no body. An exception escaping the handler is logged and
// answered 500; one escaping any other I/O callback is logged and the I/O thread runs on.
//
// Connections: at most max_connections are open. When one more arrives, the connection that has been idle
// longest (waiting for the first byte of a request) is closed to make room; when none is idle, the newcomer
// gets 503 + Retry-After and is closed. Accept failures (out of file descriptors: EMFILE/ENFILE) close the
// longest-idle connection, back off (10 ms doubling to 1 s) instead of retrying at once, and are logged at
// most once a second with the number of failures since the last line.
//
// ResponseWriter methods are thread-safe: they post to the connection's strand. Stop() closes the listener
// (StopAccepting) and then every connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "server/http_request.h"

namespace lockstep::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A whole response (Content-Length). Ignored after the response was started or the client went away.
  virtual void Send(int status, const std::string& content_type, std::string body,
                    HeaderList headers = {}) = 0;
  // Starts a streamed response; then Write() pieces and End() it.
  virtual void StartStream(int status, const std::string& content_type, HeaderList headers = {}) = 0;
  virtual void Write(std::string data) = 0;
  virtual void End() = 0;
  // Runs fn on the connection's strand (serialises per-request state without locks).
  virtual void Post(std::function<void()> fn) = 0;
  // Runs fn on the strand after `seconds` unless the returned cancel function was called first.
  virtual std::function<void()> PostAfter(double seconds, std::function<void()> fn) = 0;
  // fn runs once on the strand if the client disconnects before the response ends (immediately if it already
  // has). Only one callback is kept.
  virtual void OnClose(std::function<void()> fn) = 0;
  virtual bool closed() const = 0;
};

using HttpHandler = std::function<void(HttpRequest request, std::shared_ptr<ResponseWriter> writer)>;

// A writer passing everything to `writer` and adding `headers` to its response (Send / StartStream).
std::shared_ptr<ResponseWriter> WithHeaders(std::shared_ptr<ResponseWriter> writer, HeaderList headers);

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  int io_threads = 2;
  double header_timeout_s = 10;
  double body_timeout_s = 30;
  double idle_timeout_s = 60;
  double write_timeout_s = 30;  // per write of a response, counted from when it starts
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  int max_connections = 0;  // open connections at most; 0 = DefaultMaxConnections()
  // The JSON body of a protocol error; `path` is the request's path when it was parsed that far ("" if not).
  // Unset: an OpenAI-style error body.
  std::function<std::string(const ProtocolError& error, const std::string& path)> protocol_error_body;
};

// The default connection limit: the soft RLIMIT_NOFILE (`ulimit -n`) less 64 descriptors kept for the
// process's own files (model, logs, engine), at least 16.
int DefaultMaxConnections();

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. Returns the bound port. Errors name the address.
  Result<int> Start();
  // Closes the listening socket; open connections continue.
  void StopAccepting();
  // Closes every connection and joins the I/O threads. Idempotent.
  void Stop();
  // Requests whose response is not yet written out: ended by the handler (End(), Send()) and its last byte
  // handed to the socket, or the connection closed.
  int64_t active_requests() const;
  // Open connections (closing ones included).
  int64_t connections() const;
  int port() const { return port_; }

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// "HTTP/1.1 200 OK"-style reason phrase (Beast's, in static storage; "<unknown-status>" for a code it does
// not know).
std::string_view HttpReason(int status);

}  // namespace lockstep::server
