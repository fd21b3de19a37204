#include "server/http_server.h"

#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

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

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

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

class Session;

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        ioc_(std::max(1, options_.io_threads)),
        accept_strand_(net::make_strand(ioc_)),
        acceptor_(accept_strand_),
        accept_retry_(accept_strand_) {
    if (options_.max_connections <= 0) options_.max_connections = DefaultMaxConnections();
    if (!options_.protocol_error_body) options_.protocol_error_body = DefaultErrorBody;
    limits_.max_body_bytes = options_.max_body_bytes;
    limits_.max_header_bytes = options_.max_header_bytes;
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

  HttpServerOptions options_;
  HttpLimits limits_;
  HttpHandler handler_;
  net::io_context ioc_;
  // The acceptor, its callbacks and the accept back-off timer run on this strand.
  net::strand<net::io_context::executor_type> accept_strand_;
  tcp::acceptor acceptor_;
  // Keeps the I/O threads running while no socket is open (after StopAccepting, between connections).
  net::executor_work_guard<net::io_context::executor_type> work_{ioc_.get_executor()};
  std::vector<std::thread> threads_;
  std::atomic<int64_t> active_{0};
  std::mutex mu_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::atomic<bool> stopped_{false};
  bool started_ = false;
  // Accept back-off and its rate-limited log (on accept_strand_).
  net::steady_timer accept_retry_;
  Clock::duration accept_backoff_{};
  Clock::time_point last_accept_log_{};
  int64_t unlogged_accept_errors_ = 0;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Strand = net::strand<net::io_context::executor_type>;
  Session(tcp::socket socket, Strand strand, HttpServer::Impl* server)
      : stream_(std::move(socket)), strand_(std::move(strand)), server_(server) {}

  // Serves requests; with reject_status (503 at the connection limit) answers that at once and closes.
  void Start(int reject_status = 0) {
    if (reject_status == 0) {  // idle from its accept on: a burst of newcomers can make room with it
      idle_since_.store(Clock::now().time_since_epoch().count());
      idle_ = true;
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), reject_status] {
      if (reject_status == 0) return self->ReadHeader(true);
      self->SendProtocolError(
          ProtocolError{reject_status, "too many open connections; retry shortly", "too_many_connections"},
          {{"Retry-After", "1"}});
    });
  }

  void Close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->DoClose(); });
  }
  // Closes the connection if it is still waiting for the first byte of a request when this runs. Until then
  // it is no candidate for closing (evictable() is false): each newcomer of a burst, accepted before the
  // closes run, makes room with a different connection (CloseLongestIdle, under the server's mutex).
  void CloseIfIdle() {
    evicting_ = true;
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->idle_) return self->DoClose();
      self->evicting_ = false;  // its first byte came meanwhile: it stays
    });
  }
  bool evictable() const { return idle_.load() && !evicting_.load(); }
  Clock::time_point idle_since() const { return Clock::time_point(Clock::duration(idle_since_.load())); }

  // --- ResponseWriter operations, always on the strand ---
  void SendOnStrand(int status, const std::string& content_type, std::string body, HeaderList headers) {
    if (closed_ || response_started_) return;
    response_started_ = true;
    std::string out = StatusLine(status, content_type, headers);
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    if (!head_) out += body;  // HEAD: the same headers, no body
    Queue(std::move(out));
    FinishResponse();
  }
  void StartStreamOnStrand(int status, const std::string& content_type, HeaderList headers) {
    if (closed_ || response_started_) return;
    response_started_ = true;
    streaming_ = true;
    chunked_ = version_ >= 11 && !head_;
    if (!chunked_) keep_alive_ = false;
    std::string out = StatusLine(status, content_type, headers);
    if (chunked_) out += "Transfer-Encoding: chunked\r\n";
    out += "Cache-Control: no-cache\r\n\r\n";
    Queue(std::move(out));
  }
  void WriteOnStrand(std::string data) {
    if (closed_ || !streaming_ || response_done_ || data.empty() || head_) return;
    if (chunked_) {
      char size[32];
      snprintf(size, sizeof(size), "%zx\r\n", data.size());
      data.insert(0, size);
      data += "\r\n";
    }
    Queue(std::move(data));
  }
  void EndOnStrand() {
    if (closed_ || !streaming_ || response_done_) return;
    if (chunked_) Queue("0\r\n\r\n");
    FinishResponse();
  }
  void OnCloseOnStrand(std::function<void()> fn) {
    if (closed_) {
      fn();
      return;
    }
    on_close_ = std::move(fn);
  }
  bool closed() const { return closed_.load(); }
  net::strand<net::io_context::executor_type>& strand() { return strand_; }

 private:
  std::string StatusLine(int status, const std::string& content_type, const HeaderList& headers) {
    std::string out = "HTTP/1." + std::to_string(version_ % 10) + " " + std::to_string(status) + " " +
                      std::string(HttpReason(status)) + "\r\n";
    out += "Server: lockstep\r\n";
    if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
    for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
    out += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    return out;
  }

  // Waits for the next request. With no byte of it buffered yet the connection is idle (and may be closed to
  // make room for a new one) until its first byte arrives.
  void ReadHeader(bool first) {
    if (closed_) return;
    parser_.emplace();
    ConfigureParser(*parser_, server_->limits_);
    head_ = false;
    if (buffer_.size() > 0) {  // a pipelined request is already here
      stream_.expires_after(Seconds(server_->options_.header_timeout_s));
      return ReadRestOfHeader();
    }
    stream_.expires_after(
        Seconds(first ? server_->options_.header_timeout_s : server_->options_.idle_timeout_s));
    idle_since_.store(Clock::now().time_since_epoch().count());
    idle_ = true;
    stream_.async_read_some(
        buffer_.prepare(4096), [self = shared_from_this(), first](beast::error_code ec, size_t n) {
          self->idle_ = false;
          if (ec) return self->DoClose();
          self->buffer_.commit(n);
          // A fresh connection keeps its one header deadline; a kept-alive one
          // gets the header timeout from its first byte on.
          if (!first) self->stream_.expires_after(Seconds(self->server_->options_.header_timeout_s));
          self->ReadRestOfHeader();
        });
  }

  void ReadRestOfHeader() {
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    auto& req = parser_->get();
    version_ = req.version() == 10 ? 10 : 11;
    keep_alive_ = req.keep_alive();
    head_ = req.method() == http::verb::head;
    if (auto error = CheckRequestHeader(*parser_, server_->limits_)) return SendProtocolError(*error);
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      Queue("HTTP/1.1 100 Continue\r\n\r\n");
    }
    stream_.expires_after(Seconds(server_->options_.body_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  // A failed header or body read: answered when it is the client's mistake, else the connection closes.
  void OnReadError(const beast::error_code& ec) {
    if (auto error = ProtocolErrorFor(ec, server_->limits_)) return SendProtocolError(*error);
    DoClose();
  }

  void SendProtocolError(const ProtocolError& error, HeaderList headers = {}) {
    keep_alive_ = false;
    response_started_ = false;
    std::string path;  // known once the request line is parsed, even if a header field then failed
    if (parser_) {
      const auto target = parser_->get().target();
      path = TargetPath(std::string_view(target.data(), target.size()));  // as routes see it
    }
    CountAsActive();
    timing_writes_ = true;
    SendOnStrand(error.status, "application/json", server_->options_.protocol_error_body(error, path),
                 std::move(headers));
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    HttpRequest request = ToHttpRequest(*parser_);
    request.version = version_;
    response_started_ = false;
    response_done_ = false;
    streaming_ = false;
    CountAsActive();
    stream_.expires_never();
    timing_writes_ = true;
    Watch();
    const std::string what = request.method + " " + request.path;
    try {
      server_->handler_(std::move(request), MakeWriter());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lockstep: internal error handling %s: %s\n", what.c_str(), e.what());
      SendOnStrand(500, "application/json",
                   R"({"error":{"message":"internal server error","type":"server_error","param":null,)"
                   R"("code":"internal_error"}})",
                   {});
    }
  }

  std::shared_ptr<ResponseWriter> MakeWriter();

  // A read kept pending while a response is produced: EOF or an error means the client went away; bytes
  // (a pipelined next request) are kept in buffer_ for the next ReadHeader.
  void Watch() {
    if (watching_ || closed_) return;
    watching_ = true;
    stream_.socket().async_read_some(
        net::buffer(watch_buf_), [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->watching_ = false;
          if (n > 0) {
            net::buffer_copy(self->buffer_.prepare(n), net::buffer(self->watch_buf_.data(), n));
            self->buffer_.commit(n);
          }
          if (ec && ec != net::error::operation_aborted) return self->DoClose();
          if (self->response_done_ && self->writes_.empty()) {
            if (!self->keep_alive_ || self->server_->stopped_) {
              self->stream_.expires_after(std::chrono::seconds(1));
              return self->Drain();
            }
            return self->Next();
          }
          if (!self->response_done_ && self->buffer_.size() < 65536) self->Watch();
        });
  }

  void Queue(std::string data) {
    writes_.push_back(std::move(data));
    if (!writing_) DoWrite();
  }

  void DoWrite() {
    if (closed_) return;
    writing_ = true;
    if (timing_writes_) stream_.expires_after(Seconds(server_->options_.write_timeout_s));
    net::async_write(stream_, net::buffer(writes_.front()),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (ec) return self->DoClose();  // beast::error::timeout: the client stopped reading
                       self->writes_.pop_front();
                       if (!self->writes_.empty()) return self->DoWrite();
                       if (self->timing_writes_) self->stream_.expires_never();
                       if (self->response_done_) self->AfterResponse();
                     });
  }

  // A request counts in active_requests() from its parse (or protocol error) until its response's last byte
  // is written or its connection closes, whichever comes first; each request is counted once.
  void CountAsActive() {
    server_->active_++;
    active_counted_ = true;
  }
  void StopCountingAsActive() {
    if (!active_counted_) return;
    active_counted_ = false;
    server_->active_--;
  }

  void FinishResponse() {
    response_done_ = true;
    on_close_ = nullptr;
    if (!writing_ && writes_.empty()) AfterResponse();
  }

  // The response's last byte is on the socket. Only now does the request stop counting as active: a drain
  // waits for active_requests() to reach 0 and then closes every connection, which would cut a stream's
  // last events ("[DONE]") still queued behind the handler's End().
  void AfterResponse() {
    StopCountingAsActive();
    if (!keep_alive_ || server_->stopped_) return GracefulClose();
    if (watching_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);  // the watch handler then calls Next()
      return;
    }
    Next();
  }

  // Half-closes, then reads and discards what the client still sends (up to 1 s) before closing, so that an
  // early answer (413) is not lost to a TCP reset caused by unread request bytes.
  void GracefulClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (watching_) {  // the watch handler then drains
      stream_.socket().cancel(ignored);
      return;
    }
    stream_.expires_after(std::chrono::seconds(1));
    Drain();
  }
  void Drain() {
    stream_.async_read_some(net::buffer(watch_buf_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->DoClose();
                              self->Drain();
                            });
  }

  void Next() {
    timing_writes_ = false;
    response_done_ = false;
    response_started_ = false;
    ReadHeader(false);
  }

  void DoClose() {
    if (closed_) return;
    closed_ = true;
    idle_ = false;
    StopCountingAsActive();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (auto fn = std::move(on_close_)) {
      on_close_ = nullptr;
      fn();
    }
    server_->Unregister(shared_from_this());
  }

  beast::tcp_stream stream_;
  Strand strand_;
  HttpServer::Impl* server_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::array<char, 4096> watch_buf_{};
  std::deque<std::string> writes_;
  std::function<void()> on_close_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> idle_{false};          // waiting for the first byte of a request
  std::atomic<Clock::rep> idle_since_{0};  // since when (steady clock ticks)
  std::atomic<bool> evicting_{false};      // CloseIfIdle was asked and has not run yet
  bool writing_ = false;
  bool timing_writes_ = false;  // a response is being written: each write runs under write_timeout_s
  bool watching_ = false;
  bool response_started_ = false;
  bool response_done_ = false;
  bool streaming_ = false;
  bool chunked_ = false;
  bool keep_alive_ = true;
  bool head_ = false;  // the request is a HEAD: responses carry no body
  bool active_counted_ = false;
  int version_ = 11;
};

namespace {

class Writer : public ResponseWriter {
 public:
  explicit Writer(std::shared_ptr<Session> session) : session_(std::move(session)) {}
  void Send(int status, const std::string& content_type, std::string body, HeaderList headers) override {
    Run([s = session_, status, content_type, body = std::move(body), headers = std::move(headers)]() mutable {
      s->SendOnStrand(status, content_type, std::move(body), std::move(headers));
    });
  }
  void StartStream(int status, const std::string& content_type, HeaderList headers) override {
    Run([s = session_, status, content_type, headers = std::move(headers)]() mutable {
      s->StartStreamOnStrand(status, content_type, std::move(headers));
    });
  }
  void Write(std::string data) override {
    Run([s = session_, data = std::move(data)]() mutable { s->WriteOnStrand(std::move(data)); });
  }
  void End() override {
    Run([s = session_] { s->EndOnStrand(); });
  }
  void Post(std::function<void()> fn) override { net::post(session_->strand(), std::move(fn)); }
  std::function<void()> PostAfter(double seconds, std::function<void()> fn) override {
    auto timer = std::make_shared<net::steady_timer>(session_->strand(), Seconds(seconds));
    timer->async_wait([timer, fn = std::move(fn)](beast::error_code ec) {
      if (!ec) fn();
    });
    std::weak_ptr<net::steady_timer> weak = timer;
    auto strand = session_->strand();
    return [weak, strand] {
      net::post(strand, [weak] {
        if (auto t = weak.lock()) t->cancel();
      });
    };
  }
  void OnClose(std::function<void()> fn) override {
    Run([s = session_, fn = std::move(fn)]() mutable { s->OnCloseOnStrand(std::move(fn)); });
  }
  bool closed() const override { return session_->closed(); }

 private:
  // Runs inline when already on the strand (keeps ordering with the caller), otherwise posts.
  template <typename F>
  void Run(F&& fn) {
    if (session_->strand().running_in_this_thread()) {
      fn();
    } else {
      net::post(session_->strand(), std::forward<F>(fn));
    }
  }
  std::shared_ptr<Session> session_;
};

}  // namespace

std::shared_ptr<ResponseWriter> Session::MakeWriter() { return std::make_shared<Writer>(shared_from_this()); }

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
  if (open >= options_.max_connections && !CloseLongestIdle()) {
    // Every connection is busy. Answer 503 while a few descriptors are left for it; past that, just close.
    if (open >= options_.max_connections + 16) return;
    reject_status = 503;
  }
  auto session = std::make_shared<Session>(std::move(socket), strand, this);
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
  net::ip::address address = net::ip::make_address(impl_->options_.host, ec);
  if (ec) {  // a host name ("localhost"): its first address
    tcp::resolver resolver(impl_->ioc_);
    const auto found = resolver.resolve(impl_->options_.host, "", ec);
    if (ec || found.empty()) {
      return InvalidArgument("invalid --host '" + impl_->options_.host +
                             "': neither an IP address nor a host name this machine resolves (" +
                             ec.message() + ")");
    }
    address = found.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(impl_->options_.port));
  const std::string where = impl_->options_.host + ":" + std::to_string(impl_->options_.port);
  impl_->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor_.bind(endpoint, ec);
  if (!ec) impl_->acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + where + ": " + ec.message());
  port_ = impl_->acceptor_.local_endpoint().port();
  impl_->Accept();
  impl_->started_ = true;
  try {  // std::thread reports a failure to start one (resource limits) only by throwing
    for (int i = 0; i < std::max(1, impl_->options_.io_threads); ++i) {
      impl_->threads_.emplace_back([this] { impl_->RunIo(); });
    }
  } catch (const std::system_error& error) {
    const size_t started = impl_->threads_.size();
    // Stop()'s orderly close needs a running I/O thread; none may have started. Stop them, then close.
    impl_->stopped_ = true;
    impl_->work_.reset();
    impl_->ioc_.stop();
    for (auto& t : impl_->threads_) t.join();
    impl_->threads_.clear();
    beast::error_code ignored;
    impl_->acceptor_.close(ignored);
    return ResourceExhausted("cannot start " + std::to_string(impl_->options_.io_threads) +
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
  if (!impl_ || impl_->stopped_) return;
  impl_->stopped_ = true;
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

int64_t HttpServer::active_requests() const { return impl_->active_.load(); }
int64_t HttpServer::connections() const { return impl_->connections(); }

}  // namespace lockstep::server
