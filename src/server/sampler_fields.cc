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

namespace {

// dry_sequence_breakers: a non-empty array of strings (empty strings dropped, each cut by CutDryBreaker).
std::optional<std::vector<std::string>> ReadBreakerStrings(FieldReader& f) {
  const nlohmann::json* list = f.Array("dry_sequence_breakers");
  if (list == nullptr || !list->is_array()) return std::nullopt;  // absent, or f has failed
  if (list->empty()) {
    f.Fail("dry_sequence_breakers", "dry_sequence_breakers must be a non-empty array of strings");
    return std::nullopt;
  }
  if (list->size() > kMaxDryBreakers) {
    f.Fail("dry_sequence_breakers", "dry_sequence_breakers may hold at most " +
                                        std::to_string(kMaxDryBreakers) + " strings, got " +
                                        std::to_string(list->size()));
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& item = (*list)[i];
    if (!item.is_string()) {
      f.Fail("dry_sequence_breakers",
             "dry_sequence_breakers[" + std::to_string(i) + "] must be a string, got " + DescribeJson(item));
      return std::nullopt;
    }
    if (!item.get_ref<const std::string&>().empty()) out.push_back(CutDryBreaker(item.get<std::string>()));
  }
  return out;
}

}  // namespace

void ReadDryFields(FieldReader& f, const Tokenizer& tokenizer, const SamplingDefaults& defaults,
                   SamplingParams& s, std::vector<std::string>* breakers) {
  DryParams& dry = s.dry;
  if (auto multiplier = f.Number("dry_multiplier", 0, 1e6)) dry.multiplier = static_cast<float>(*multiplier);
  // llama.cpp's server reads a base below 1 (where its sampler would do nothing) as its default.
  if (auto base = f.Number("dry_base", -1e6, 1e6))
    dry.base = *base < 1 ? DryParams().base : static_cast<float>(*base);
  if (auto allowed = f.Int("dry_allowed_length", 0, INT32_MAX))
    dry.allowed_length = static_cast<int32_t>(*allowed);
  if (auto last_n = f.Int("dry_penalty_last_n", -1, INT32_MAX))
    dry.penalty_last_n = static_cast<int32_t>(*last_n);
  std::optional<std::vector<std::string>> strings = ReadBreakerStrings(f);
  if (f.failed()) return;
  if (!strings) {
    // The server's breakers, whose restart sequences were built when it started (or here, for a caller
    // whose defaults were never prepared).
    strings = defaults.dry_breakers;
    dry.breakers = defaults.dry_restart;
    if (dry.enabled() && dry.breakers == nullptr) dry.breakers = DryRestartSequences(tokenizer, *strings);
  } else {
    dry.breakers = dry.enabled() ? DryRestartSequences(tokenizer, *strings) : nullptr;
  }
  if (breakers != nullptr) *breakers = std::move(*strings);
}

}  // namespace lockstep::server
