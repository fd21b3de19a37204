// The multi-turn chat workload of `lockstep bench serve --multi-turn N`: N conversations run side by side,
// each a chain of turns in which the next user message is sent with the whole history (system prompt,
// every earlier user message and the server's earlier replies) once the previous reply has arrived — what a
// chat application sends, and what a prefix cache is for. Every conversation shares one system prompt.
// Each turn is a ServeRecord (conversation and turn set), so the usual TTFT / TPOT / ITL summaries apply;
// the report adds TTFT per turn and the prefix-cache hit ratio (the server's cached prompt tokens over all
// prompt tokens). Runs on the calling thread.
//
//   conversation 0: [sys][u1] → a1    [sys][u1][a1][u2] → a2    [sys][u1][a1][u2][a2][u3] → a3 ...
//   conversation 1: [sys][u1'] → a1'  ...                                  (all started at once)
#pragma once

#include <cstdint>

#include "base/status.h"
#include "client/bench_serve.h"

namespace lockstep::client {

struct ConversationOptions {
  int conversations = 4;
  int turns = 5;
  int system_words = 600;  // the shared system prompt (random common words, ~1 token each)
  int user_words = 30;     // each user message
  int output_len = 64;     // max_tokens of each reply
};

Result<ServeReport> RunConversations(const OpenAiClient& client, const ConversationOptions& conversation,
                                     const ServeOptions& options, CancellationToken* token,
                                     const ServeProgressFn& progress = {});

// TTFT by turn (mean over conversations, milliseconds), as a line chart.
std::string ServeTurnsSvg(const ServeReport& report);

}  // namespace lockstep::client
