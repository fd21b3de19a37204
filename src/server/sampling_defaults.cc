#include "server/sampling_defaults.h"

#include "base/flag_range.h"
#include "server/sampler_fields.h"

namespace lockstep::server {

Result<SamplingDefaults> SamplingDefaults::FromFlags(SamplingDefaults d,
                                                     const std::vector<std::string>& breakers) {
  // The ranges of llama.cpp's /completion fields (server/llamacpp_api.cc), which the OpenAI routes clamp
  // no further than their own fields do.
  for (Status s :
       {CheckFlagRange(d.temperature, "--temp", 0, 100, "from 0 to 100 (0 = greedy)"),
        CheckFlagRange(d.top_k, "--top-k", 0, 1 << 30, "from 0 (off) to 1073741824"),
        CheckFlagRange(d.top_p, "--top-p", 1e-6, 1, "above 0 and at most 1"),
        CheckFlagRange(d.min_p, "--min-p", 0, 1, "from 0 to 1"),
        CheckFlagRange(d.repetition_penalty, "--repeat-penalty", 1e-6, 10, "above 0 and at most 10"),
        CheckFlagRange(d.penalty_last_n, "--repeat-last-n", -1, INT32_MAX, "-1 (all) or more"),
        CheckFlagRange(d.presence_penalty, "--presence-penalty", -2, 2, "from -2 to 2"),
        CheckFlagRange(d.frequency_penalty, "--frequency-penalty", -2, 2, "from -2 to 2")}) {
    if (!s.ok()) return s;
  }
  // DRY's flags as the local commands check them: unset ones hold the sampler's defaults, which pass.
  DryParams dry;
  if (d.dry_multiplier) dry.multiplier = *d.dry_multiplier;
  if (d.dry_base) dry.base = *d.dry_base;
  if (d.dry_allowed_length) dry.allowed_length = *d.dry_allowed_length;
  if (d.dry_penalty_last_n) dry.penalty_last_n = *d.dry_penalty_last_n;
  LOCKSTEP_RETURN_IF_ERROR(CheckDryFlags(dry));
  LOCKSTEP_ASSIGN_OR_RETURN(d.dry_breakers, DryBreakersFromFlags(breakers));
  return d;
}

void SamplingDefaults::Prepare(const Tokenizer& tokenizer) {
  dry_restart = DryRestartSequences(tokenizer, dry_breakers);
}

void SamplingDefaults::ApplyTo(SamplingParams& s) const {
  if (temperature) s.temperature = *temperature;
  if (top_k) s.top_k = *top_k;
  if (top_p) s.top_p = *top_p;
  if (min_p) s.min_p = *min_p;
  if (repetition_penalty) s.repetition_penalty = *repetition_penalty;
  if (penalty_last_n) s.penalty_last_n = *penalty_last_n;
  if (presence_penalty) s.presence_penalty = *presence_penalty;
  if (frequency_penalty) s.frequency_penalty = *frequency_penalty;
  if (dry_multiplier) s.dry.multiplier = *dry_multiplier;
  if (dry_base) s.dry.base = *dry_base;
  if (dry_allowed_length) s.dry.allowed_length = *dry_allowed_length;
  if (dry_penalty_last_n) s.dry.penalty_last_n = *dry_penalty_last_n;
  s.dry.breakers = dry_restart;
}

}  // namespace lockstep::server
