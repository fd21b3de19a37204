#include "client/bench_conversation.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <random>

#include "client/fan_out.h"
#include "client/svg.h"

namespace lockstep::client {
namespace {

namespace asio = boost::asio;

struct Turn {
  ChatResult result;
  int conversation = 0, turn = 0;
  int max_tokens = 0;
};

// One conversation: its turns one after another, each with the history so far.
asio::awaitable<void> RunOne(const OpenAiClient& client, const ConversationOptions& c, const ServeOptions& o,
                             std::string system, std::vector<std::string> users, int index,
                             CancellationToken* token, std::vector<Turn>* out,
                             std::function<void()> on_turn) {
  std::vector<ChatMessage> history = {{"system", std::move(system)}};
  for (int t = 0; t < c.turns; ++t) {
    history.push_back({"user", users[static_cast<size_t>(t)]});
    ChatRequest request;
    request.model = o.model;
    request.messages = history;
    request.max_tokens = c.output_len;
    request.temperature = 0;
    request.ignore_eos = o.ignore_eos;
    Turn turn;
    turn.conversation = index;
    turn.turn = t;
    turn.max_tokens = c.output_len;
    turn.result = co_await client.Chat(request, token);
    const bool ok = turn.result.status.ok();
    history.push_back({"assistant", turn.result.content});
    out->push_back(std::move(turn));
    if (on_turn) on_turn();
    if (!ok || (token != nullptr && token->cancelled())) co_return;
  }
}

asio::awaitable<std::vector<Turn>> RunAll(const OpenAiClient& client, const ConversationOptions& c,
                                          const ServeOptions& o, CancellationToken* token,
                                          std::function<void()> on_turn) {
  auto ex = co_await asio::this_coro::executor;
  std::mt19937_64 rng(o.seed);
  const std::string system =
      "You are a helpful assistant. Background notes: " + RandomPrompt(c.system_words, rng);
  auto turns = std::make_shared<std::vector<std::vector<Turn>>>(static_cast<size_t>(c.conversations));
  auto remaining = std::make_shared<int>(c.conversations);
  auto all_done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  for (int i = 0; i < c.conversations; ++i) {
    std::vector<std::string> users;
    for (int t = 0; t < c.turns; ++t) users.push_back(RandomPrompt(c.user_words, rng) + "?");
    asio::co_spawn(ex,
                   RunOne(client, c, o, system, std::move(users), i, token, &(*turns)[size_t(i)], on_turn),
                   [remaining, all_done](std::exception_ptr) {
                     if (--*remaining == 0) all_done->cancel();
                   });
  }
  while (*remaining > 0) {
    boost::system::error_code ec;
    co_await all_done->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  std::vector<Turn> flat;
  for (auto& conversation : *turns) {
    for (Turn& t : conversation) flat.push_back(std::move(t));
  }
  co_return flat;
}

}  // namespace

Result<ServeReport> RunConversations(const OpenAiClient& client, const ConversationOptions& c,
                                     const ServeOptions& o, CancellationToken* token,
                                     const ServeProgressFn& progress) {
  if (c.conversations < 1 || c.turns < 1)
    return InvalidArgument("--multi-turn needs conversations and turns >= 1");
  if (c.system_words < 0 || c.user_words < 1 || c.output_len < 1) {
    return InvalidArgument("--multi-turn: word counts and --output-len must be positive");
  }
  const int total = c.conversations * c.turns;
  int done = 0;
  std::function<void()> on_turn = [&] {
    ++done;
    if (progress) progress(done, total);
  };
  const auto start = Clock::now();
  std::vector<Turn> turns = RunBlocking(RunAll(client, c, o, token, on_turn));
  if (token != nullptr && token->cancelled()) return Cancelled("benchmark cancelled");
  ServeReport report;
  report.options = o;
  report.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  report.turns = c.turns;
  for (const Turn& t : turns) {
    ServeRecord rec = ToServeRecord(t.result, start, t.max_tokens);
    rec.conversation = t.conversation;
    rec.turn = t.turn;
    report.records.push_back(std::move(rec));
  }
  AggregateServeReport(&report);
  return report;
}

std::string ServeTurnsSvg(const ServeReport& report) {
  ChartSeries mean{"TTFT (mean over conversations)", {}};
  for (size_t t = 0; t < report.ttft_by_turn_ms.size(); ++t) {
    mean.points.emplace_back(double(t + 1), report.ttft_by_turn_ms[t]);
  }
  return LineChart("Time to first token by turn (each turn re-sends the history)", "turn", "milliseconds",
                   {mean});
}

}  // namespace lockstep::client
