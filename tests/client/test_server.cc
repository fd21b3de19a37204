#include "client/test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace lockstep::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::string Bio(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string s(data, n);
  BIO_free(bio);
  return s;
}

void AddExt(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("X509V3_EXT_conf_nid failed");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string StatusLine(int status) {
  const char* reason = "OK";
  switch (status) {
    case 206:
      reason = "Partial Content";
      break;
    case 302:
      reason = "Found";
      break;
    case 400:
      reason = "Bad Request";
      break;
    case 404:
      reason = "Not Found";
      break;
    case 416:
      reason = "Range Not Satisfiable";
      break;
    case 429:
      reason = "Too Many Requests";
      break;
    case 500:
      reason = "Internal Server Error";
      break;
    case 503:
      reason = "Service Unavailable";
      break;
    default:
      break;
  }
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
}

// 127.0.0.1:port.
sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// A TCP socket listening on 127.0.0.1 on a free port (set in *port) with `backlog`; throws naming `who`.
int ListenOnLoopback(int backlog, const std::string& who, int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = LoopbackAddress(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, backlog) != 0) {
    close(fd);
    throw std::runtime_error(who + ": bind/listen failed");
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

TestCert MakeSelfSignedCert(const std::string& dns_name, const std::string& ip) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 4242);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600L * 24);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(dns_name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExt(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExt(cert, NID_subject_key_identifier, "hash");
  std::string san = "DNS:" + dns_name;
  if (!ip.empty()) san += ",IP:" + ip;
  AddExt(cert, NID_subject_alt_name, san.c_str());
  X509_sign(cert, key, EVP_sha256());
  BIO* cb = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cb, cert);
  BIO* kb = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
  TestCert out{Bio(cb), Bio(kb)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

struct TestHttpServer::Impl {
  int listen_fd = -1;
  std::unique_ptr<asio::ssl::context> tls;
};

TestHttpServer::TestHttpServer(Handler handler, const TestCert* cert)
    : handler_(std::move(handler)), impl_(std::make_unique<Impl>()) {
  if (cert != nullptr) {
    tls_ = true;
    impl_->tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    impl_->tls->use_certificate_chain(asio::buffer(cert->cert_pem));
    impl_->tls->use_private_key(asio::buffer(cert->key_pem), asio::ssl::context::pem);
  }
  impl_->listen_fd = ListenOnLoopback(128, "test server", &port_);
  accept_thread_ = std::thread([this] {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
      }
      pollfd p{impl_->listen_fd, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept(impl_->listen_fd, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  });
}

TestHttpServer::~TestHttpServer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  close(impl_->listen_fd);
}

SilentListener::SilentListener() { fd_ = ListenOnLoopback(16, "silent listener", &port_); }

SilentListener::~SilentListener() { close(fd_); }

BlackHoleListener::BlackHoleListener() {
  fd_ = ListenOnLoopback(0, "black-hole listener", &port_);
  const sockaddr_in addr = LoopbackAddress(port_);
  // Connect until one connection is not made within 200 ms: the queue is full (Linux queues backlog + 1).
  std::string error = "the kernel still completes connections beyond the backlog";
  for (int i = 0; i < 8; ++i) {
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      pollfd p{c, POLLOUT, 0};
      if (errno == EINPROGRESS && poll(&p, 1, 200) == 0) {
        close(c);  // the connection request was dropped: the queue is full
        return;
      }
      int so_error = errno == EINPROGRESS ? 0 : errno;
      socklen_t size = sizeof(so_error);
      if (so_error == 0) getsockopt(c, SOL_SOCKET, SO_ERROR, &so_error, &size);
      if (so_error != 0) {
        close(c);
        error = std::string("connect failed: ") + std::strerror(so_error);
        break;
      }
    }
    queued_.push_back(c);
  }
  for (int c : queued_) close(c);
  close(fd_);
  throw std::runtime_error("black-hole listener: " + error);
}

BlackHoleListener::~BlackHoleListener() {
  for (int c : queued_) close(c);
  close(fd_);
}

struct HangingResolver::State {
  std::string hung;
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;  // guarded by mutex
  int lookups = 0;        // guarded by mutex
};

HangingResolver::HangingResolver(std::string hung) : state_(std::make_shared<State>()) {
  state_->hung = std::move(hung);
}

HangingResolver::~HangingResolver() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->released = true;
  }
  state_->cv.notify_all();
}

client::HostResolver HangingResolver::resolver() const {
  return [state = state_](const std::string& host, int port) -> Result<std::vector<asio::ip::tcp::endpoint>> {
    std::unique_lock<std::mutex> lock(state->mutex);
    ++state->lookups;
    if (host != state->hung) {
      return std::vector<asio::ip::tcp::endpoint>{
          {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)}};
    }
    state->cv.wait_for(lock, std::chrono::seconds(60), [&] { return state->released; });
    return Unavailable("cannot resolve " + host + ": the test's resolver gave no answer");
  };
}

int HangingResolver::lookups() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lookups;
}

std::string BlackHoleListener::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string TestHttpServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<TestRequest> TestHttpServer::seen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_;
}

bool TestHttpServer::Wait(int ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  return !stop_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
}

void TestHttpServer::Serve(int fd) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io, asio::ip::tcp::v4(), fd);
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls;
  boost::system::error_code ec;
  if (tls_) {
    tls = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket, *impl_->tls);
    tls->handshake(asio::ssl::stream_base::server, ec);
    if (ec) return;  // e.g. the client rejected our certificate
  }
  auto write = [&](const std::string& data) {
    if (tls) {
      asio::write(*tls, asio::buffer(data), ec);
    } else {
      asio::write(socket, asio::buffer(data), ec);
    }
    return !ec;
  };
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  if (tls) {
    http::read(*tls, buffer, req, ec);
  } else {
    http::read(socket, buffer, req, ec);
  }
  if (ec) return;
  TestRequest request{std::string(req.method_string()), std::string(req.target()), {}, req.body()};
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    request.headers[name] = std::string(f.value());
  }
  ++requests_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seen_.push_back(request);
  }
  const TestResponse response = handler_(request);
  if (response.delay_before_head_ms > 0 && !Wait(response.delay_before_head_ms)) return;
  std::string head = StatusLine(response.status);
  for (const auto& [k, v] : response.headers) head += k + ": " + v + "\r\n";
  if (response.chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else {
    size_t total = 0;
    for (const auto& p : response.pieces) total += p.size();
    head += "Content-Length: " + std::to_string(total) + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  if (!write(head)) return;
  for (size_t i = 0; i < response.pieces.size(); ++i) {
    if (i > 0 && response.delay_between_pieces_ms > 0 && !Wait(response.delay_between_pieces_ms)) return;
    const std::string& p = response.pieces[i];
    if (p.empty()) continue;
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", p.size());
    if (!write(response.chunked ? std::string(size) + p + "\r\n" : p)) return;
  }
  if (response.chunked && !response.break_off) write("0\r\n\r\n");
  if (tls) tls->shutdown(ec);
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

std::vector<std::string> ChatSsePieces(const std::vector<std::string>& pieces, int completion_tokens) {
  using nlohmann::json;
  auto chunk = [](json delta, json finish) {
    json c = {{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "test"}};
    c["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}});
    return "data: " + c.dump() + "\n\n";
  };
  std::vector<std::string> out;
  out.push_back(chunk({{"role", "assistant"}}, nullptr));
  for (const auto& p : pieces) out.push_back(chunk({{"content", p}}, nullptr));
  out.push_back(chunk(json::object(), "stop"));
  if (completion_tokens >= 0) {
    json u = {{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"choices", json::array()}};
    u["usage"] = {{"prompt_tokens", 7},
                  {"completion_tokens", completion_tokens},
                  {"total_tokens", 7 + completion_tokens}};
    out.push_back("data: " + u.dump() + "\n\n");
  }
  out.push_back("data: [DONE]\n\n");
  return out;
}

TestResponse ModelListResponse(const std::string& id) {
  TestResponse r;
  r.pieces = {R"({"data":[{"id":")" + id + R"("}]})"};
  return r;
}

TestResponse ChatSseResponse(const std::vector<std::string>& pieces, int completion_tokens, int delay_ms) {
  TestResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.pieces = ChatSsePieces(pieces, completion_tokens);
  r.chunked = true;
  r.delay_between_pieces_ms = delay_ms;
  return r;
}

}  // namespace lockstep::testing
