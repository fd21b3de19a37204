#include "test_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "server/sse.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {

ServerProcess::ServerProcess(const std::string& model, const std::vector<std::string>& extra_args,
                             int max_open_files) {
  log_path_ = ::lockstep::testing::MakeTempDir("lockstep-serve") + "/serve.log";
  std::vector<std::string> args = {
      ::lockstep::testing::LockstepBinary(), "serve", "-m", model, "--port", "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (max_open_files > 0) {
      const rlimit limit{static_cast<rlim_t>(max_open_files), static_cast<rlim_t>(max_open_files)};
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = log();
    const size_t serving = text.find("lockstep: serving");
    const size_t at = serving == std::string::npos ? serving : text.find("on http://127.0.0.1:", serving);
    if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
      port_ = std::atoi(text.c_str() + at + std::strlen("on http://127.0.0.1:"));
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int ServerProcess::Wait() {
  if (pid_ <= 0) return -1000;
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : -999;
}

int Connect(int port, int receive_buffer_bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (receive_buffer_bytes > 0) {  // before connecting, so the advertised TCP window starts small
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(receive_buffer_bytes));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

namespace {

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string BuildRequest(const std::string& method, const std::string& path, const std::string& body,
                         const std::map<std::string, std::string>& headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& [k, v] : headers) {
    req += k + ": " + v + "\r\n";
    has_type = has_type || k == "Content-Type";
  }
  if (!body.empty() || method == "POST") {
    if (!has_type) req += "Content-Type: application/json\r\n";
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return req + "\r\n" + body;
}

}  // namespace

int SendAndLeaveOpen(int port, const std::string& path, const nlohmann::json& body,
                     int receive_buffer_bytes) {
  const int fd = Connect(port, receive_buffer_bytes);
  if (fd < 0) return -1;
  if (!SendAll(fd, BuildRequest("POST", path, body.dump(), {}))) {
    close(fd);
    return -1;
  }
  return fd;
}

namespace {

// Incremental response reader: status line + headers, then body bytes (de-chunked) handed to a sink.
class ResponseReader {
 public:
  explicit ResponseReader(int fd) : fd_(fd) {}

  bool ReadHead(HttpResponse& r) {
    while (buf_.find("\r\n\r\n") == std::string::npos) {
      if (!Fill()) return false;
    }
    const size_t end = buf_.find("\r\n\r\n");
    std::istringstream head(buf_.substr(0, end));
    buf_.erase(0, end + 4);
    std::string line;
    std::getline(head, line);
    if (line.size() < 12) return false;
    r.status = std::atoi(line.c_str() + 9);
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    chunked_ = r.headers["transfer-encoding"] == "chunked";
    if (r.headers.count("content-length")) remaining_ = std::stoll(r.headers["content-length"]);
    return true;
  }

  // Next body piece; false at the end of the body.
  bool ReadBody(std::string& out) {
    out.clear();
    if (done_) return false;
    if (!chunked_) {
      if (remaining_ == 0) return (done_ = true, false);
      if (buf_.empty() && !Fill()) return (done_ = true, false);
      size_t n = buf_.size();
      if (remaining_ > 0)
        n = std::min<size_t>(n, static_cast<size_t>(remaining_)), remaining_ -= static_cast<long long>(n);
      out = buf_.substr(0, n);
      buf_.erase(0, n);
      return true;
    }
    while (buf_.find("\r\n") == std::string::npos) {
      if (!Fill()) return (done_ = true, false);
    }
    const size_t size = std::stoul(buf_.substr(0, buf_.find("\r\n")), nullptr, 16);
    buf_.erase(0, buf_.find("\r\n") + 2);
    while (buf_.size() < size + 2) {
      if (!Fill()) return (done_ = true, false);
    }
    out = buf_.substr(0, size);
    buf_.erase(0, size + 2);
    if (size == 0) return (done_ = true, false);
    return true;
  }

  // What is buffered after the response read so far, plus everything until the connection ends (or a
  // receive times out).
  std::string Rest() {
    while (Fill()) {
    }
    return std::exchange(buf_, "");
  }

 private:
  bool Fill() {
    char tmp[8192];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  std::string buf_;
  bool chunked_ = false;
  long long remaining_ = -1;
  bool done_ = false;
};

}  // namespace

nlohmann::json HttpResponse::Json() const { return nlohmann::json::parse(body, nullptr, false); }

HttpResponse Request(int port, const std::string& method, const std::string& path, const std::string& body,
                     const std::map<std::string, std::string>& headers) {
  HttpResponse r;
  const int fd = Connect(port);
  if (fd < 0) return r;
  SendAll(fd, BuildRequest(method, path, body, headers));  // a server may answer (413) before reading it all
  {
    ResponseReader reader(fd);
    if (reader.ReadHead(r)) {
      std::string piece;
      while (reader.ReadBody(piece)) r.body += piece;
    }
  }
  close(fd);
  return r;
}

HttpResponse RawRequest(int port, const std::string& bytes, bool head_only, std::string* rest) {
  HttpResponse r;
  const int fd = Connect(port);
  if (fd < 0) return r;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  SendAll(fd, bytes);
  {
    ResponseReader reader(fd);
    if (reader.ReadHead(r) && !head_only) {
      std::string piece;
      while (reader.ReadBody(piece)) r.body += piece;
    }
    if (rest != nullptr) *rest = reader.Rest();
  }
  close(fd);
  return r;
}

std::vector<std::string> Stream(int port, const std::string& path, const nlohmann::json& body,
                                const std::function<bool(size_t, const std::string&)>& on_event,
                                int* status) {
  std::vector<std::string> events;
  const int fd = Connect(port);
  if (fd < 0) return events;
  HttpResponse head;
  if (SendAll(fd, BuildRequest("POST", path, body.dump(), {}))) {
    ResponseReader reader(fd);
    if (reader.ReadHead(head)) {
      SseParser parser;
      std::string piece;
      bool stop = false;
      while (!stop && reader.ReadBody(piece)) {
        for (auto& e : parser.Feed(piece)) {
          events.push_back(e.data);
          if (on_event && !on_event(events.size() - 1, e.data)) {
            stop = true;
            break;
          }
        }
      }
      if (!stop && head.status != 200) events.push_back(piece);
    }
  }
  if (status) *status = head.status;
  close(fd);
  return events;
}

double MetricValue(const std::string& text, const std::string& sample) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(sample + " ", 0) == 0) return std::stod(line.substr(sample.size() + 1));
  }
  return -1;
}

}  // namespace lockstep::server::testing
