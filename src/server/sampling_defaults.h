// Server-wide sampling defaults: what a request gets for the sampling fields it leaves out, set when the
// server starts (`serve --temp 0.7 --top-k 20 --dry-multiplier 0.8 ...`, as llama-server's sampling flags and
// vLLM's generation config). They apply on llama.cpp's routes (/completion, /infill) and the OpenAI routes
// (/v1/completions, /v1/chat/completions, /v1/responses); a value left unset keeps the route's own default
// (llama.cpp's temperature 0.8 on /completion, OpenAI's 1 on /v1/*). TGI's routes keep TGI's rule (greedy
// unless the request asks for sampling). Immutable once the server runs; safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/dry_breakers.h"
#include "engine/dry_penalty.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

struct SamplingDefaults {
  std::optional<float> temperature;           // --temp
  std::optional<int32_t> top_k;               // --top-k (0 = off)
  std::optional<float> top_p;                 // --top-p
  std::optional<float> min_p;                 // --min-p
  std::optional<float> repetition_penalty;    // --repeat-penalty
  std::optional<int32_t> penalty_last_n;      // --repeat-last-n
  std::optional<float> presence_penalty;      // --presence-penalty
  std::optional<float> frequency_penalty;     // --frequency-penalty
  std::optional<float> dry_multiplier;        // --dry-multiplier (0 = off)
  std::optional<float> dry_base;              // --dry-base
  std::optional<int32_t> dry_allowed_length;  // --dry-allowed-length
  std::optional<int32_t> dry_penalty_last_n;  // --dry-penalty-last-n
  // The breaker strings of requests that name none (--dry-sequence-breaker), and their restart sequences,
  // built once for the server's tokenizer (Prepare) so that such requests do not walk the vocabulary.
  std::vector<std::string> dry_breakers = DefaultDryBreakers();
  std::shared_ptr<const DrySequenceBreakers> dry_restart;

  // Each set value within what the routes accept (errors name the flag: "--top-p must be ..."); breakers as
  // the request field dry_sequence_breakers takes them (at most kMaxDryBreakers, each cut to
  // kMaxDryBreakerBytes at a character boundary, empty ones dropped). "none" alone means no breakers, as
  // llama-server's --dry-sequence-breaker none.
  static Result<SamplingDefaults> FromFlags(SamplingDefaults flags, const std::vector<std::string>& breakers);

  // Builds dry_restart for `tokenizer` (one pass over the vocabulary).
  void Prepare(const Tokenizer& tokenizer);

  // Writes the set values into `s` (and dry_restart into s.dry.breakers).
  void ApplyTo(SamplingParams& s) const;
};

}  // namespace lockstep::server
