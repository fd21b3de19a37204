// Server behaviour around slow or early peers: GET /health (and the API) answer 503 while the model loads,
// and a client that stops reading a stream has its connection closed after --write-timeout (its request
// cancelled) instead of pinning it forever.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "server/server.h"

namespace lockstep::server::testing {
namespace {

TEST(ServerLoadingTest, HealthAndApiAnswer503UntilTheModelIsLoaded) {
  ServerOptions options;
  options.model_path = TinyModel();
  options.port = 0;
  options.compute_threads = 1;
  options.api_key = "secret";
  options.quiet = true;
  HttpResponse health_while_loading;
  HttpResponse api_while_loading;
  options.on_listening = [&](int port) {
    // Start() is blocked in here: the socket is bound, the model not loaded yet.
    health_while_loading = Request(port, "GET", "/health");
    api_while_loading = Request(port, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":1})",
                                {{"Authorization", "Bearer secret"}});
  };
  auto server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto port = (*server)->Start();
  ASSERT_TRUE(port.ok()) << port.status().ToString();

  EXPECT_EQ(health_while_loading.status, 503) << health_while_loading.body;
  EXPECT_EQ(health_while_loading.Json()["status"], "loading");
  EXPECT_EQ(api_while_loading.status, 503) << api_while_loading.body;
  EXPECT_TRUE(api_while_loading.Json().contains("error")) << api_while_loading.body;

  const HttpResponse ready = Request(*port, "GET", "/health");  // never behind the API key
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.Json()["status"], "ok");
  (*server)->Stop();
}

TEST(ServerOptionsTest, TimeoutsMustBePositive) {
  ServerOptions options;
  options.model_path = TinyModel();
  options.write_timeout_s = 0;
  auto server = Server::Create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("--write-timeout"), std::string::npos)
      << server.status().ToString();
}

// Reads whatever the peer sends until EOF or `limit` passes; *closed says whether EOF (or a reset) was seen.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds limit, bool* closed) {
  std::string data;
  *closed = false;
  const timeval tv{0, 100 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      *closed = true;
      break;
    }
  }
  return data;
}

TEST(ServerSlowClientTest, AClientThatStopsReadingIsCutOffAndItsRequestCancelled) {
  ServerProcess server(SlowModel(), {"-t", "1", "--write-timeout", "0.5"});
  ASSERT_TRUE(server.ok()) << server.log();
  const int port = server.port();
  // Far more output than the kernel's socket buffers hold (up to 4 MiB on Linux loopback) long before the
  // generation ends: 64 choices × 150 tokens, each event with 20 top logprobs, no EOS. A tiny receive window
  // (1 KiB, set before connecting) makes the server's writes back up within a few events.
  const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                               {"max_tokens", 150},
                               {"n", 64},
                               {"logprobs", true},
                               {"top_logprobs", 20},
                               {"ignore_eos", true},
                               {"stream", true}};
  const int fd = SendAndLeaveOpen(port, "/v1/chat/completions", body, 1024);
  ASSERT_GE(fd, 0);

  // Do not read. The server must give up on the stalled write, close the connection and cancel the request.
  ASSERT_TRUE(WaitForMetric(port, "lockstep_sequences_cancelled_total", 64)) << server.log();
  bool closed = false;
  const std::string received = ReadUntilClosed(fd, std::chrono::seconds(20), &closed);
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_EQ(received.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(WaitForIdleEngine(port));
  EXPECT_EQ(Request(port, "GET", "/health").status, 200);
}

}  // namespace
}  // namespace lockstep::server::testing
