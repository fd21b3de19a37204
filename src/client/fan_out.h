// Fan-out: runs many chat requests with at most `concurrency` in flight and returns the results in request
// order. FanOut() is the coroutine form (runs on the caller's executor, which must be single-threaded: an
// io_context run by one thread, or a strand); RunFanOut() is the blocking form with its own io_context, which
// can also turn SIGINT into cancellation of every request in flight (for command-line tools).
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include "client/asio_awaitable.h"
#include "client/cancellation.h"
#include "client/chat_client.h"

namespace lockstep::client {

struct FanOutCallbacks {
  std::function<void(size_t index)> on_start;                            // a request is sent
  std::function<void(size_t index, const std::string& delta)> on_delta;  // streamed content
  std::function<void(size_t index, const ChatResult& result)> on_done;   // a request finished
};

// concurrency <= 0 means all at once. Every result is a request's own (Chat() turns any error inside a
// request into a failed result); an exception thrown by a callback is rethrown once the workers have ended.
boost::asio::awaitable<std::vector<ChatResult>> FanOut(const OpenAiClient& client,
                                                       const std::vector<ChatRequest>& requests,
                                                       int concurrency, CancellationToken* token,
                                                       FanOutCallbacks callbacks = {});

// Blocking: runs FanOut on a private io_context on this thread (rethrows what FanOut throws). With
// cancel_on_sigint, Ctrl-C cancels `token`.
std::vector<ChatResult> RunFanOut(const OpenAiClient& client, const std::vector<ChatRequest>& requests,
                                  int concurrency, CancellationToken* token, FanOutCallbacks callbacks = {},
                                  bool cancel_on_sigint = false);

// Runs one coroutine to completion on a fresh io_context on this thread and returns its value (rethrows).
template <typename T>
T RunBlocking(boost::asio::awaitable<T> task) {
  boost::asio::io_context io;
  std::optional<T> value;
  std::exception_ptr error;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { value.emplace(co_await std::move(task)); },
      [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*value);
}

}  // namespace lockstep::client
