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

// All text of an OpenAI stream (chat deltas or completion texts) by choice index; "[DONE]" must be the last event.
std::map<int, std::string> CollectOpenAiText(const std::vector<std::string>& events, bool chat, bool* saw_done);

}  // namespace lockstep::server::testing
