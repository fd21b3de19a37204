#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lockstep {

std::array<float, 2> YarnCorrectionDims(int64_t rope_dim, int64_t orig_ctx, float freq_base, float beta_fast,
                                        float beta_slow) {
  // The dim whose wavelength fits `rotations` times into orig_ctx, in f32 as ggml computes it (the floor and
  // ceil make it discrete: a last-bit difference could move a whole pair).
  auto dim = [&](float rotations) {
    return float(rope_dim) * std::log(float(orig_ctx) / (rotations * 2 * float(std::numbers::pi))) /
           (2 * std::log(freq_base));
  };
  return {std::max(0.0f, std::floor(dim(beta_fast))),
          std::min(float(rope_dim - 1), std::ceil(dim(beta_slow)))};
}

Rope::Rope(const ModelConfig& config, Kind kind)
    : mode_(config.rope_mode),
      head_dim_(kind == Kind::kLocal && config.head_dim_local > 0 ? config.head_dim_local : config.head_dim),
      position_scale_(kind == Kind::kGlobal && config.rope_scaling == RopeScaling::kLinear
                          ? 1.0 / config.rope_scale_factor
                          : 1.0),
      attn_factor_(kind == Kind::kGlobal ? config.rope_attn_factor : 1.0f) {
  const int64_t rope_dim =
      kind == Kind::kLocal && config.rope_dim_local > 0 ? config.rope_dim_local : config.rope_dim;
  const int64_t pairs = rope_dim / 2;
  const double base = kind == Kind::kGlobal ? config.rope_freq_base : config.rope_freq_base_local;
  const bool yarn = kind == Kind::kGlobal && config.rope_scaling == RopeScaling::kYarn;
  std::array<float, 2> corr = {0, 0};
  const double freq_scale = yarn ? 1.0 / config.rope_scale_factor : 1.0;
  if (yarn) {
    corr = YarnCorrectionDims(config.rope_dim, config.rope_orig_ctx, float(base), config.yarn_beta_fast,
                              config.yarn_beta_slow);
    // YaRN's magnitude correction, only when it extrapolates at all (ggml: ext_factor != 0).
    // transformers' get_mscale(factor) / get_mscale(factor, mscale_all_dim); ggml's rope applies the
    // first, llama.cpp passes the rest in its attention factor (yarn_attn_factor_adjust).
    if (config.yarn_ext_factor != 0) {
      const float log_factor = std::log(1.0f / float(freq_scale));
      attn_factor_ *= (1.0f + 0.1f * log_factor) / (1.0f + 0.1f * config.yarn_log_mul * log_factor);
    }
  }
  inv_freq_.resize(pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    double theta = std::pow(base, -double(2 * i) / double(rope_dim));
    if (kind == Kind::kGlobal && !config.rope_freq_factors.empty()) theta /= config.rope_freq_factors[i];
    if (yarn) {
      // Pair i's mix of the original (extrapolated) and interpolated theta: 1 below corr[0], 0 above corr[1],
      // linear between (ggml's rope_yarn_ramp), times ext_factor. The angle is linear in the position, so
      // the mix applies to theta itself.
      const float ramp = (float(i) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
      const double mix = double(1 - std::min(1.0f, std::max(0.0f, ramp))) * config.yarn_ext_factor;
      theta = theta * freq_scale * (1 - mix) + theta * mix;
    }
    inv_freq_[i] = theta;
  }
}

float QueryTemperature(const ModelConfig& config, int32_t position) {
  if (config.attn_temperature_scale == 0) return 1.0f;
  const double steps = std::floor(double(position) / double(config.attn_temperature_length));
  return float(1.0 + double(config.attn_temperature_scale) * std::log1p(steps));
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
