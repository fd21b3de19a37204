#include "model/rope.h"

#include <cmath>

namespace lockstep {

Rope::Rope(const ModelConfig& config, Kind kind)
    : mode_(config.rope_mode),
      head_dim_(config.head_dim),
      position_scale_(kind == Kind::kGlobal && config.rope_scaling == RopeScaling::kLinear
                          ? 1.0 / config.rope_scale_factor
                          : 1.0),
      attn_factor_(kind == Kind::kGlobal ? config.rope_attn_factor : 1.0f) {
  const int64_t pairs = config.rope_dim / 2;
  const double base = kind == Kind::kGlobal ? config.rope_freq_base : config.rope_freq_base_local;
  inv_freq_.resize(pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    double theta = std::pow(base, -double(2 * i) / double(config.rope_dim));
    if (kind == Kind::kGlobal && !config.rope_freq_factors.empty()) theta /= config.rope_freq_factors[i];
    inv_freq_[i] = theta;
  }
}

void Rope::Angles(int32_t position, float* cos_sin) const {
  const double p = double(position) * position_scale_;
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    const double angle = p * inv_freq_[i];
    cos_sin[2 * i] = static_cast<float>(std::cos(angle)) * attn_factor_;
    cos_sin[2 * i + 1] = static_cast<float>(std::sin(angle)) * attn_factor_;
  }
}

}  // namespace lockstep
