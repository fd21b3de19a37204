// soak_bench: a soak test of `lockstep serve` (not run by CI). It starts the real server as a child process,
// then for several rounds runs many concurrent streaming chat clients (lockstep's own client library), a
// third of which hang up at a random point of their stream. After each round it waits for the engine to go
// idle and reports, as JSON on stdout: requests completed / cancelled by their client / failed, the server's
// count of cancelled sequences, the KV blocks once idle (from the dashboard feed's snapshot: used must be
// back to 0, every block free or held by the prefix cache), the engine's running/waiting counts, and the
// server's resident memory (VmRSS), so leaks and stuck sequences show up as numbers that grow round after
// round.
//
//   soak_bench [--model FILE.gguf] [--shape tiny] [--clients 128] [--rounds 5] [--max-tokens 48]
//              [--hangup-fraction 0.33] [--seed 1] [-- extra serve flags...]
// Without --model it writes a random model of --shape with `lockstep make-model`. Exit status 1 when a
// request failed, KV was left in use, or the server died.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/asio_awaitable.h"
#include "client/chat_client.h"

namespace {

using nlohmann::json;
namespace asio = boost::asio;

struct Flags {
  std::string model;
  std::string shape = "tiny";
  int clients = 128;
  int rounds = 5;
  int max_tokens = 48;
  double hangup_fraction = 1.0 / 3;
  uint64_t seed = 1;
  std::vector<std::string> serve_args = {"--max-seqs", "64", "-t", "2"};
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "soak_bench: %s\n(see the comment at the top of bench/soak_bench.cc)\n", why.c_str());
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") {
      f.model = next();
    } else if (a == "--shape") {
      f.shape = next();
    } else if (a == "--clients") {
      f.clients = std::stoi(next());
    } else if (a == "--rounds") {
      f.rounds = std::stoi(next());
    } else if (a == "--max-tokens") {
      f.max_tokens = std::stoi(next());
    } else if (a == "--hangup-fraction") {
      f.hangup_fraction = std::stod(next());
    } else if (a == "--seed") {
      f.seed = std::stoull(next());
    } else if (a == "--") {
      f.serve_args.assign(argv + i + 1, argv + argc);
      break;
    } else {
      Usage("unknown flag " + a);
    }
  }
  if (f.clients < 1 || f.rounds < 1 || f.max_tokens < 2) Usage("--clients, --rounds >= 1, --max-tokens >= 2");
  return f;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The server child: `lockstep serve -m MODEL --port 0 ARGS`, its log in a file.
struct ServerChild {
  pid_t pid = -1;
  int port = 0;
  std::string log;

  bool Start(const std::string& model, const std::vector<std::string>& extra, const std::string& dir) {
    log = dir + "/serve.log";
    std::vector<std::string> args = {LOCKSTEP_BINARY, "serve", "-m", model, "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid = fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 3000; ++i) {
      const std::string text = Slurp(log);
      const size_t at = text.find("on http://127.0.0.1:", text.find("lockstep: serving"));
      if (text.find("lockstep: serving") != std::string::npos && at != std::string::npos) {
        port = std::atoi(text.c_str() + at + std::strlen("on http://127.0.0.1:"));
        return port > 0;
      }
      if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  bool Alive() const { return pid > 0 && kill(pid, 0) == 0 && waitpid(pid, nullptr, WNOHANG) == 0; }
  double RssMib() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return -1;
  }
  ~ServerChild() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

// A blocking TCP connection to 127.0.0.1:port, or -1.
int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

// GET path → body ("" on failure). Blocking, one connection.
std::string HttpGet(int port, const std::string& path) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

// The first event of GET /dashboard/events (the "snapshot": engine counters, KV blocks), then hangs up.
json DashboardSnapshot(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return json();
  const std::string req = "GET /dashboard/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[8192];
  json snapshot;
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
    out.append(buf, static_cast<size_t>(n));
    const size_t at = out.find("event: snapshot\ndata: ");
    const size_t end = at == std::string::npos ? at : out.find('\n', at + 22);
    if (end != std::string::npos) {
      snapshot = json::parse(out.substr(at + 22, end - at - 22), nullptr, false);
      break;
    }
  }
  close(fd);
  return snapshot.is_discarded() ? json() : snapshot;
}

double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

struct RoundResult {
  int completed = 0, cancelled = 0, failed = 0;
  std::vector<std::string> failures;  // first few reasons
  double seconds = 0;
};

RoundResult RunRound(const lockstep::client::OpenAiClient& client, const Flags& flags, std::mt19937_64& rng) {
  using lockstep::client::CancellationToken;
  RoundResult result;
  const int n = flags.clients;
  std::vector<std::unique_ptr<CancellationToken>> tokens;
  std::vector<int> hangup_after(static_cast<size_t>(n), 0);  // deltas before hanging up; 0 = never
  std::uniform_real_distribution<double> coin(0, 1);
  std::uniform_int_distribution<int> when(1, flags.max_tokens - 1);
  for (int i = 0; i < n; ++i) {
    tokens.push_back(std::make_unique<CancellationToken>());
    if (coin(rng) < flags.hangup_fraction) hangup_after[static_cast<size_t>(i)] = when(rng);
  }
  const auto start = std::chrono::steady_clock::now();
  asio::io_context io;
  for (int i = 0; i < n; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          lockstep::client::ChatRequest req;
          req.messages = {{"user", "Tell me story number " + std::to_string(i) + "."}};
          req.max_tokens = flags.max_tokens;
          req.temperature = 0.8;
          req.ignore_eos = true;
          int deltas = 0;
          CancellationToken* token = tokens[static_cast<size_t>(i)].get();
          const int hangup = hangup_after[static_cast<size_t>(i)];
          const auto r = co_await client.Chat(req, token, [&](const std::string&) {
            if (hangup > 0 && ++deltas == hangup) token->Cancel();
          });
          if (hangup > 0 && r.status.code() == lockstep::StatusCode::kCancelled) {
            ++result.cancelled;
          } else if (r.status.ok()) {
            ++result.completed;
          } else {
            ++result.failed;
            if (result.failures.size() < 5) result.failures.push_back(r.status.ToString());
          }
        },
        [](std::exception_ptr) {});
  }
  io.run();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("lockstep-soak-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  std::string model = flags.model;
  if (model.empty()) {
    model = dir + "/" + flags.shape + ".gguf";
    const std::string cmd = std::string(LOCKSTEP_BINARY) + " make-model --shape " + flags.shape + " -o " +
                            model + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) Usage("make-model failed: " + cmd);
  }
  ServerChild server;
  if (!server.Start(model, flags.serve_args, dir)) {
    std::fprintf(stderr, "soak_bench: the server did not start:\n%s\n", Slurp(server.log).c_str());
    return 1;
  }
  lockstep::client::ClientOptions options;
  options.base_url = lockstep::client::ApiBaseUrl("http://127.0.0.1:" + std::to_string(server.port)).value();
  options.timeout_s = 300;
  options.retry.max_retries = 2;
  auto client = lockstep::client::OpenAiClient::Create(options);
  if (!client.ok()) Usage(client.status().ToString());

  std::mt19937_64 rng(flags.seed);
  json rounds = json::array();
  bool ok = true;
  const double rss_start = server.RssMib();
  for (int round = 1; round <= flags.rounds; ++round) {
    const RoundResult r = RunRound(**client, flags, rng);
    // Wait for the engine to go idle (hung-up requests are cancelled within a step).
    std::string metrics;
    for (int i = 0; i < 300; ++i) {
      metrics = HttpGet(server.port, "/metrics");
      if (Metric(metrics, "lockstep_num_requests_running") == 0 &&
          Metric(metrics, "lockstep_num_requests_waiting") == 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const bool alive = server.Alive();
    const json snapshot = DashboardSnapshot(server.port);
    const json engine = snapshot.is_object() ? snapshot.value("engine", json::object()) : json::object();
    json row = {{"round", round},
                {"clients", flags.clients},
                {"completed", r.completed},
                {"cancelled_by_client", r.cancelled},
                {"failed", r.failed},
                {"seconds", r.seconds},
                {"running_after", Metric(metrics, "lockstep_num_requests_running")},
                {"waiting_after", Metric(metrics, "lockstep_num_requests_waiting")},
                {"kv_usage_after", Metric(metrics, "lockstep_kv_cache_usage_ratio")},
                {"kv_blocks_total", engine.value("kv_blocks_total", -1)},
                {"kv_blocks_used_after", engine.value("kv_blocks_used", -1)},
                {"kv_blocks_cached_after", engine.value("kv_blocks_cached", -1)},
                {"kv_blocks_free_after", engine.value("kv_blocks_free", -1)},
                {"sequences_cancelled_total", Metric(metrics, "lockstep_sequences_cancelled_total")},
                {"server_rss_mib", server.RssMib()},
                {"server_alive", alive}};
    if (!r.failures.empty()) row["first_failures"] = r.failures;
    std::fprintf(stderr, "soak: %s\n", row.dump().c_str());
    rounds.push_back(row);
    ok = ok && alive && r.failed == 0 && row["kv_blocks_used_after"] == 0 && row["running_after"] == 0.0 &&
         row["waiting_after"] == 0.0;
    if (!alive) break;
  }
  const json report = {{"bench", "soak"},
                       {"model", model},
                       {"serve_args", flags.serve_args},
                       {"max_tokens", flags.max_tokens},
                       {"hangup_fraction", flags.hangup_fraction},
                       {"server_rss_mib_at_start", rss_start},
                       {"rounds", rounds},
                       {"ok", ok}};
  std::printf("%s\n", report.dump(2).c_str());
  return ok ? 0 : 1;
}
