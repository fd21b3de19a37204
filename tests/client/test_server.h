// TestHttpServer: a small scripted HTTP/1.1 (optionally TLS) server on a free loopback port for the client
// tests. A handler maps each request to a TestResponse (status, headers, body pieces sent with delays), which
// is enough to play an OpenAI streaming server, one that answers 429/503 with Retry-After, one that stalls,
// or a file host with Range support. Each connection is served on its own thread; the destructor stops
// everything (waits in responses end early). Also: a self-signed certificate generator (OpenSSL APIs).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/http_connection.h"

namespace lockstep::testing {

struct TestRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct TestResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> pieces;  // the body; sent chunked when `chunked`, else with Content-Length
  bool chunked = false;
  int delay_before_head_ms = 0;
  int delay_between_pieces_ms = 0;
  bool break_off = false;  // chunked: close the connection after the pieces, without the last chunk
};

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};
// A self-signed P-256 certificate (CA:TRUE) for CN=`dns_name` with SubjectAltNames DNS:dns_name and, when not
// empty, IP:ip.
TestCert MakeSelfSignedCert(const std::string& dns_name, const std::string& ip);

class TestHttpServer {
 public:
  using Handler = std::function<TestResponse(const TestRequest&)>;
  // Starts listening on 127.0.0.1 (free port). With a cert, speaks TLS.
  explicit TestHttpServer(Handler handler, const TestCert* cert = nullptr);
  ~TestHttpServer();

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" (or https).
  std::string url() const;
  int requests() const { return requests_.load(); }
  // Requests seen so far (copies).
  std::vector<TestRequest> seen() const;

 private:
  struct Impl;
  void Serve(int fd);
  bool Wait(int ms);  // false when stopping

  Handler handler_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  bool tls_ = false;
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;             // guarded by mutex_
  std::vector<TestRequest> seen_;     // guarded by mutex_
  std::vector<std::thread> threads_;  // guarded by mutex_
  std::thread accept_thread_;
};

// A loopback port whose connections the kernel accepts (its backlog) and nobody ever reads, answers or
// closes: a plain-http server waiting for a request line (llama.cpp's server) while an https client waits
// for the TLS handshake. Closed by the destructor.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A loopback port that never completes a connection, as a black-holed address or a host too busy to accept:
// its accept queue (backlog 0) holds connections nobody accepts, so the kernel drops every further connection
// request and a client's connect waits until its own timeout. Local, no network. Throws when a probe
// connection still completes. Closed by the destructor.
class BlackHoleListener {
 public:
  BlackHoleListener();
  ~BlackHoleListener();
  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT"

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> queued_;  // the connections that fill the accept queue
};

// Host name look-ups for the client (client::HostResolver) that hang: a look-up of `hung` answers nothing
// until the destructor (or 60 s) and then fails; any other name is 127.0.0.1. Like a DNS server that does not
// answer, without the network.
class HangingResolver {
 public:
  explicit HangingResolver(std::string hung);
  ~HangingResolver();  // ends the hung look-ups
  client::HostResolver resolver() const;
  int lookups() const;  // of any name, so far

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with look-ups still running
};

// An OpenAI chat-completion SSE body: a role chunk, one chunk per piece, a finish chunk, a usage chunk (when
// completion_tokens >= 0), then [DONE].
std::vector<std::string> ChatSsePieces(const std::vector<std::string>& pieces, int completion_tokens = -1);
// GET /v1/models's answer listing one model id.
TestResponse ModelListResponse(const std::string& id);
// A complete streamed chat response (200, text/event-stream, chunked).
TestResponse ChatSseResponse(const std::vector<std::string>& pieces, int completion_tokens = -1,
                             int delay_ms = 0);

}  // namespace lockstep::testing
