// llama.cpp's native server API (what llama-server's own clients, scripts and editor plugins call):
//   POST /completion, /completions  {prompt, n_predict, temperature, top_k, top_p, min_p, repeat_penalty,
//                   repeat_last_n, presence_penalty, frequency_penalty, seed, stop, ignore_eos, logit_bias,
//                   n_probs, grammar, json_schema, stream, return_tokens, n_cmpl, response_fields, ...} →
//                   {content, tokens, stop: true, stop_type, stopping_word, tokens_predicted,
//                   tokens_evaluated, tokens_cached, generation_settings, prompt, timings,
//                   completion_probabilities?} (an array of them when the prompt held several prompts);
//                   streamed as `data: {content, stop: false}` events and a last `stop: true` summary,
//                   without `[DONE]` (as llama.cpp's native route).
//   GET /props      {default_generation_settings: {n_ctx, params}, total_slots, model_path, chat_template,
//                   modalities, build_info, ...}.
// Defaults are llama.cpp's (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, n_predict -1 = until EOS or
// the context is full). llama.cpp's further samplers (typical_p, top_n_sigma, XTC, mirostat, dynamic
// temperature, DRY) are read by server/sampler_fields.h. Fields of features lockstep lacks
// (post_sampling_probs, multimodal data) are accepted only at llama.cpp's default, where they do nothing;
// another value is a 400 naming the field. `samplers` is type-checked and ignored (lockstep's chain is fixed:
// generation_settings reports it). docs/server.md lists every accepted-but-ignored field. Errors:
// ApiFlavor::kLlamaCpp, 400 naming the field. Pure functions over their arguments; safe from any thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_context.h"
#include "server/generation.h"
#include "server/request_fields.h"

namespace lockstep::server {

class SlotView;

struct LlamaCppRequest {
  GenerationSpec spec;
  bool stream = false;
  bool several = false;  // the prompt held several prompts (or n_cmpl > 1): the answer is an array
  int n_probs = 0;       // top-N alternatives per generated token (completion_probabilities)
  bool return_tokens = false;
  int64_t n_predict = -1;                    // as asked (-1: until EOS or the context is full)
  std::string grammar;                       // the GBNF in use ("" = none), reported in generation_settings
  std::vector<std::string> response_fields;  // llama.cpp's response_fields ("a/b" unnests b); empty: all
  // DRY's breaker strings in effect (the sampler has them as token sequences), for generation_settings.
  std::vector<std::string> dry_sequence_breakers;
  // llama.cpp's code-completion stops (0: off), which end a choice as `limit` (LlamaCppIndentCut,
  // LlamaCppPredictTimeUp).
  int n_indent = 0;
  int64_t t_max_predict_ms = 0;
};

// A request with llama.cpp's defaults and no prompt (what /props reports).
LlamaCppRequest LlamaCppDefaults(const ApiContext& ctx);
Parsed<LlamaCppRequest> ParseLlamaCppCompletion(const std::string& body, const ApiContext& ctx);

// Reads a route's prompt field(s) into req.spec.prompts (/completion's `prompt`, /infill's input_* fields);
// called after every other field was read (req.n_predict is set), before the prompts are fitted to the
// context. Errors name the field.
using LlamaCppPromptReader =
    std::function<Parsed<bool>(FieldReader& f, const ApiContext& ctx, LlamaCppRequest& req)>;
// The parser /completion and /infill share: llama.cpp's defaults, every sampling and output field, then
// `read_prompt`, then the grammar and the fit to the context (n_predict).
Parsed<LlamaCppRequest> ParseLlamaCppRequest(const std::string& body, const ApiContext& ctx,
                                             const LlamaCppPromptReader& read_prompt);

// The whole result of one choice (non-streamed), response_fields applied.
nlohmann::json LlamaCppResult(const LlamaCppRequest& req, GenerationJob& job, const ChoiceState& choice,
                              const ApiContext& ctx);
// The stream events of one token event: a `stop: false` chunk for a token or text, then, on the last event,
// the `stop: true` summary (content "", as llama.cpp's stream ends).
std::vector<nlohmann::json> LlamaCppStreamEvents(const LlamaCppRequest& req, GenerationJob& job,
                                                 const ChoiceState& choice, const TokenEvent& event,
                                                 const ApiContext& ctx);
// GET /props.
nlohmann::json LlamaCppProps(const ApiContext& ctx);
// GET /slots (server/slot_view.h): a running request's params are its generation settings, an idle seat's
// the defaults.
nlohmann::json LlamaCppSlots(const ApiContext& ctx, const SlotView& slots);

// n_indent (llama.cpp's): once the text has a new line, a line whose first non-blank character comes after
// fewer than n_indent spaces or tabs ends the choice there, the line's indentation kept (the code block the
// editor asked for is over). Where to cut `text`, or npos to go on. The first line (the cursor's) is never
// checked.
size_t LlamaCppIndentCut(std::string_view text, int n_indent);
// t_max_predict_ms (llama.cpp's): the choice ends once more than that has passed since its first token and
// the text has a new line.
bool LlamaCppPredictTimeUp(std::string_view text, double ms_since_first_token, int64_t t_max_predict_ms);

}  // namespace lockstep::server
