#include "server/http_server.h"

#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdio>
#include <future>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "server/http_session.h"

namespace lockstep::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

std::string_view HttpReason(int status) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));  // static strings
  return {reason.data(), reason.size()};
}

int DefaultMaxConnections() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 16;
  const int64_t soft = static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
  return static_cast<int>(std::max<int64_t>(16, soft - 64));
}

namespace {

std::string DefaultErrorBody(const ProtocolError& error, const std::string&) {
  std::string message;
  for (char c : error.message) {
    if (c == '"' || c == '\\') message += '\\';
    message += c;
  }
  return R"({"error":{"message":")" + message + R"(","type":"invalid_request_error","param":null,"code":")" +
         error.code + "\"}}";
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler)
      : shared_{.options = std::move(options), .handler = std::move(handler)},
        ioc_(std::max(1, shared_.options.io_threads)),
        accept_strand_(net::make_strand(ioc_)),
        acceptor_(accept_strand_),
        accept_retry_(accept_strand_) {
    HttpServerOptions& own = shared_.options;
    if (own.max_connections <= 0) own.max_connections = DefaultMaxConnections();
    if (!own.protocol_error_body) own.protocol_error_body = DefaultErrorBody;
    shared_.limits.max_body_bytes = own.max_body_bytes;
    shared_.limits.max_header_bytes = own.max_header_bytes;
    shared_.unregister = [this](const std::shared_ptr<Session>& s) { Unregister(s); };
  }

  void Accept();
  void OnAccepted(tcp::socket socket, net::strand<net::io_context::executor_type> strand);
  void OnAcceptError(const beast::error_code& ec);
  // Asks the connection idle longest to close; false when none is idle.
  bool CloseLongestIdle();
  void Register(const std::shared_ptr<Session>& s) {
    std::lock_guard lock(mu_);
    sessions_.insert(s);
  }
  void Unregister(const std::shared_ptr<Session>& s) {
    std::lock_guard lock(mu_);
    sessions_.erase(s);
  }
  int64_t connections() {
    std::lock_guard lock(mu_);
    return static_cast<int64_t>(sessions_.size());
  }
  void CloseAll();
  void RunIo();

  // Options, limits, handler and the counters every connection shares.
  SessionShared shared_;
  net::io_context ioc_;
  // The acceptor, its callbacks and the accept back-off timer run on this strand.
  net::strand<net::io_context::executor_type> accept_strand_;
  tcp::acceptor acceptor_;
  // Keeps the I/O threads running while no socket is open (after StopAccepting, between connections).
  net::executor_work_guard<net::io_context::executor_type> work_{ioc_.get_executor()};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::set<std::shared_ptr<Session>> sessions_;
  bool started_ = false;
  // Accept back-off and its rate-limited log (on accept_strand_).
  net::steady_timer accept_retry_;
  Clock::duration accept_backoff_{};
  Clock::time_point last_accept_log_{};
  int64_t unlogged_accept_errors_ = 0;
};

void HttpServer::Impl::Accept() {
  auto strand = net::make_strand(ioc_);
  acceptor_.async_accept(strand, [this, strand](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      return OnAcceptError(ec);
    }
    accept_backoff_ = {};
    OnAccepted(std::move(socket), strand);
    if (acceptor_.is_open()) Accept();
  });
}

void HttpServer::Impl::OnAccepted(tcp::socket socket, net::strand<net::io_context::executor_type> strand) {
  const int64_t open = connections();
  int reject_status = 0;
  if (open >= shared_.options.max_connections && !CloseLongestIdle()) {
    // Every connection is busy. Answer 503 while a few descriptors are left for it; past that, just close.
    if (open >= shared_.options.max_connections + 16) return;
    reject_status = 503;
  }
  auto session = std::make_shared<Session>(std::move(socket), strand, &shared_);
  Register(session);
  session->Start(reject_status);
}

void HttpServer::Impl::OnAcceptError(const beast::error_code& ec) {
  // Out of descriptors (or kernel memory): the pending connection stays in the backlog. Free a descriptor and
  // wait before trying again rather than failing in a loop.
  if (ec.value() == EMFILE || ec.value() == ENFILE) CloseLongestIdle();
  ++unlogged_accept_errors_;
  const Clock::time_point now = Clock::now();
  if (now - last_accept_log_ >= std::chrono::seconds(1)) {
    std::fprintf(stderr, "lockstep: accept failed: %s (%lld time(s) since the last report; backing off)\n",
                 ec.message().c_str(), static_cast<long long>(unlogged_accept_errors_));
    unlogged_accept_errors_ = 0;
    last_accept_log_ = now;
  }
  accept_backoff_ = std::clamp<Clock::duration>(accept_backoff_ * 2, std::chrono::milliseconds(10),
                                                std::chrono::seconds(1));
  accept_retry_.expires_after(accept_backoff_);
  accept_retry_.async_wait([this](beast::error_code wait_ec) {
    if (!wait_ec && acceptor_.is_open()) Accept();
  });
}

bool HttpServer::Impl::CloseLongestIdle() {
  std::shared_ptr<Session> oldest;
  {
    std::lock_guard lock(mu_);
    for (const auto& s : sessions_) {
      if (s->evictable() && (!oldest || s->idle_since() < oldest->idle_since())) oldest = s;
    }
    if (oldest) oldest->CloseIfIdle();
  }
  return oldest != nullptr;
}

void HttpServer::Impl::CloseAll() {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.assign(sessions_.begin(), sessions_.end());
  }
  for (auto& s : sessions) s->Close();
}

void HttpServer::Impl::RunIo() {
  for (;;) {
    try {
      ioc_.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lockstep: internal error in an I/O callback (continuing): %s\n", e.what());
    }
  }
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::Start() {
  beast::error_code ec;
  net::ip::address address = net::ip::make_address(impl_->shared_.options.host, ec);
  if (ec) {  // a host name ("localhost"): its first address
    tcp::resolver resolver(impl_->ioc_);
    const auto found = resolver.resolve(impl_->shared_.options.host, "", ec);
    if (ec || found.empty()) {
      return InvalidArgument("invalid --host '" + impl_->shared_.options.host +
                             "': neither an IP address nor a host name this machine resolves (" +
                             ec.message() + ")");
    }
    address = found.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(impl_->shared_.options.port));
  const std::string where = impl_->shared_.options.host + ":" + std::to_string(impl_->shared_.options.port);
  impl_->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor_.bind(endpoint, ec);
  if (!ec) impl_->acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + where + ": " + ec.message());
  port_ = impl_->acceptor_.local_endpoint().port();
  impl_->Accept();
  impl_->started_ = true;
  try {  // std::thread reports a failure to start one (resource limits) only by throwing
    for (int i = 0; i < std::max(1, impl_->shared_.options.io_threads); ++i) {
      impl_->threads_.emplace_back([this] { impl_->RunIo(); });
    }
  } catch (const std::system_error& error) {
    const size_t started = impl_->threads_.size();
    // Stop()'s orderly close needs a running I/O thread; none may have started. Stop them, then close.
    impl_->shared_.stopped = true;
    impl_->work_.reset();
    impl_->ioc_.stop();
    for (auto& t : impl_->threads_) t.join();
    impl_->threads_.clear();
    beast::error_code ignored;
    impl_->acceptor_.close(ignored);
    return ResourceExhausted("cannot start " + std::to_string(impl_->shared_.options.io_threads) +
                             " I/O threads (started " + std::to_string(started) + "): " + error.what());
  }
  return port_;
}

void HttpServer::StopAccepting() {
  net::post(impl_->acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    impl_->acceptor_.close(ignored);
    impl_->accept_retry_.cancel();
  });
}

void HttpServer::Stop() {
  if (!impl_ || impl_->shared_.stopped) return;
  impl_->shared_.stopped = true;
  if (impl_->started_) {
    std::promise<void> closed;
    net::post(impl_->acceptor_.get_executor(), [this, &closed] {
      beast::error_code ignored;
      impl_->acceptor_.close(ignored);
      impl_->accept_retry_.cancel();
      closed.set_value();
    });
    closed.get_future().wait();
    impl_->CloseAll();
    // Let the posted closes run, then stop.
    for (int i = 0; i < 200; ++i) {
      if (impl_->connections() == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  impl_->work_.reset();
  impl_->ioc_.stop();
  for (auto& t : impl_->threads_) t.join();
  impl_->threads_.clear();
}

int64_t HttpServer::active_requests() const { return impl_->shared_.active.load(); }
int64_t HttpServer::connections() const { return impl_->connections(); }

}  // namespace lockstep::server
