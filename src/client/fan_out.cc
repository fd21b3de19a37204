#include "client/fan_out.h"

#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <memory>

namespace lockstep::client {

namespace asio = boost::asio;

namespace {

struct FanOutState {
  const OpenAiClient* client;
  const std::vector<ChatRequest>* requests;
  CancellationToken* token;
  FanOutCallbacks callbacks;
  std::vector<ChatResult> results;
  size_t next = 0;
  int running = 0;
  std::unique_ptr<asio::steady_timer> all_done;  // cancelled when the last worker ends
  std::exception_ptr error;                      // the first a worker ended with (a callback's)
};

asio::awaitable<void> Worker(std::shared_ptr<FanOutState> state) {
  while (state->next < state->requests->size()) {
    const size_t index = state->next++;
    if (state->callbacks.on_start) state->callbacks.on_start(index);
    DeltaCallback on_delta;
    if (state->callbacks.on_delta) {
      on_delta = [state, index](const std::string& d) { state->callbacks.on_delta(index, d); };
    }
    state->results[index] = co_await state->client->Chat((*state->requests)[index], state->token, on_delta);
    if (state->callbacks.on_done) state->callbacks.on_done(index, state->results[index]);
  }
}

}  // namespace

asio::awaitable<std::vector<ChatResult>> FanOut(const OpenAiClient& client,
                                                const std::vector<ChatRequest>& requests, int concurrency,
                                                CancellationToken* token, FanOutCallbacks callbacks) {
  auto ex = co_await asio::this_coro::executor;
  auto state = std::make_shared<FanOutState>();
  state->client = &client;
  state->requests = &requests;
  state->token = token;
  state->callbacks = std::move(callbacks);
  // A request no worker got to (a callback threw) stays failed, never a default "ok".
  state->results.assign(requests.size(), NotRunResult());
  state->all_done = std::make_unique<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  const size_t workers =
      concurrency <= 0 ? requests.size() : std::min(requests.size(), static_cast<size_t>(concurrency));
  if (workers == 0) co_return std::vector<ChatResult>{};
  state->running = static_cast<int>(workers);
  for (size_t i = 0; i < workers; ++i) {
    asio::co_spawn(ex, Worker(state), [state](std::exception_ptr e) {
      if (e && !state->error) state->error = e;
      if (--state->running == 0) state->all_done->cancel();
    });
  }
  while (state->running > 0) {
    boost::system::error_code ec;
    co_await state->all_done->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (state->error) std::rethrow_exception(state->error);
  co_return std::move(state->results);
}

std::vector<ChatResult> RunFanOut(const OpenAiClient& client, const std::vector<ChatRequest>& requests,
                                  int concurrency, CancellationToken* token, FanOutCallbacks callbacks,
                                  bool cancel_on_sigint) {
  asio::io_context io;
  std::vector<ChatResult> results;
  std::exception_ptr error;
  std::unique_ptr<asio::signal_set> signals;
  if (cancel_on_sigint && token != nullptr) {
    signals = std::make_unique<asio::signal_set>(io, SIGINT);
    signals->async_wait([token](const boost::system::error_code& ec, int) {
      if (!ec) token->Cancel();
    });
  }
  asio::co_spawn(io, FanOut(client, requests, concurrency, token, std::move(callbacks)),
                 [&](std::exception_ptr e, std::vector<ChatResult> r) {
                   if (!e) results = std::move(r);
                   error = e;
                   if (signals) signals->cancel();
                 });
  io.run();
  if (error) std::rethrow_exception(error);
  return results;
}

}  // namespace lockstep::client
