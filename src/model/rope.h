// Rotary position embedding for one row: rotates the first rope_dim dims of each head of a [heads][head_dim]
// vector by angles position * theta_i, theta_i = freq_base^(-2i/rope_dim) / factor_i (factor_i from llama3
// or longrope scaling, positions divided by the linear scale factor), cos and sin times rope_attn_factor
// (longrope). Pairing per RopeMode (model/model_config.h); the dims past rope_dim (partial rotary) stay.
// YaRN (RopeScaling::kYarn, as ggml's rope computes it): pair i's theta is mixed from theta / factor and
// theta by YaRN's ramp over YarnCorrectionDims, and cos/sin are also scaled by YaRN's magnitude,
// (1 + 0.1 ln factor) / (1 + 0.1 yarn_log_mul ln factor).
// The local Rope of a config (Gemma 3's local layers): base rope_freq_base_local, no scaling of any kind
// (Gemma 4's: also rope_dim_local of heads head_dim_local wide).
// Rope is immutable after construction; Apply (the rotation is the kernel table's, tensor/rope_kernels.h) is
// safe from any thread with its own `cos_sin` scratch.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "tensor/kernels.h"

namespace lockstep {

// YaRN's correction dims (ggml_rope_yarn_corr_dims): the pairs below the first keep their theta, those above
// the second are interpolated (theta / factor), those between are ramped; in f32 as ggml.
std::array<float, 2> YarnCorrectionDims(int64_t rope_dim, int64_t orig_ctx, float freq_base, float beta_fast,
                                        float beta_slow);

// Llama 4's query temperature at `position` (ModelConfig::attn_temperature_scale; 1 when it is 0):
// 1 + beta ln(1 + floor(position / attn_temperature_length)), as transformers' Ministral 3 computes it.
float QueryTemperature(const ModelConfig& config, int32_t position);

class Rope {
 public:
  enum class Kind { kGlobal, kLocal };
  explicit Rope(const ModelConfig& config, Kind kind = Kind::kGlobal);

  int64_t pairs() const { return static_cast<int64_t>(inv_freq_.size()); }
  // cos_sin: scratch of 2 * pairs() floats, filled for `position`.
  void Angles(int32_t position, float* cos_sin) const;
  // Rotates `heads` heads of x ([heads][head_dim]) with angles from Angles(), by `kernels`' rope kernel.
  void Apply(const ElementwiseKernels& kernels, const float* cos_sin, float* x, int64_t heads) const {
    kernels.rope(cos_sin, pairs(), mode_ == RopeMode::kNeox, head_dim_, x, heads);
  }

 private:
  RopeMode mode_;
  int64_t head_dim_;
  double position_scale_;
  float attn_factor_;
  std::vector<double> inv_freq_;  // theta_i per pair
};

}  // namespace lockstep
