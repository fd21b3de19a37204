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

// Rotates every head of v in place at `pos` (a local layer's RoPE: the local base, unscaled).
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

// RMSNorm of each head_dim slice of v.
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

struct Layer {
  std::vector<double> attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm, post_attn_norm, post_ffn_norm;
  // gpt-oss: the sinks [n_head], attn_output's bias, the router's bias and the experts' [n_expert][width].
  std::vector<double> sinks, bo, router_b;
  Matrix gate_b, up_b, down_b;
  Matrix wq, wk, wv, wo, gate, up, down;
  // Mixture of experts: the router [n_expert][n_embd] and each expert's gate, up and down (qwen2moe: the
  // shared expert in gate, up and down, its gate in shared_gate).
  Matrix router;
  std::vector<double> shared_gate, selection_bias;
  // deepseek2's latent attention (wq is attn_q when there is no query LoRA; split files: wk_b and wv_b, as
  // loaded: wk_b's rows [n_head * kv_lora_rank] of k_nope width, wv_b's [n_head * value_dim] of
  // kv_lora_rank).
  Matrix wq_a, wq_b, wkv_a, wkv_b, wk_b, wv_b;
  std::vector<double> q_a_norm, kv_a_norm;
  std::vector<Matrix> expert_gate, expert_up, expert_down;
  // Gemma 4: the output scale (empty: none) and the per-layer input's gate, projection and post-norm.
  std::vector<double> out_scale, pl_post_norm;
  Matrix pl_gate, pl_proj;
  // qwen35's Gated DeltaNet layers: the projections, conv taps [channel][tap], and per-head vectors.
  Matrix dn_qkv, dn_z, dn_beta, dn_alpha, dn_out, dn_conv;
  std::vector<double> dn_a, dn_dt, dn_norm;
};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Gated DeltaNet (the paper's recurrent form) over a whole sequence of normed inputs h[t]: returns each
// position's layer output. All in double, the conv and the state starting from zeros.
Matrix DeltaNetReference(const Layer& L, const ModelConfig& c, const Matrix& h) {
  const DeltaNetConfig& dn = c.delta_net;
  const size_t n = h.size();
  const int64_t channels = dn.ConvChannels(), kd = dn.head_k_dim, vd = dn.head_v_dim;
  Matrix raw(n), z(n), out(n);
  for (size_t t = 0; t < n; ++t) {
    raw[t] = MatVec(L.dn_qkv, h[t]);
    z[t] = MatVec(L.dn_z, h[t]);
  }
  // S[head][i][j]: value row i, key column j.
  std::vector<Matrix> S(size_t(dn.v_heads), Matrix(size_t(vd), std::vector<double>(size_t(kd), 0.0)));
  for (size_t t = 0; t < n; ++t) {
    std::vector<double> y(static_cast<size_t>(channels), 0.0);
    for (int64_t ch = 0; ch < channels; ++ch) {  // taps over inputs t - K + 1 .. t (zeros before 0)
      double sum = 0;
      for (int64_t i = 0; i < dn.conv_kernel; ++i) {
        const int64_t s = int64_t(t) - (dn.conv_kernel - 1) + i;
        if (s >= 0) sum += raw[size_t(s)][size_t(ch)] * L.dn_conv[size_t(ch)][size_t(i)];
      }
      y[size_t(ch)] = sum * Sigmoid(sum);
    }
    auto l2 = [&](int64_t offset, double scale) {
      double ss = 0;
      for (int64_t i = 0; i < kd; ++i) ss += y[size_t(offset + i)] * y[size_t(offset + i)];
      const double f = scale / std::max(std::sqrt(ss), double(c.rms_eps));
      for (int64_t i = 0; i < kd; ++i) y[size_t(offset + i)] *= f;
    };
    for (int64_t hk = 0; hk < dn.k_heads; ++hk) {
      l2(hk * kd, 1.0 / std::sqrt(double(kd)));
      l2(dn.key_dim() + hk * kd, 1.0);
    }
    const std::vector<double> b = MatVec(L.dn_beta, h[t]), a = MatVec(L.dn_alpha, h[t]);
    std::vector<double> o(static_cast<size_t>(dn.value_dim()), 0.0);
    for (int64_t hv = 0; hv < dn.v_heads; ++hv) {
      const int64_t hk = dn.tiled_heads ? hv % dn.k_heads : hv / (dn.v_heads / dn.k_heads);
      const double* q = &y[size_t(hk * kd)];
      const double* k = &y[size_t(dn.key_dim() + hk * kd)];
      const double* v = &y[size_t(2 * dn.key_dim() + hv * vd)];
      const double x = a[size_t(hv)] + L.dn_dt[size_t(hv)];
      const double softplus = x > 20 ? x : std::log1p(std::exp(x));
      const double decay = std::exp(L.dn_a[size_t(hv)] * softplus), beta = Sigmoid(b[size_t(hv)]);
      Matrix& st = S[size_t(hv)];
      for (int64_t i = 0; i < vd; ++i) {
        double kv = 0;
        for (int64_t j = 0; j < kd; ++j) kv += decay * st[size_t(i)][size_t(j)] * k[j];
        const double delta = beta * (v[i] - kv);
        double acc = 0;
        for (int64_t j = 0; j < kd; ++j) {
          st[size_t(i)][size_t(j)] = decay * st[size_t(i)][size_t(j)] + delta * k[j];
          acc += st[size_t(i)][size_t(j)] * q[j];
        }
        o[size_t(hv * vd + i)] = acc;
      }
      std::vector<double> head(o.begin() + hv * vd, o.begin() + (hv + 1) * vd);
      head = RmsNorm(head, L.dn_norm, c.rms_eps);
      for (int64_t i = 0; i < vd; ++i) {
        const double g = z[t][size_t(hv * vd + i)];
        o[size_t(hv * vd + i)] = head[size_t(i)] * g * Sigmoid(g);
      }
    }
    out[t] = MatVec(L.dn_out, o);
  }
  return out;
}

double Gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Expert e's [out][in] slice of each 3-D tensor [in, out, n_expert] (loaded as n_expert * out rows).
Result<std::vector<Matrix>> LoadExperts(const GgufFile& file, const std::string& name, int64_t n_expert) {
  LOCKSTEP_ASSIGN_OR_RETURN(Matrix all, Load(file, name));
  const size_t out = all.size() / size_t(n_expert);
  std::vector<Matrix> experts;
  for (int64_t e = 0; e < n_expert; ++e) experts.push_back(RowRange(all, size_t(e) * out, out));
  return experts;
}

// SiLU(gate · h) * (up · h), then down. gpt-oss (clamped, with the expert's biases when given):
// x = min(g, 7), y = clamp(u, -7, 7), x sigmoid(1.702 x) (y + 1).
std::vector<double> SwiGlu(const Matrix& gate, const Matrix& up, const Matrix& down,
                           const std::vector<double>& h, bool clamped = false,
                           const std::vector<double>* gate_b = nullptr,
                           const std::vector<double>* up_b = nullptr,
                           const std::vector<double>* down_b = nullptr) {
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

// The router's softmax over every expert, the n_expert_used most probable (a stable sort: the lower index
// first among equals), their probabilities renormalised (qwen2moe: as they are); the chosen experts' outputs
// so weighted, summed; qwen2moe: plus the shared expert's output times sigmoid(shared_gate · h).
std::vector<double> Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& h);

// DeepSeek's routing: scores the softmax of the logits over every expert (or each one's sigmoid); the
// n_expert_used experts of the largest score + selection bias; weights their scores (renormalised when
// expert_weights_norm), times expert_weights_scale; plus the shared experts' output as it is.
std::vector<double> DeepseekExperts(const Layer& L, const ModelConfig& c, const std::vector<double>& h) {
  std::vector<double> p = MatVec(L.router, h);
  if (c.expert_gating == ModelConfig::ExpertGating::kSigmoid) {
    for (double& v : p) v = 1.0 / (1.0 + std::exp(-v));
  } else {
    const double largest = *std::max_element(p.begin(), p.end());
    double total = 0;
    for (double& v : p) total += (v = std::exp(v - largest));
    for (double& v : p) v /= total;
  }
  std::vector<double> choosing = p;
  for (size_t e = 0; e < L.selection_bias.size(); ++e) choosing[e] += L.selection_bias[e];
  if (c.expert_groups_used < c.expert_groups) {
    // Group-limited: each group scored by the sum of its two best choosing scores (sigmoid: V3's noaux_tc)
    // or its best (softmax: V2's group_limited_greedy); the experts of all but the best groups excluded.
    const size_t size = p.size() / size_t(c.expert_groups);
    std::vector<double> group(size_t(c.expert_groups));
    for (size_t g = 0; g < group.size(); ++g) {
      std::vector<double> members(choosing.begin() + g * size, choosing.begin() + (g + 1) * size);
      std::sort(members.rbegin(), members.rend());
      const bool two = c.expert_gating == ModelConfig::ExpertGating::kSigmoid && size > 1;
      group[g] = two ? members[0] + members[1] : members[0];
    }
    std::vector<size_t> groups(group.size());
    for (size_t g = 0; g < groups.size(); ++g) groups[g] = g;
    std::stable_sort(groups.begin(), groups.end(), [&](size_t a, size_t b) { return group[a] > group[b]; });
    for (size_t j = size_t(c.expert_groups_used); j < groups.size(); ++j) {
      for (size_t e = groups[j] * size; e < (groups[j] + 1) * size; ++e) choosing[e] = -INFINITY;
    }
  }
  std::vector<size_t> order(p.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return choosing[a] > choosing[b]; });
  double chosen = 0;
  for (int64_t j = 0; j < c.n_expert_used; ++j) chosen += p[order[j]];
  if (!c.expert_weights_norm) chosen = 1;
  std::vector<double> out = SwiGlu(L.gate, L.up, L.down, h);  // the shared experts
  for (int64_t j = 0; j < c.n_expert_used; ++j) {
    const size_t e = order[j];
    const std::vector<double> y = SwiGlu(L.expert_gate[e], L.expert_up[e], L.expert_down[e], h);
    for (size_t i = 0; i < out.size(); ++i) out[i] += p[e] / chosen * c.expert_weights_scale * y[i];
  }
  return out;
}

std::vector<double> Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& h) {
  if (c.expert_gating != ModelConfig::ExpertGating::kLogits) return DeepseekExperts(L, c, h);
  std::vector<double> logits = MatVec(L.router, h);
  for (size_t e = 0; e < L.router_b.size(); ++e) logits[e] += L.router_b[e];  // gpt-oss
  const double largest = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t e = 0; e < p.size(); ++e) total += (p[e] = std::exp(logits[e] - largest));
  for (double& v : p) v /= total;
  std::vector<size_t> order(p.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  double chosen = 0;
  for (int64_t j = 0; j < c.n_expert_used; ++j) chosen += p[order[j]];
  if (!c.expert_weights_norm) chosen = 1;
  std::vector<double> out(h.size(), 0.0);
  for (int64_t j = 0; j < c.n_expert_used; ++j) {
    const size_t e = order[j];
    const bool biased = !L.router_b.empty();
    const std::vector<double> y = SwiGlu(
        L.expert_gate[e], L.expert_up[e], L.expert_down[e], h, c.ffn_activation == FfnActivation::kSwiGluOai,
        biased ? &L.gate_b[e] : nullptr, biased ? &L.up_b[e] : nullptr, biased ? &L.down_b[e] : nullptr);
    for (size_t i = 0; i < out.size(); ++i) out[i] += p[e] / chosen * y[i];
  }
  if (c.n_ff_shared > 0) {
    double logit = 0;
    for (size_t i = 0; i < h.size(); ++i) logit += L.shared_gate[i] * h[i];
    const std::vector<double> y = SwiGlu(L.gate, L.up, L.down, h);
    for (size_t i = 0; i < out.size(); ++i) out[i] += y[i] / (1.0 + std::exp(-logit));
  }
  return out;
}

// deepseek2's query, key and value of one token from its normed input h at position t, in the file's
// layout: q and k per head [nope | rope] (k's rope part, one per token, in every head), v per head.
void LatentAttention(const Layer& L, const ModelConfig& c, const std::vector<double>& h, int64_t t,
                     std::vector<double>& q, std::vector<double>& k, std::vector<double>& v) {
  q = c.q_lora_rank > 0 ? MatVec(L.wq_b, RmsNorm(MatVec(L.wq_a, h), L.q_a_norm, c.rms_eps)) : MatVec(L.wq, h);
  const std::vector<double> compressed = MatVec(L.wkv_a, h);
  const int64_t rank = c.kv_lora_rank, rope = c.rope_dim, nope = c.head_dim - rope;
  const std::vector<double> latent =
      RmsNorm(std::vector<double>(compressed.begin(), compressed.begin() + rank), L.kv_a_norm, c.rms_eps);
  std::vector<double> k_rope(compressed.begin() + rank, compressed.end());
  ModelConfig rope_only = c;  // rotates vectors of rope_dim
  rope_only.head_dim = rope;
  Rotate(k_rope, 1, rope_only, t, false);
  std::vector<double> kv;  // attn_kv_b's product: per head [k_nope | v]
  if (c.kv_b_split) {      // k_nope[i] = sum over the latent's r of attn_k_b[head][r][i] latent[r]
    for (int64_t head = 0; head < c.n_head; ++head) {
      for (int64_t i = 0; i < nope; ++i) {
        double sum = 0;
        for (int64_t r = 0; r < rank; ++r)
          sum += L.wk_b[size_t(head * rank + r)][size_t(i)] * latent[size_t(r)];
        kv.push_back(sum);
      }
      for (int64_t j = 0; j < c.value_dim; ++j) {
        const std::vector<double>& row = L.wv_b[size_t(head * c.value_dim + j)];
        double sum = 0;
        for (int64_t r = 0; r < rank; ++r) sum += row[size_t(r)] * latent[size_t(r)];
        kv.push_back(sum);
      }
    }
  } else {
    kv = MatVec(L.wkv_b, latent);
  }
  k.assign(size_t(c.kv_dim()), 0.0);
  v.assign(size_t(c.v_dim()), 0.0);
  for (int64_t head = 0; head < c.n_head; ++head) {
    std::vector<double> q_rope(q.begin() + head * c.head_dim + nope, q.begin() + (head + 1) * c.head_dim);
    Rotate(q_rope, 1, rope_only, t, false);
    std::copy(q_rope.begin(), q_rope.end(), q.begin() + head * c.head_dim + nope);
    const size_t from = size_t(head * (nope + c.value_dim));
    std::copy(kv.begin() + from, kv.begin() + from + nope, k.begin() + head * c.head_dim);
    std::copy(k_rope.begin(), k_rope.end(), k.begin() + head * c.head_dim + nope);
    std::copy(kv.begin() + from + nope, kv.begin() + from + nope + c.value_dim,
              v.begin() + head * c.value_dim);
  }
}

}  // namespace

Result<std::vector<std::vector<double>>> ReferenceForward(const GgufFile& file,
                                                          const std::vector<int32_t>& tokens,
                                                          std::vector<std::vector<double>>* embeddings) {
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
    LOCKSTEP_ASSIGN_OR_RETURN(
        L.ffn_norm, LoadVector(file, p + (c.ffn_norm_is_post_attention_norm ? "post_attention_norm.weight"
                                                                            : "ffn_norm.weight")));
    if (c.architecture == "gpt-oss") {
      LOCKSTEP_ASSIGN_OR_RETURN(L.sinks, LoadVector(file, p + "attn_sinks.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bo, LoadVector(file, p + "attn_output.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.router_b, LoadVector(file, p + "ffn_gate_inp.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.gate_b, Load(file, p + "ffn_gate_exps.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.up_b, Load(file, p + "ffn_up_exps.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.down_b, Load(file, p + "ffn_down_exps.bias"));
    }
    if (c.kv_lora_rank > 0) {  // deepseek2
      if (c.q_lora_rank > 0) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq_a, Load(file, p + "attn_q_a.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.q_a_norm, LoadVector(file, p + "attn_q_a_norm.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq_b, Load(file, p + "attn_q_b.weight"));
      } else {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq, Load(file, p + "attn_q.weight"));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.wkv_a, Load(file, p + "attn_kv_a_mqa.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.kv_a_norm, LoadVector(file, p + "attn_kv_a_norm.weight"));
      if (c.kv_b_split) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wk_b, Load(file, p + "attn_k_b.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.wv_b, Load(file, p + "attn_v_b.weight"));
      } else {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wkv_b, Load(file, p + "attn_kv_b.weight"));
      }
    } else if (c.layers[l].recurrent) {  // qwen35's Gated DeltaNet
      for (auto [m, name] :
           {std::pair{&L.dn_qkv, "attn_qkv.weight"}, std::pair{&L.dn_z, "attn_gate.weight"},
            std::pair{&L.dn_beta, "ssm_beta.weight"}, std::pair{&L.dn_alpha, "ssm_alpha.weight"},
            std::pair{&L.dn_out, "ssm_out.weight"}, std::pair{&L.dn_conv, "ssm_conv1d.weight"}}) {
        LOCKSTEP_ASSIGN_OR_RETURN(*m, Load(file, p + name));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_a, LoadVector(file, p + "ssm_a"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_dt, LoadVector(file, p + "ssm_dt.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_norm, LoadVector(file, p + "ssm_norm.weight"));
    } else if (file.FindTensor(p + "attn_qkv.weight")) {  // phi3: [q | k | v]
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix qkv, Load(file, p + "attn_qkv.weight"));
      L.wq = RowRange(qkv, 0, c.q_dim());
      L.wk = RowRange(qkv, c.q_dim(), c.kv_dim());
      L.wv = RowRange(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      LOCKSTEP_ASSIGN_OR_RETURN(L.wq, Load(file, p + "attn_q.weight"));
      if (c.StoresKv(l)) {  // Gemma 4's shared-KV layers have none; without attn_v, V is K's projection
        LOCKSTEP_ASSIGN_OR_RETURN(L.wk, Load(file, p + "attn_k.weight"));
        if (file.FindTensor(p + "attn_v.weight") != nullptr || !c.v_norm) {
          LOCKSTEP_ASSIGN_OR_RETURN(L.wv, Load(file, p + "attn_v.weight"));
        } else {
          L.wv = L.wk;
        }
      }
    }
    if (file.FindTensor(p + "layer_output_scale.weight") != nullptr) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.out_scale, LoadVector(file, p + "layer_output_scale.weight"));
    }
    if (c.n_embd_per_layer > 0) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_gate, Load(file, p + "inp_gate.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_proj, Load(file, p + "proj.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_post_norm, LoadVector(file, p + "post_norm.weight"));
    }
    if (!c.layers[l].recurrent) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.wo, Load(file, p + "attn_output.weight"));
    }
    if (c.FeedForwardExperts(l)) {
      if (c.expert_selection_bias) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.selection_bias, LoadVector(file, p + "exp_probs_b.bias"));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.router, Load(file, p + "ffn_gate_inp.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_gate, LoadExperts(file, p + "ffn_gate_exps.weight", c.n_expert));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_up, LoadExperts(file, p + "ffn_up_exps.weight", c.n_expert));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_down, LoadExperts(file, p + "ffn_down_exps.weight", c.n_expert));
      if (c.n_ff_shared > 0) {
        if (c.shared_expert_gate) {
          LOCKSTEP_ASSIGN_OR_RETURN(L.shared_gate, LoadVector(file, p + "ffn_gate_inp_shexp.weight"));
        }
        LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate_shexp.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up_shexp.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down_shexp.weight"));
      }
    } else if (file.FindTensor(p + "ffn_gate.weight")) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up.weight"));
    } else {  // phi3: [gate | up]
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix gate_up, Load(file, p + "ffn_up.weight"));
      L.gate = RowRange(gate_up, 0, c.n_ff);
      L.up = RowRange(gate_up, c.n_ff, c.n_ff);
    }
    if (!c.FeedForwardExperts(l)) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down.weight"));
    }
    if (c.qk_norm && !c.layers[l].recurrent) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.q_norm, LoadVector(file, p + "attn_q_norm.weight"));
      if (c.StoresKv(l)) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.k_norm, LoadVector(file, p + "attn_k_norm.weight"));
      }
    }
    if (c.post_norms) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_attn_norm, LoadVector(file, p + "post_attention_norm.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_ffn_norm, LoadVector(file, p + "post_ffw_norm.weight"));
    }
    if (c.qkv_bias) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.bq, LoadVector(file, p + "attn_q.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bk, LoadVector(file, p + "attn_k.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bv, LoadVector(file, p + "attn_v.bias"));
    }
  }

  const size_t n = tokens.size();
  Matrix x(n);
  for (size_t t = 0; t < n; ++t) {
    x[t] = embd[tokens[t]];
    if (c.scale_embeddings) {
      for (double& e : x[t]) e *= std::sqrt(double(c.n_embd));
    }
    if (c.embedding_multiplier != 0) {
      for (double& e : x[t]) e *= c.embedding_multiplier;
    }
  }
  // Gemma 4's per-layer inputs: [token][n_layer * n_embd_per_layer].
  Matrix per_layer(n);
  if (c.n_embd_per_layer > 0) {
    const int64_t e = c.n_embd_per_layer;
    LOCKSTEP_ASSIGN_OR_RETURN(Matrix table, Load(file, "per_layer_token_embd.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(Matrix model_proj, Load(file, "per_layer_model_proj.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(std::vector<double> proj_norm, LoadVector(file, "per_layer_proj_norm.weight"));
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> proj = MatVec(model_proj, x[t]);
      for (double& value : proj) value /= std::sqrt(double(c.n_embd));  // transformers' projection scale
      per_layer[t].resize(proj.size());
      for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::vector<double> slice(proj.begin() + l * e, proj.begin() + (l + 1) * e);
        const std::vector<double> normed = RmsNorm(slice, proj_norm, c.rms_eps);
        for (int64_t i = 0; i < e; ++i) {
          per_layer[t][l * e + i] =
              (normed[i] + table[tokens[t]][l * e + i] * std::sqrt(double(e))) / std::sqrt(2.0);
        }
      }
    }
  }
  std::vector<Matrix> keys(c.n_layer), values(c.n_layer);  // per layer that stores them (Gemma 4)
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers[l];
    const int64_t hd = c.LayerHeadDim(l), n_head_kv = c.LayerKvHeads(l);
    const int64_t group = c.n_head / n_head_kv;
    const bool stores_kv = c.StoresKv(l);
    const bool recurrent = c.layers[l].recurrent;
    Matrix q(n), k(n), v(n), gate(n);
    if (recurrent) {
      Matrix h(n);
      for (size_t t = 0; t < n; ++t) h[t] = RmsNorm(x[t], L.attn_norm, c.rms_eps);
      const Matrix o = DeltaNetReference(L, c, h);
      for (size_t t = 0; t < n; ++t) {
        for (size_t i = 0; i < o[t].size(); ++i) x[t][i] += o[t][i];
      }
    }
    for (size_t t = 0; t < n && c.kv_lora_rank > 0; ++t) {
      LatentAttention(L, c, RmsNorm(x[t], L.attn_norm, c.rms_eps), int64_t(t), q[t], k[t], v[t]);
    }
    for (size_t t = 0; t < n && c.kv_lora_rank == 0 && !recurrent; ++t) {
      const std::vector<double> h = RmsNorm(x[t], L.attn_norm, c.rms_eps);
      q[t] = MatVec(L.wq, h);
      if (c.attn_output_gate) {  // qwen35: [query | gate] per head
        std::vector<double> qg = q[t];
        q[t].assign(size_t(c.q_dim()), 0.0);
        gate[t].assign(size_t(c.q_dim()), 0.0);
        for (int64_t head = 0; head < c.n_head; ++head) {
          for (int64_t i = 0; i < c.head_dim; ++i) {
            q[t][size_t(head * c.head_dim + i)] = qg[size_t(2 * head * c.head_dim + i)];
            gate[t][size_t(head * c.head_dim + i)] = qg[size_t((2 * head + 1) * c.head_dim + i)];
          }
        }
      }
      if (!stores_kv) {
        if (c.qk_norm) NormHeads(q[t], L.q_norm, c.rms_eps);
        Rotate(q[t], c.n_head, c, int64_t(t), c.layers[l].local_rope);
        continue;
      }
      k[t] = MatVec(L.wk, h);
      v[t] = MatVec(L.wv, h);
      if (c.v_norm) NormHeads(v[t], std::vector<double>(size_t(hd), 1.0), c.rms_eps);
      if (c.qkv_bias) {
        for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += L.bq[i];
        for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += L.bk[i];
        for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += L.bv[i];
      }
      if (c.qk_norm) {
        NormHeads(q[t], L.q_norm, c.rms_eps);
        NormHeads(k[t], L.k_norm, c.rms_eps);
      }
      if (c.layers[l].rope) {
        Rotate(q[t], c.n_head, c, int64_t(t), c.layers[l].local_rope);
        Rotate(k[t], n_head_kv, c, int64_t(t), c.layers[l].local_rope);
      }
      if (c.attn_temperature_scale != 0) {  // Llama 4's (Ministral 3's) query temperature
        const double steps = std::floor(double(t) / double(c.attn_temperature_length));
        for (double& x : q[t]) x *= 1 + c.attn_temperature_scale * std::log(1 + steps);
      }
    }
    if (stores_kv) {
      keys[l] = k;
      values[l] = v;
    } else if (!recurrent) {  // Gemma 4's shared-KV layers
      k = keys[c.layers[l].kv_from];
      v = values[c.layers[l].kv_from];
    }
    for (size_t t = 0; t < n && !recurrent; ++t) {
      std::vector<double> att(c.LayerAttDim(l), 0.0);
      const int64_t nv = c.LayerValueDim(l);
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t kvh = h / group;
        // Keys in the layer's window: positions s with t - s < window.
        const int64_t window = c.layers[l].window;
        const size_t first = window > 0 && int64_t(t) >= window ? t - size_t(window) + 1 : 0;
        std::vector<double> scores(t + 1, 0.0);
        double max_score = -1e300;
        for (size_t s = first; s <= t; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[s][kvh * hd + i];
          scores[s] = dot * c.attention_scale;
          if (c.attn_softcap > 0) scores[s] = c.attn_softcap * std::tanh(scores[s] / c.attn_softcap);
          max_score = std::max(max_score, scores[s]);
        }
        double sum = 0;
        for (size_t s = first; s <= t; ++s) sum += (scores[s] = std::exp(scores[s] - max_score));
        if (!L.sinks.empty()) sum += std::exp(L.sinks[h] - max_score);  // a score with no value
        for (size_t s = first; s <= t; ++s) {
          for (int64_t i = 0; i < nv; ++i) att[h * nv + i] += scores[s] / sum * v[s][kvh * nv + i];
        }
      }
      if (c.attn_output_gate) {
        for (size_t i = 0; i < att.size(); ++i) att[i] *= Sigmoid(gate[t][i]);
      }
      std::vector<double> o = MatVec(L.wo, att);
      for (size_t i = 0; i < L.bo.size(); ++i) o[i] += L.bo[i];
      if (c.post_norms) o = RmsNorm(o, L.post_attn_norm, c.rms_eps);
      const double residual = c.residual_multiplier != 0 ? c.residual_multiplier : 1.0;
      for (size_t i = 0; i < o.size(); ++i) x[t][i] += residual * o[i];
    }
    for (size_t t = 0; t < n; ++t) {
      const std::vector<double> h = RmsNorm(x[t], L.ffn_norm, c.rms_eps);
      if (c.FeedForwardExperts(l)) {
        const std::vector<double> d = Experts(L, c, h);
        for (size_t i = 0; i < d.size(); ++i) x[t][i] += d[i];
        continue;
      }
      std::vector<double> g = MatVec(L.gate, h);
      const std::vector<double> u = MatVec(L.up, h);
      for (size_t i = 0; i < g.size(); ++i) {
        if (c.ffn_activation == FfnActivation::kGeluTanh) {
          g[i] = Gelu(g[i]) * u[i];
        } else {
          g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        }
      }
      std::vector<double> d = MatVec(L.down, g);
      if (c.post_norms) d = RmsNorm(d, L.post_ffn_norm, c.rms_eps);
      const double residual = c.residual_multiplier != 0 ? c.residual_multiplier : 1.0;
      for (size_t i = 0; i < d.size(); ++i) x[t][i] += residual * d[i];
      if (c.n_embd_per_layer > 0) {  // Gemma 4: x += norm(proj . (GELU(gate . x) * input))
        std::vector<double> gated = MatVec(L.pl_gate, x[t]);
        for (int64_t i = 0; i < c.n_embd_per_layer; ++i) {
          gated[i] = Gelu(gated[i]) * per_layer[t][l * c.n_embd_per_layer + i];
        }
        const std::vector<double> p = RmsNorm(MatVec(L.pl_proj, gated), L.pl_post_norm, c.rms_eps);
        for (size_t i = 0; i < p.size(); ++i) x[t][i] += p[i];
      }
      for (double& value : x[t]) value *= L.out_scale.empty() ? 1.0 : L.out_scale[0];
    }
  }
  std::vector<std::vector<double>> logits(n);
  if (embeddings != nullptr) embeddings->assign(n, {});
  for (size_t t = 0; t < n; ++t) {
    const std::vector<double> normed = RmsNorm(x[t], out_norm, c.rms_eps);
    if (embeddings != nullptr) (*embeddings)[t] = normed;
    logits[t] = MatVec(output, normed);
    if (c.logit_divisor != 0) {
      for (double& v : logits[t]) v /= c.logit_divisor;
    }
    if (c.final_softcap > 0) {
      for (double& v : logits[t]) v = c.final_softcap * std::tanh(v / c.final_softcap);
    }
  }
  return logits;
}

}  // namespace lockstep::testing
