// llama.cpp's sampler fields beyond top_k / top_p / min_p — typical_p, top_n_sigma, xtc_probability,
// xtc_threshold, min_keep, dynatemp_range, dynatemp_exponent, mirostat, mirostat_tau, mirostat_eta
// (engine/sampler.h) — read the same way on llama.cpp's /completion and on the
// OpenAI routes (llama.cpp's server takes them on both). Values where llama.cpp's filter does nothing (its
// defaults among them) leave it off. Pure; errors name the field.
#pragma once

#include "engine/sampler.h"
#include "server/request_fields.h"

namespace lockstep::server {

void ReadSamplerFilters(FieldReader& f, SamplingParams& s);

}  // namespace lockstep::server
