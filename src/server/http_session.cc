#include "server/http_session.h"

#include <boost/beast/http.hpp>
#include <cstdio>
#include <exception>
#include <utility>

namespace lockstep::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

Session::Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Session::Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

void Session::Start(int reject_status) {
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

void Session::Close() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->DoClose(); });
}

void Session::CloseIfIdle() {
  evicting_ = true;
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) return self->DoClose();
    self->evicting_ = false;  // its first byte came meanwhile: it stays
  });
}

void Session::SendOnStrand(int status, const std::string& content_type, std::string body,
                           HeaderList headers) {
  if (closed_ || response_started_) return;
  response_started_ = true;
  std::string out = StatusLine(status, content_type, headers);
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  if (!head_) out += body;  // HEAD: the same headers, no body
  Queue(std::move(out));
  FinishResponse();
}

void Session::StartStreamOnStrand(int status, const std::string& content_type, HeaderList headers) {
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

void Session::WriteOnStrand(std::string data) {
  if (closed_ || !streaming_ || response_done_ || data.empty() || head_) return;
  if (chunked_) {
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", data.size());
    data.insert(0, size);
    data += "\r\n";
  }
  Queue(std::move(data));
}

void Session::EndOnStrand() {
  if (closed_ || !streaming_ || response_done_) return;
  if (chunked_) Queue("0\r\n\r\n");
  FinishResponse();
}

void Session::OnCloseOnStrand(std::function<void()> fn) {
  if (closed_) {
    fn();
    return;
  }
  on_close_ = std::move(fn);
}

std::string Session::StatusLine(int status, const std::string& content_type, const HeaderList& headers) {
  std::string out = "HTTP/1." + std::to_string(version_ % 10) + " " + std::to_string(status) + " " +
                    std::string(HttpReason(status)) + "\r\n";
  out += "Server: lockstep\r\n";
  if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  out += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  return out;
}

void Session::ReadHeader(bool first) {
  if (closed_) return;
  parser_.emplace();
  ConfigureParser(*parser_, server_->limits);
  head_ = false;
  if (buffer_.size() > 0) {  // a pipelined request is already here
    stream_.expires_after(Seconds(server_->options.header_timeout_s));
    return ReadRestOfHeader();
  }
  stream_.expires_after(Seconds(first ? server_->options.header_timeout_s : server_->options.idle_timeout_s));
  idle_since_.store(Clock::now().time_since_epoch().count());
  idle_ = true;
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this(), first](beast::error_code ec, size_t n) {
                            self->idle_ = false;
                            if (ec) return self->DoClose();
                            self->buffer_.commit(n);
                            // A fresh connection keeps its one header deadline; a kept-alive one
                            // gets the header timeout from its first byte on.
                            if (!first)
                              self->stream_.expires_after(Seconds(self->server_->options.header_timeout_s));
                            self->ReadRestOfHeader();
                          });
}

void Session::ReadRestOfHeader() {
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
}

void Session::OnHeader(beast::error_code ec) {
  if (ec) return OnReadError(ec);
  auto& req = parser_->get();
  version_ = req.version() == 10 ? 10 : 11;
  keep_alive_ = req.keep_alive();
  head_ = req.method() == http::verb::head;
  if (auto error = CheckRequestHeader(*parser_, server_->limits)) return SendProtocolError(*error);
  if (beast::iequals(req[http::field::expect], "100-continue")) {
    Queue("HTTP/1.1 100 Continue\r\n\r\n");
  }
  stream_.expires_after(Seconds(server_->options.body_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
}

void Session::OnReadError(const beast::error_code& ec) {
  if (auto error = ProtocolErrorFor(ec, server_->limits)) return SendProtocolError(*error);
  DoClose();
}

void Session::SendProtocolError(const ProtocolError& error, HeaderList headers) {
  keep_alive_ = false;
  response_started_ = false;
  std::string path;  // known once the request line is parsed, even if a header field then failed
  if (parser_) {
    const auto target = parser_->get().target();
    path = TargetPath(std::string_view(target.data(), target.size()));  // as routes see it
  }
  CountAsActive();
  timing_writes_ = true;
  SendOnStrand(error.status, "application/json", server_->options.protocol_error_body(error, path),
               std::move(headers));
}

void Session::OnBody(beast::error_code ec) {
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
    server_->handler(std::move(request), MakeWriter());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep: internal error handling %s: %s\n", what.c_str(), e.what());
    SendOnStrand(500, "application/json",
                 R"({"error":{"message":"internal server error","type":"server_error","param":null,)"
                 R"("code":"internal_error"}})",
                 {});
  }
}

void Session::Watch() {
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
          if (!self->keep_alive_ || self->server_->stopped) {
            self->stream_.expires_after(std::chrono::seconds(1));
            return self->Drain();
          }
          return self->Next();
        }
        if (!self->response_done_ && self->buffer_.size() < 65536) self->Watch();
      });
}

void Session::Queue(std::string data) {
  writes_.push_back(std::move(data));
  if (!writing_) DoWrite();
}

void Session::DoWrite() {
  if (closed_) return;
  writing_ = true;
  if (timing_writes_) stream_.expires_after(Seconds(server_->options.write_timeout_s));
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

void Session::CountAsActive() {
  server_->active++;
  active_counted_ = true;
}

void Session::StopCountingAsActive() {
  if (!active_counted_) return;
  active_counted_ = false;
  server_->active--;
}

void Session::FinishResponse() {
  response_done_ = true;
  on_close_ = nullptr;
  if (!writing_ && writes_.empty()) AfterResponse();
}

void Session::AfterResponse() {
  StopCountingAsActive();
  if (!keep_alive_ || server_->stopped) return GracefulClose();
  if (watching_) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the watch handler then calls Next()
    return;
  }
  Next();
}

void Session::GracefulClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (watching_) {  // the watch handler then drains
    stream_.socket().cancel(ignored);
    return;
  }
  stream_.expires_after(std::chrono::seconds(1));
  Drain();
}

void Session::Drain() {
  stream_.async_read_some(net::buffer(watch_buf_), [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) return self->DoClose();
    self->Drain();
  });
}

void Session::Next() {
  timing_writes_ = false;
  response_done_ = false;
  response_started_ = false;
  ReadHeader(false);
}

void Session::DoClose() {
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
  server_->unregister(shared_from_this());
}

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

}  // namespace lockstep::server
