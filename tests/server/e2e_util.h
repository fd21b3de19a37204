// Shared pieces of the end-to-end server tests: test models made once per test process with
// `lockstep make-model`, and a per-suite server.
#pragma once

#include <memory>
#include <string>

#include "test_client.h"

namespace lockstep::server::testing {

// `make-model --shape tiny` (fast; 256-token context), made once per process.
const std::string& TinyModel();
// `make-model --shape stories15m` (slower per token, so requests stay in flight for a while).
const std::string& SlowModel();

// All text of an OpenAI stream (chat deltas or completion texts) by choice index; "[DONE]" must be the last
// event.
std::map<int, std::string> CollectOpenAiText(const std::vector<std::string>& events, bool chat,
                                             bool* saw_done);

// The value of a metric sample on a running server's /metrics (-1 when absent).
double Metric(int port, const std::string& sample);
// Polls /metrics until nothing runs or waits and no KV is in use (adds a failure and returns false after ~10
// s).
bool WaitForIdleEngine(int port);
// Polls /metrics until `sample` reaches `value` (false after ~10 s).
bool WaitForMetric(int port, const std::string& sample, double value);

}  // namespace lockstep::server::testing
