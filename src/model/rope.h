// Rotary position embedding for one row: rotates the first rope_dim dims of each head of a [heads][head_dim]
// vector by angles position * theta_i, theta_i = freq_base^(-2i/rope_dim) / factor_i (factor_i from llama3
// scaling, positions divided by the linear scale factor). Pairing per RopeMode (model/model_config.h).
// Rope is immutable after construction; Apply is safe from any thread with its own `cos_sin` scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace lockstep {

class Rope {
 public:
  explicit Rope(const ModelConfig& config);

  int64_t pairs() const { return static_cast<int64_t>(inv_freq_.size()); }
  // cos_sin: scratch of 2 * pairs() floats, filled for `position`.
  void Angles(int32_t position, float* cos_sin) const;
  // Rotates `heads` heads of x ([heads][head_dim]) with angles from Angles().
  void Apply(const float* cos_sin, float* x, int64_t heads) const;

 private:
  RopeMode mode_;
  int64_t head_dim_;
  double position_scale_;
  std::vector<double> inv_freq_;  // theta_i per pair
};

}  // namespace lockstep
