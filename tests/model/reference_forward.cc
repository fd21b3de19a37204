#include "model/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/model_config.h"
#include "tensor/dequantize.h"

namespace lockstep::testing {
namespace {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

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

// Rotates every head of v in place at `pos`.
void Rotate(std::vector<double>& v, int64_t heads, const ModelConfig& c, int64_t pos) {
  const int64_t half = c.rope_dim / 2;
  double scale = c.rope_scaling == RopeScaling::kLinear ? 1.0 / c.rope_scale_factor : 1.0;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      double freq = std::pow(double(c.rope_freq_base), -2.0 * i / c.rope_dim);
      if (!c.rope_freq_factors.empty()) freq /= c.rope_freq_factors[i];
      const double angle = pos * scale * freq;
      const bool neox = c.rope_mode == RopeMode::kNeox;
      const int64_t a = h * c.head_dim + (neox ? i : 2 * i);
      const int64_t b = h * c.head_dim + (neox ? i + half : 2 * i + 1);
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      v[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
  }
}

struct Layer {
  std::vector<double> attn_norm, ffn_norm, bq, bk, bv;
  Matrix wq, wk, wv, wo, gate, up, down;
};

}  // namespace

Result<std::vector<std::vector<double>>> ReferenceForward(const GgufFile& file,
                                                          const std::vector<int32_t>& tokens) {
  LOCKSTEP_ASSIGN_OR_RETURN(ModelConfig c, ModelConfig::FromGguf(file));
  LOCKSTEP_ASSIGN_OR_RETURN(Matrix embd, Load(file, "token_embd.weight"));
  Matrix output;
  if (file.FindTensor("output.weight")) {
    LOCKSTEP_ASSIGN_OR_RETURN(output, Load(file, "output.weight"));
  } else {
    output = embd;
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<double> out_norm, LoadVector(file, "output_norm.weight"));
  std::vector<Layer> layers(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer& L = layers[l];
    LOCKSTEP_ASSIGN_OR_RETURN(L.attn_norm, LoadVector(file, p + "attn_norm.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.ffn_norm, LoadVector(file, p + "ffn_norm.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.wq, Load(file, p + "attn_q.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.wk, Load(file, p + "attn_k.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.wv, Load(file, p + "attn_v.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.wo, Load(file, p + "attn_output.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down.weight"));
    if (c.qkv_bias) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.bq, LoadVector(file, p + "attn_q.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bk, LoadVector(file, p + "attn_k.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bv, LoadVector(file, p + "attn_v.bias"));
    }
  }

  const size_t n = tokens.size();
  Matrix x(n);
  for (size_t t = 0; t < n; ++t) x[t] = embd[tokens[t]];
  const int64_t group = c.n_head / c.n_head_kv;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers[l];
    Matrix q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
      const std::vector<double> h = RmsNorm(x[t], L.attn_norm, c.rms_eps);
      q[t] = MatVec(L.wq, h);
      k[t] = MatVec(L.wk, h);
      v[t] = MatVec(L.wv, h);
      if (c.qkv_bias) {
        for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += L.bq[i];
        for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += L.bk[i];
        for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += L.bv[i];
      }
      Rotate(q[t], c.n_head, c, int64_t(t));
      Rotate(k[t], c.n_head_kv, c, int64_t(t));
    }
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> att(c.q_dim(), 0.0);
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t kvh = h / group;
        std::vector<double> scores(t + 1);
        double max_score = -1e300;
        for (size_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < c.head_dim; ++i)
            dot += q[t][h * c.head_dim + i] * k[s][kvh * c.head_dim + i];
          scores[s] = dot / std::sqrt(double(c.head_dim));
          max_score = std::max(max_score, scores[s]);
        }
        double sum = 0;
        for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
        for (size_t s = 0; s <= t; ++s) {
          for (int64_t i = 0; i < c.head_dim; ++i) {
            att[h * c.head_dim + i] += scores[s] / sum * v[s][kvh * c.head_dim + i];
          }
        }
      }
      const std::vector<double> o = MatVec(L.wo, att);
      for (size_t i = 0; i < o.size(); ++i) x[t][i] += o[i];
    }
    for (size_t t = 0; t < n; ++t) {
      const std::vector<double> h = RmsNorm(x[t], L.ffn_norm, c.rms_eps);
      std::vector<double> g = MatVec(L.gate, h);
      const std::vector<double> u = MatVec(L.up, h);
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const std::vector<double> d = MatVec(L.down, g);
      for (size_t i = 0; i < d.size(); ++i) x[t][i] += d[i];
    }
  }
  std::vector<std::vector<double>> logits(n);
  for (size_t t = 0; t < n; ++t) logits[t] = MatVec(output, RmsNorm(x[t], out_norm, c.rms_eps));
  return logits;
}

}  // namespace lockstep::testing
