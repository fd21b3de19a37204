// Readiness and drain for balancers: GET /ready is 200 while serving and turns 503 the moment SIGTERM starts
// a drain, while GET /health (liveness) stays 200; during --drain-grace new connections and requests are
// still admitted; after it new connections are refused, a request on an already open keep-alive connection
// gets 503 with Retry-After, the in-flight stream and the queued requests finish, and the process exits 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sends `request` on an open connection and reads one whole response (headers + Content-Length body).
std::string Exchange(int fd, const std::string& request) {
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return "";
  std::string got;
  char buf[4096];
  for (;;) {
    const size_t end = got.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t cl = got.find("Content-Length: ");
      const size_t length = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
      if (got.size() >= end + 4 + length) return got;
    }
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

TEST(ServerDrainTest, ReadyTurns503AtOnceWhileTheGraceStillServes) {
  constexpr double kGrace = 3.0;  // long enough for the checks inside it even on a loaded machine
  // One sequence at a time, so that the queued requests keep the server busy well past the grace. How long a
  // 240-token completion takes differs tenfold between an idle Zen 5 and a loaded CI core, so the test times
  // one first and queues enough of them for the grace plus 3 s of work even if the load around the test
  // eases and they run three times faster than the timed one.
  ServerProcess server(SlowModel(),
                       {"-t", "1", "--max-seqs", "1", "--drain-grace", "3", "--drain-timeout", "600"});
  ASSERT_TRUE(server.ok()) << server.log();
  const int port = server.port();
  auto ready = Request(port, "GET", "/ready");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.Json()["status"], "ready");
  EXPECT_EQ(Request(port, "GET", "/health").Json()["status"], "ok");

  // A stream in flight when the drain starts, and long requests queued behind it: 240 tokens each, or as many
  // as take about a second where that is fewer (at least 16; in a sanitized build 240 take minutes).
  nlohmann::json long_body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 16}, {"ignore_eos", true}, {"stream", false}};
  const double sixteen_s = SecondsForOneRequest(port, "/v1/completions", long_body);
  ASSERT_FALSE(HasFailure());
  long_body["max_tokens"] = std::clamp(static_cast<int>(16 / std::max(sixteen_s, 0.001)), 16, 240);
  nlohmann::json whole = long_body;  // answered (200) only when done
  long_body["stream"] = true;
  const double one_s = SecondsForOneRequest(port, "/v1/completions", whole);
  ASSERT_FALSE(HasFailure());
  // A keep-alive connection opened before the drain (as a balancer keeps them), after the timing above so
  // that the server does not close it as idle (after 60 s) where the timing took long (a sanitized build).
  const int keep = Connect(port);
  ASSERT_GE(keep, 0);
  EXPECT_EQ(Exchange(keep, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
  const int kQueued = std::clamp(static_cast<int>(3 * (kGrace + 3.0) / std::max(one_s, 0.01)) + 1, 2, 200);
  std::atomic<bool> started{false};
  std::vector<std::string> events;
  std::thread client([&] {
    events = Stream(port, "/v1/completions", long_body, [&](size_t, const std::string&) {
      started = true;
      return true;
    });
  });
  for (int i = 0; i < 5000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(started);
  std::vector<int> queued;
  for (int i = 0; i < kQueued; ++i) queued.push_back(SendAndLeaveOpen(port, "/v1/completions", whole));
  ASSERT_TRUE(WaitForMetric(port, "lockstep_num_requests_waiting", kQueued));

  const auto sigterm = Clock::now();
  server.Signal(SIGTERM);
  HttpResponse not_ready;
  for (int i = 0; i < 200; ++i) {
    not_ready = Request(port, "GET", "/ready");
    if (not_ready.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(not_ready.status, 503) << not_ready.body;
  EXPECT_EQ(not_ready.Json()["status"], "draining");
  EXPECT_TRUE(not_ready.headers.count("retry-after")) << "503 without Retry-After";
  const auto health = Request(port, "GET", "/health");
  EXPECT_EQ(health.status, 200) << "liveness must hold during a drain";
  EXPECT_EQ(health.Json()["status"], "draining");
  // Still admitted in the grace: a new connection and a new request (queued behind the others).
  const int late = SendAndLeaveOpen(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_GE(late, 0);
  EXPECT_LT(SecondsSince(sigterm), kGrace) << "the checks above took longer than the grace";

  // After the grace: new connections refused; a request on the old keep-alive connection gets 503.
  while (Connect(port) >= 0 && SecondsSince(sigterm) < kGrace + 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(SecondsSince(sigterm), kGrace - 0.1) << "connections were refused before the grace ended";
  EXPECT_LT(Connect(port), 0);
  const std::string body = R"({"prompt":"Once","max_tokens":2})";
  const std::string on_old = Exchange(keep,
                                      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                      "application/json\r\nContent-Length: " +
                                          std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(on_old.rfind("HTTP/1.1 503", 0), 0u) << "no 503 on an open connection after the grace (was the "
                                                    "queue already empty?): '"
                                                 << on_old << "'";
  EXPECT_NE(on_old.find("Retry-After:"), std::string::npos) << on_old;
  close(keep);

  // Everything admitted before the listener closed finishes.
  client.join();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  queued.push_back(late);
  for (const int fd : queued) {
    const std::string response = Exchange(fd, "");
    EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
    close(fd);
  }
  EXPECT_EQ(server.Wait(), 0) << server.log();
}

TEST(ServerDrainTest, NegativeGraceIsRefused) {
  ServerProcess server(TinyModel(), {"--drain-grace", "-1"});
  EXPECT_FALSE(server.ok());
  EXPECT_NE(server.log().find("--drain-grace"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace lockstep::server::testing
