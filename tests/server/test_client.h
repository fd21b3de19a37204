// Test helpers for the end-to-end server tests: a `lockstep serve` child process on a free loopback port, and
// a minimal blocking HTTP/1.1 client over real sockets (whole responses, chunked decoding, SSE streams that
// can be abandoned midway). Test-only; each object is used by one thread.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::server::testing {

class ServerProcess {
 public:
  // Starts `lockstep serve -m model --port 0 <extra args>` and waits until it is ready (its "serving" line).
  // max_open_files > 0 lowers the child's RLIMIT_NOFILE (`ulimit -n`) first.
  ServerProcess(const std::string& model, const std::vector<std::string>& extra_args, int max_open_files = 0);
  ~ServerProcess();  // SIGKILL if still running
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string log() const;
  // Sends a signal; Wait() returns the exit code (or -signal).
  void Signal(int sig);
  int Wait();

 private:
  int pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

struct HttpResponse {
  int status = 0;                              // 0 = no response (connection failed or closed early)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  nlohmann::json Json() const;                 // parsed body (discarded value on failure)
};

// One request on a fresh connection (Connection: close).
HttpResponse Request(int port, const std::string& method, const std::string& path,
                     const std::string& body = "", const std::map<std::string, std::string>& headers = {});
inline HttpResponse Post(int port, const std::string& path, const nlohmann::json& body) {
  return Request(port, "POST", path, body.dump());
}

// Streams a request and returns the SSE data payloads. on_event(i, data) may return false to hang up at once
// (the socket is closed without reading further).
std::vector<std::string> Stream(int port, const std::string& path, const nlohmann::json& body,
                                const std::function<bool(size_t, const std::string&)>& on_event = nullptr,
                                int* status = nullptr);

// Sends `bytes` unchanged on a fresh connection and reads one response; with head_only the body is not read
// (a HEAD response announces a Content-Length it does not send). `rest` (if given) receives whatever the
// server sent after that response until it closed the connection or 2 s passed.
HttpResponse RawRequest(int port, const std::string& bytes, bool head_only = false,
                        std::string* rest = nullptr);

// A raw connected socket (for slow-client and keep-alive tests); -1 on failure. receive_buffer_bytes > 0 sets
// SO_RCVBUF before connecting (a small TCP window).
int Connect(int port, int receive_buffer_bytes = 0);

// POSTs `body` to `path` on a fresh raw connection and leaves it open without reading the response (a client
// that is queued, slow or gone quiet); returns the socket, or -1 when connecting or sending failed.
int SendAndLeaveOpen(int port, const std::string& path, const nlohmann::json& body,
                     int receive_buffer_bytes = 0);

// The value of a metric sample line `name{labels} value` in a /metrics text (-1 when absent).
double MetricValue(const std::string& metrics_text, const std::string& sample);

}  // namespace lockstep::server::testing
