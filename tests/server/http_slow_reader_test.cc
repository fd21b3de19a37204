// HttpServer's write timeout (http_server.h): a client that stops reading has its connection closed once a
// write of the response has waited write_timeout_s, whether the response is whole (already ended by the
// handler) or a stream (its OnClose callback then runs, which is how a request is cancelled), and the
// request no longer counts as active. End-to-end with the engine: ServerSlowClientTest.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

// Polls `done` every millisecond for up to 30 s.
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 30000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

TEST(HttpWriteTimeoutTest, AClientThatStopsReadingIsClosedAfterTheWriteTimeout) {
  // 16 MiB: more than loopback TCP buffers hold (a few MiB) for a client with a 4 KiB receive window.
  const std::string piece(size_t(1) << 20, 'x');
  std::atomic<int> handled{0};
  std::atomic<bool> stream_closed{false};
  HttpServerOptions options;
  options.write_timeout_s = 0.5;
  HttpServer http(options, [&](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
    if (request.path == "/whole") {
      std::string body;
      for (int i = 0; i < 16; ++i) body += piece;
      writer->Send(200, "text/plain", std::move(body));
    } else {  // a stream that never ends, as a generation the client stopped reading
      writer->OnClose([&] { stream_closed = true; });
      writer->StartStream(200, "text/plain");
      for (int i = 0; i < 16; ++i) writer->Write(piece);
    }
    handled++;
  });
  const Result<int> port = http.Start();
  ASSERT_TRUE(port.ok()) << port.status().ToString();

  for (const char* path : {"/whole", "/stream"}) {
    const int before = handled.load();
    const int fd = Connect(*port, /*receive_buffer_bytes=*/4096);
    ASSERT_GE(fd, 0);
    const std::string request = std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(WaitUntil([&] { return handled.load() > before; })) << path;
    // The client reads nothing: the server gives up on its stalled write, closes, and stops counting it.
    EXPECT_TRUE(WaitUntil([&] { return http.connections() == 0 && http.active_requests() == 0; }))
        << path << ": " << http.connections() << " connections, " << http.active_requests() << " active";
    close(fd);
  }
  EXPECT_TRUE(stream_closed) << "the stream's OnClose did not run";
  http.Stop();
}

}  // namespace
}  // namespace lockstep::server::testing
