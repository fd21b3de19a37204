// Latency advice from a lockstep server: GET {server}/advisor?questions=N&tokens=M[&prompt_tokens=P] returns
// the predicted wall time of answering N questions of M output tokens combined (one request), in parallel
// and sequentially, from the step times the server's engine has measured (docs/server.md, "Latency
// advisor"), and which to use. Used by `lockstep advise` and `lockstep ask -v`. HTTP + JSON only; every field
// of the answer is type-checked. Thread-safety: FetchAdvice may run concurrently from many coroutines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/chat_client.h"

namespace lockstep::client {

struct AdviceQuery {
  int questions = 5;
  int tokens = 64;                 // output tokens per question
  int prompt_tokens = 0;           // per question; 0 = the server's default
  int combined_prompt_tokens = 0;  // 0 = questions × prompt_tokens
};

struct ModeAdvice {
  std::string name;  // "combined" | "parallel" | "sequential"
  double wall_s = 0;
  double ttft_s = 0;
  int64_t steps = 0;
};

struct LatencyAdvice {
  int questions = 0, tokens = 0, prompt_tokens = 0, combined_prompt_tokens = 0;
  std::vector<ModeAdvice> modes;
  std::string recommended;
  std::string reason;
  bool confident = false;
  std::string note;
  // The server's fitted step time: intercept + per decode row + per prefill row + per attended position.
  double intercept_s = 0, per_decode_row_s = 0, per_prefill_row_s = 0, per_attended_position_s = 0;
  int64_t samples = 0;
  double rms_relative_error = 0;

  const ModeAdvice* Mode(const std::string& name) const;  // null when absent
};

// GET /advisor on the client's server (its base URL's root), with its API key and timeout. Errors: what
// the connection gave (kUnavailable...), NotFound (a server without the route, e.g. not lockstep), the
// server's message for a 4xx, InvalidArgument for an answer of the wrong shape.
boost::asio::awaitable<Result<LatencyAdvice>> FetchAdvice(const OpenAiClient& client,
                                                          const AdviceQuery& query, CancellationToken* token);

Result<LatencyAdvice> ParseAdvice(const nlohmann::json& body);
// A few lines for people: each mode's predicted wall time and TTFT, the recommendation, the fit.
std::string FormatAdvice(const LatencyAdvice& advice);

}  // namespace lockstep::client
