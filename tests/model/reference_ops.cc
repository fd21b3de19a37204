#include <algorithm>
#include <cmath>
#include <string>

#include "model/reference_internal.h"
#include "tensor/dequantize.h"

namespace lockstep::testing::reference {

Result<Matrix> Load(const GgufFile& file, const std::string& name) {
  const GgufTensorInfo* t = file.FindTensor(name);
  if (t == nullptr) return NotFound("reference: no tensor " + name);
  const int64_t cols = t->dims[0];
  const int64_t rows = t->rows();
  const size_t row_bytes = RowBytes(t->type, cols);
  Matrix m(rows, std::vector<double>(cols));
  std::vector<float> tmp(cols);
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(t->type, t->data + r * row_bytes, tmp.data(), cols);
    for (int64_t c = 0; c < cols; ++c) m[r][c] = tmp[c];
  }
  return m;
}

Result<std::vector<double>> LoadVector(const GgufFile& file, const std::string& name) {
  LOCKSTEP_ASSIGN_OR_RETURN(Matrix m, Load(file, name));
  return m[0];
}

std::vector<double> MatVec(const Matrix& w, const std::vector<double>& x) {
  std::vector<double> y(w.size(), 0.0);
  for (size_t o = 0; o < w.size(); ++o) {
    for (size_t i = 0; i < x.size(); ++i) y[o] += w[o][i] * x[i];
  }
  return y;
}

std::vector<double> RmsNorm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

std::vector<double> LayerNorm(const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b, double eps) {
  double mean = 0, variance = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  for (double v : x) variance += (v - mean) * (v - mean);
  const double scale = 1.0 / std::sqrt(variance / double(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * scale * w[i] + (b.empty() ? 0.0 : b[i]);
  return y;
}

void Rotate(std::vector<double>& v, int64_t heads, const ModelConfig& c, int64_t pos, bool local) {
  // Gemma 4's local layers: heads of head_dim_local, rope_dim_local of them rotated.
  const int64_t rope_dim = local && c.rope_dim_local > 0 ? c.rope_dim_local : c.rope_dim;
  const int64_t head_dim = local && c.head_dim_local > 0 ? c.head_dim_local : c.head_dim;
  const int64_t half = rope_dim / 2;
  const double scale = !local && c.rope_scaling == RopeScaling::kLinear ? 1.0 / c.rope_scale_factor : 1.0;
  const double base = local ? c.rope_freq_base_local : c.rope_freq_base;
  double mscale = local ? 1.0 : c.rope_attn_factor;
  // YaRN (the paper's formulas, as ggml applies them): dims below `low` keep their frequency, above `high`
  // it is divided by the factor, linear between; magnitudes times 1 + 0.1 ln factor.
  const bool yarn = !local && c.rope_scaling == RopeScaling::kYarn;
  auto corr_dim = [&](double rotations) {
    return c.rope_dim * std::log(double(c.rope_orig_ctx) / (rotations * 2 * M_PI)) / (2 * std::log(base));
  };
  const double low = yarn ? std::max(0.0, std::floor(corr_dim(c.yarn_beta_fast))) : 0;
  const double high = yarn ? std::min(double(c.rope_dim - 1), std::ceil(corr_dim(c.yarn_beta_slow))) : 0;
  // transformers' attention_factor: get_mscale(factor) / get_mscale(factor, mscale_all_dim).
  const double ln_factor = std::log(double(c.rope_scale_factor));
  if (yarn) mscale *= (1 + 0.1 * ln_factor) / (1 + 0.1 * c.yarn_log_mul * ln_factor);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      double freq = std::pow(base, -2.0 * i / rope_dim);
      if (!local && !c.rope_freq_factors.empty()) freq /= c.rope_freq_factors[i];
      if (yarn) {
        const double extrapolate = 1 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
        freq = freq / c.rope_scale_factor * (1 - extrapolate) + freq * extrapolate;
      }
      const double angle = pos * scale * freq;
      const bool neox = c.rope_mode == RopeMode::kNeox;
      const int64_t a = h * head_dim + (neox ? i : 2 * i);
      const int64_t b = h * head_dim + (neox ? i + half : 2 * i + 1);
      const double x0 = v[a], x1 = v[b];
      v[a] = mscale * (x0 * std::cos(angle) - x1 * std::sin(angle));
      v[b] = mscale * (x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
}

void NormHeads(std::vector<double>& v, const std::vector<double>& w, double eps) {
  for (size_t h = 0; h < v.size() / w.size(); ++h) {
    std::vector<double> head(v.begin() + h * w.size(), v.begin() + (h + 1) * w.size());
    head = RmsNorm(head, w, eps);
    std::copy(head.begin(), head.end(), v.begin() + h * w.size());
  }
}

Matrix RowRange(const Matrix& m, size_t first, size_t count) {
  return Matrix(m.begin() + first, m.begin() + first + count);
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double Gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

std::vector<double> SwiGlu(const Matrix& gate, const Matrix& up, const Matrix& down,
                           const std::vector<double>& h, bool clamped, const std::vector<double>* gate_b,
                           const std::vector<double>* up_b, const std::vector<double>* down_b) {
  std::vector<double> g = MatVec(gate, h);
  std::vector<double> u = MatVec(up, h);
  for (size_t i = 0; i < g.size() && gate_b != nullptr; ++i) {
    g[i] += (*gate_b)[i];
    u[i] += (*up_b)[i];
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (clamped) {
      const double x = std::min(g[i], 7.0), y = std::clamp(u[i], -7.0, 7.0);
      g[i] = x / (1.0 + std::exp(-1.702 * x)) * (y + 1);
    } else {
      g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    }
  }
  std::vector<double> d = MatVec(down, g);
  for (size_t i = 0; i < d.size() && down_b != nullptr; ++i) d[i] += (*down_b)[i];
  return d;
}

}  // namespace lockstep::testing::reference
