#include "server/step_time_model.h"

#include <algorithm>
#include <cmath>

namespace lockstep::server {

namespace {

constexpr int kN = 4;  // intercept, decode rows, prefill rows, attended positions
constexpr int64_t kRefreshEvery = 32;
constexpr double kAttendedRidge = 0.05;  // in units of the (unit) scaled diagonal

// Solves A x = b (n x n, Gaussian elimination with partial pivoting) over the variables in `use`; the
// others are 0. False when singular.
bool Solve(const double a_in[kN][kN], const double b_in[kN], const bool use[kN], double x[kN]) {
  int idx[kN];
  int n = 0;
  for (int i = 0; i < kN; ++i) {
    x[i] = 0;
    if (use[i]) idx[n++] = i;
  }
  double a[kN][kN + 1];
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) a[r][c] = a_in[idx[r]][idx[c]];
    a[r][n] = b_in[idx[r]];
  }
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    if (std::fabs(a[pivot][col]) < 1e-300) return false;
    for (int c = 0; c <= n; ++c) std::swap(a[col][c], a[pivot][c]);
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (int c = col; c <= n; ++c) a[r][c] -= f * a[col][c];
    }
  }
  for (int r = 0; r < n; ++r) x[idx[r]] = a[r][n] / a[r][r];
  return true;
}

}  // namespace

double StepTimeFit::Predict(const StepShape& s) const {
  return intercept_s + per_decode_row_s * s.decode_rows + per_prefill_row_s * s.prefill_rows +
         per_attended_position_s * s.attended_positions;
}

StepTimeModel::StepTimeModel(double half_life_steps) : decay_(1.0 - std::log(2.0) / half_life_steps) {}

void StepTimeModel::Add(const StepShape& shape, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  std::lock_guard<std::mutex> lock(mu_);
  const double x[kN] = {1.0, shape.decode_rows, shape.prefill_rows, shape.attended_positions};
  double y = seconds;
  if (fit_.samples >= kRefreshEvery) {
    const double predicted = fit_.Predict(shape);
    if (predicted > 0) {
      const double rel = (seconds - predicted) / predicted;
      sq_rel_error_ = sq_rel_error_ * decay_ + std::min(rel * rel, 100.0);
      error_weight_ = error_weight_ * decay_ + 1;
      y = std::min(y, kOutlierFactor * predicted);
    }
  }
  for (int i = 0; i < kN; ++i) {
    xty_[i] = xty_[i] * decay_ + x[i] * y;
    for (int j = 0; j < kN; ++j) xtx_[i][j] = xtx_[i][j] * decay_ + x[i] * x[j];
  }
  ++fit_.samples;
  if (shape.decode_rows >= 2) ++fit_.multi_row_decode_samples;
  if (shape.prefill_rows > 0) ++fit_.prefill_samples;
  fit_.max_decode_rows_seen = std::max<int32_t>(fit_.max_decode_rows_seen, int32_t(shape.decode_rows));
  if (fit_.samples % kRefreshEvery == 0) {
    const StepTimeFit solved = SolveLocked();
    fit_.intercept_s = solved.intercept_s;
    fit_.per_decode_row_s = solved.per_decode_row_s;
    fit_.per_prefill_row_s = solved.per_prefill_row_s;
    fit_.per_attended_position_s = solved.per_attended_position_s;
  }
}

StepTimeFit StepTimeModel::SolveLocked() const {
  StepTimeFit out = fit_;
  out.rms_relative_error = error_weight_ > 0 ? std::sqrt(sq_rel_error_ / error_weight_) : 0;
  if (fit_.samples == 0) return out;
  // Scale every variable to unit diagonal (the features differ by orders of magnitude), add a tiny ridge so
  // that variables no step has varied yet (e.g. prefill rows) stay near 0 instead of making A singular.
  double scale[kN];
  for (int i = 0; i < kN; ++i) scale[i] = xtx_[i][i] > 0 ? 1.0 / std::sqrt(xtx_[i][i]) : 0.0;
  double a[kN][kN], b[kN];
  for (int i = 0; i < kN; ++i) {
    b[i] = xty_[i] * scale[i];
    for (int j = 0; j < kN; ++j) a[i][j] = xtx_[i][j] * scale[i] * scale[j];
    a[i][i] += 1e-9;
  }
  // The attended positions rise with rows and with time within a request, so on a noisy machine they soak up
  // drift (seen: 57 us per position, ~1000x the attention's real cost); a ridge keeps their coefficient to
  // what the data clearly supports.
  a[3][3] += kAttendedRidge;
  bool use[kN];
  for (int i = 0; i < kN; ++i) use[i] = scale[i] > 0;
  double x[kN] = {};
  // Active set for non-negativity: drop the most negative coefficient and solve again.
  for (int round = 0; round < kN; ++round) {
    if (!Solve(a, b, use, x)) break;
    int worst = -1;
    for (int i = 0; i < kN; ++i) {
      if (use[i] && x[i] < 0 && (worst < 0 || x[i] < x[worst])) worst = i;
    }
    if (worst < 0) break;
    use[worst] = false;
    x[worst] = 0;
  }
  out.intercept_s = std::max(0.0, x[0] * scale[0]);
  out.per_decode_row_s = std::max(0.0, x[1] * scale[1]);
  out.per_prefill_row_s = std::max(0.0, x[2] * scale[2]);
  out.per_attended_position_s = std::max(0.0, x[3] * scale[3]);
  return out;
}

StepTimeFit StepTimeModel::Fit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return SolveLocked();
}

}  // namespace lockstep::server
