// StepTimeModel: an online least-squares fit of the engine's step time by the shape of the step,
//   seconds ≈ a + b_decode · decode_rows + b_prefill · prefill_rows + c · attended_positions,
// from every step the engine reports (attended_positions: the sum over rows of position + 1). Old steps fade
// out (each new step multiplies the weight of the others by 1 - 1/half_life·ln2), so the fit follows the
// machine's current speed; a step far slower than the fit predicts (another process took the CPU) counts as
// at most kOutlierFactor times the prediction. Coefficients are kept non-negative. Thread-safe (a mutex).
#pragma once

#include <cstdint>
#include <mutex>

namespace lockstep::server {

struct StepShape {
  double decode_rows = 0;
  double prefill_rows = 0;
  double attended_positions = 0;
};

struct StepTimeFit {
  double intercept_s = 0;                // a
  double per_decode_row_s = 0;           // b_decode
  double per_prefill_row_s = 0;          // b_prefill
  double per_attended_position_s = 0;    // c
  int64_t samples = 0;                   // steps seen
  int64_t multi_row_decode_samples = 0;  // steps with >= 2 decode rows (what separates a from b_decode)
  int64_t prefill_samples = 0;           // steps with prefill rows
  int32_t max_decode_rows_seen = 0;
  double rms_relative_error = 0;  // of the recent steps against the fit
  double Predict(const StepShape& shape) const;
};

class StepTimeModel {
 public:
  static constexpr double kOutlierFactor = 3.0;
  explicit StepTimeModel(double half_life_steps = 20000);

  void Add(const StepShape& shape, double seconds);
  StepTimeFit Fit() const;

 private:
  StepTimeFit SolveLocked() const;

  mutable std::mutex mu_;
  double decay_;
  double xtx_[4][4] = {};
  double xty_[4] = {};
  StepTimeFit fit_;  // refreshed every few samples
  double sq_rel_error_ = 0, error_weight_ = 0;
};

}  // namespace lockstep::server
