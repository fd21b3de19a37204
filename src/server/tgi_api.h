// Hugging Face Text Generation Inference API: parsing + validation of POST /generate, /generate_stream and
// `/` bodies ({inputs, parameters, stream}) into a GenerationSpec, and the response shapes (details, stream
// events, /info). Validation errors are 422 naming the field (api_error.h). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_context.h"
#include "server/generation.h"

namespace lockstep::server {

struct TgiRequest {
  GenerationSpec spec;
  std::string inputs;
  bool stream = false;  // `/` with "stream": true, or /generate_stream
  bool details = false;
  bool decoder_input_details = false;  // details.prefill: the prompt's tokens with their logprobs
  bool return_full_text = false;
  int top_n_tokens = 0;
};

Parsed<TgiRequest> ParseTgiRequest(const std::string& body, const ApiContext& ctx);

// "length" | "eos_token" | "stop_sequence", and (lockstep's, beyond TGI's three) "timeout" | "abort" for a
// request cut short by --timeout or by a server shutdown.
std::string TgiFinishReason(const ChoiceState& choice);
// Of best_of sampled sequences, the one with the highest total log-probability (the only one when best_of 1).
const ChoiceState& TgiBestChoice(GenerationJob& job);
// The GenerateResponse of POST /generate (POST / wraps it in a one-element array); with best_of > 1 the most
// likely sequence, the others in details.best_of_sequences.
nlohmann::json TgiResponse(const TgiRequest& req, GenerationJob& job, const ApiContext& ctx);
// One stream event for a token event (nullopt when the event carries no token and is not the last).
std::optional<nlohmann::json> TgiStreamEvent(const TgiRequest& req, const ChoiceState& choice,
                                             const TokenEvent& event, const ApiContext& ctx);
nlohmann::json TgiInfo(const ApiContext& ctx);

}  // namespace lockstep::server
