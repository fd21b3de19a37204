// Session: one connection of HttpServer (http_server.h, which describes what a connection does: timeouts,
// protocol errors, the pending read that notices a client going away, streamed and whole responses), and the
// ResponseWriter (MakeWriter) its requests are answered through. Private to src/server: only
// http_server.cc makes sessions.
//
// Thread-safety: a session is a strand. Its reads, writes, callbacks and the *OnStrand methods run only
// there; ResponseWriter methods post to it (or run inline when already on it). Start, Close and CloseIfIdle
// may be called from any thread (they post); evictable(), idle_since() and closed() read atomics.
// Errors: a connection failure (reset, EOF, a timeout, a write the client does not read in time) closes the
// session without an answer and runs the OnClose callback; a request the HTTP layer refuses
// (http_request.h) is answered with HttpServerOptions::protocol_error_body and the connection closed; an
// exception escaping the handler is logged and answered 500.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_request.h"
#include "server/http_server.h"

namespace lockstep::server {

class Session;

// What the sessions of one HttpServer share: owned by HttpServer::Impl, which outlives them.
struct SessionShared {
  HttpServerOptions options;  // protocol_error_body always set
  HttpLimits limits{};
  HttpHandler handler;
  std::atomic<int64_t> active{0};    // HttpServer::active_requests()
  std::atomic<bool> stopped{false};  // Stop() has begun: connections close once their response is out
  // Called once per session, on its strand, when it closes (the server forgets it).
  std::function<void(const std::shared_ptr<Session>&)> unregister{};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using Clock = std::chrono::steady_clock;
  Session(boost::asio::ip::tcp::socket socket, Strand strand, SessionShared* server)
      : stream_(std::move(socket)), strand_(std::move(strand)), server_(server) {}

  // Serves requests; with reject_status (503 at the connection limit) answers that at once and closes.
  void Start(int reject_status = 0);
  // Closes the connection (from any thread; runs on the strand).
  void Close();
  // Closes the connection if it is still waiting for the first byte of a request when this runs. Until then
  // it is no candidate for closing (evictable() is false): each newcomer of a burst, accepted before the
  // closes run, makes room with a different connection (CloseLongestIdle, under the server's mutex).
  void CloseIfIdle();
  bool evictable() const { return idle_.load() && !evicting_.load(); }
  Clock::time_point idle_since() const { return Clock::time_point(Clock::duration(idle_since_.load())); }

  // --- ResponseWriter operations, always on the strand ---
  void SendOnStrand(int status, const std::string& content_type, std::string body, HeaderList headers);
  void StartStreamOnStrand(int status, const std::string& content_type, HeaderList headers);
  void WriteOnStrand(std::string data);
  void EndOnStrand();
  void OnCloseOnStrand(std::function<void()> fn);
  bool closed() const { return closed_.load(); }
  Strand& strand() { return strand_; }

 private:
  std::string StatusLine(int status, const std::string& content_type, const HeaderList& headers);

  // Waits for the next request. With no byte of it buffered yet the connection is idle (and may be closed to
  // make room for a new one) until its first byte arrives.
  void ReadHeader(bool first);

  void ReadRestOfHeader();
  void OnHeader(boost::beast::error_code ec);

  // A failed header or body read: answered when it is the client's mistake, else the connection closes.
  void OnReadError(const boost::beast::error_code& ec);

  void SendProtocolError(const ProtocolError& error, HeaderList headers = {});
  void OnBody(boost::beast::error_code ec);
  std::shared_ptr<ResponseWriter> MakeWriter();

  // A read kept pending while a response is produced: EOF or an error means the client went away; bytes
  // (a pipelined next request) are kept in buffer_ for the next ReadHeader.
  void Watch();

  void Queue(std::string data);
  void DoWrite();

  // A request counts in active_requests() from its parse (or protocol error) until its response's last byte
  // is written or its connection closes, whichever comes first; each request is counted once.
  void CountAsActive();
  void StopCountingAsActive();

  void FinishResponse();

  // The response's last byte is on the socket. Only now does the request stop counting as active: a drain
  // waits for active_requests() to reach 0 and then closes every connection, which would cut a stream's
  // last events ("[DONE]") still queued behind the handler's End().
  void AfterResponse();

  // Half-closes, then reads and discards what the client still sends (up to 1 s) before closing, so that an
  // early answer (413) is not lost to a TCP reset caused by unread request bytes.
  void GracefulClose();
  void Drain();

  void Next();
  void DoClose();

  boost::beast::tcp_stream stream_;
  Strand strand_;
  SessionShared* server_;
  boost::beast::flat_buffer buffer_;
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

}  // namespace lockstep::server
