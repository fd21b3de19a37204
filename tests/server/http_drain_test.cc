// HttpServer's count of active requests, which a drain waits on before it closes every connection: a
// response counts until its last byte is on the socket, not until the handler's End(), so that a stream's
// last events (an abort chunk, then "[DONE]") survive a drain that ends right after the handler does.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

TEST(HttpServerDrainTest, AStreamCountsAsActiveUntilItsLastByteIsWritten) {
  // 16 MiB queued behind End() for a client with a small receive window that has not read yet: more than
  // loopback TCP buffers hold (a few MiB), so most of it is still queued in the server when End() returns.
  constexpr int kPieces = 16;
  const std::string piece(size_t(1) << 20, 'x');
  const std::string last = "the last piece";
  std::atomic<bool> ended{false};
  HttpServer http(HttpServerOptions{}, [&](HttpRequest, std::shared_ptr<ResponseWriter> writer) {
    writer->StartStream(200, "text/plain");
    for (int i = 0; i < kPieces; ++i) writer->Write(piece);
    writer->Write(last);
    writer->End();
    ended = true;
  });
  const Result<int> port = http.Start();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  const int fd = Connect(*port, /*receive_buffer_bytes=*/4096);
  ASSERT_GE(fd, 0);
  const std::string request = "GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 5000 && !ended; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(ended);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(http.active_requests(), 1) << "the handler has ended, its bytes are still queued";

  // Drain as Server::Stop does: wait for no active request while the client reads, then close everything.
  std::string received;
  std::thread reader([&] {
    char buf[65536];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      received.append(buf, static_cast<size_t>(n));
    }
  });
  for (int i = 0; i < 20000 && http.active_requests() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(http.active_requests(), 0);
  http.Stop();
  reader.join();
  close(fd);
  EXPECT_GT(received.size(), size_t(kPieces) << 20);
  // Chunked encoding: the last piece, then the terminating zero-length chunk.
  EXPECT_NE(received.find(last + "\r\n0\r\n\r\n"), std::string::npos)
      << "the stream was cut: " << received.size() << " bytes, ending in '"
      << received.substr(received.size() > 40 ? received.size() - 40 : 0) << "'";
}

}  // namespace
}  // namespace lockstep::server::testing
