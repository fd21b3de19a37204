// llama.cpp's sampler fields beyond top_k / top_p / min_p — typical_p, top_n_sigma, xtc_probability,
// xtc_threshold, min_keep, dynatemp_range, dynatemp_exponent, mirostat, mirostat_tau, mirostat_eta
// (engine/sampler.h) and DRY's dry_* (engine/dry_penalty.h) — read the same way on llama.cpp's /completion
// and on the OpenAI routes (llama.cpp's server takes them on both). Values where llama.cpp's filter does
// nothing (its defaults among them) leave it off. Pure; errors name the field; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/dry_breakers.h"
#include "engine/dry_penalty.h"
#include "engine/sampler.h"
#include "server/request_fields.h"
#include "server/sampling_defaults.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

void ReadSamplerFilters(FieldReader& f, SamplingParams& s);

// DRY: dry_multiplier (>= 0; 0 off), dry_base (< 1 reads as 1.75, as llama.cpp's server), dry_allowed_length
// (>= 0), dry_penalty_last_n (-1 the whole context, 0 off), dry_sequence_breakers (a non-empty array of
// strings; empty strings skipped, as llama.cpp). Into s.dry, over the values already there (the route's and
// the server's defaults); when DRY is on, the breakers become the sampler's restart sequences through
// `tokenizer` — absent, the server's (`defaults`, prepared once). `breakers`, when given, receives the
// breaker strings in effect (cut by CutDryBreaker, engine/dry_breakers.h), for generation_settings.
void ReadDryFields(FieldReader& f, const Tokenizer& tokenizer, const SamplingDefaults& defaults,
                   SamplingParams& s, std::vector<std::string>* breakers = nullptr);

}  // namespace lockstep::server
