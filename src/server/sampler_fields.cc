#include "server/sampler_fields.h"

#include <algorithm>

namespace lockstep::server {

void ReadSamplerFilters(FieldReader& f, SamplingParams& s) {
  // typical_p >= 1 is off; 0 keeps the most typical token only (min_keep), as llama.cpp's.
  if (auto typical = f.Number("typical_p", 0, 1e9)) {
    s.typical_p = static_cast<float>(std::clamp(*typical, 1e-6, 1.0));
  }
  // top_n_sigma <= 0 is off (llama.cpp's default -1).
  if (auto sigma = f.Number("top_n_sigma", -1e9, 1e9)) s.top_n_sigma = static_cast<float>(*sigma);
  if (auto probability = f.Number("xtc_probability", 0, 1))
    s.xtc_probability = static_cast<float>(*probability);
  // A threshold above 0.5 is off (no two tokens can both be above it).
  if (auto threshold = f.Number("xtc_threshold", 0, 1)) s.xtc_threshold = static_cast<float>(*threshold);
  if (auto keep = f.Int("min_keep", 0, 1 << 30)) s.min_keep = static_cast<int32_t>(*keep);
  if (auto range = f.Number("dynatemp_range", 0, 1e6)) s.dynatemp_range = static_cast<float>(*range);
  if (auto exponent = f.Number("dynatemp_exponent", -1e6, 1e6))
    s.dynatemp_exponent = static_cast<float>(*exponent);
  // Mirostat 1 or 2 in place of top_k and the filters (0 = off), with its target surprise and learning rate.
  if (auto mirostat = f.Int("mirostat", 0, 2)) s.mirostat = static_cast<int32_t>(*mirostat);
  if (auto tau = f.Number("mirostat_tau", -1e6, 1e6)) s.mirostat_tau = static_cast<float>(*tau);
  if (auto eta = f.Number("mirostat_eta", -1e6, 1e6)) s.mirostat_eta = static_cast<float>(*eta);
}

}  // namespace lockstep::server
