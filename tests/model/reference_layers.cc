#include <algorithm>
#include <cmath>
#include <string>

#include "model/reference_internal.h"

namespace lockstep::testing::reference {

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

Result<std::vector<Matrix>> LoadExperts(const GgufFile& file, const std::string& name, int64_t n_expert) {
  LOCKSTEP_ASSIGN_OR_RETURN(Matrix all, Load(file, name));
  const size_t out = all.size() / size_t(n_expert);
  std::vector<Matrix> experts;
  for (int64_t e = 0; e < n_expert; ++e) experts.push_back(RowRange(all, size_t(e) * out, out));
  return experts;
}

namespace {

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
  // The shared experts (minimax-m2 has none).
  std::vector<double> out =
      c.n_ff_shared > 0 ? SwiGlu(L.gate, L.up, L.down, h) : std::vector<double>(h.size());
  for (int64_t j = 0; j < c.n_expert_used; ++j) {
    const size_t e = order[j];
    const std::vector<double> y = SwiGlu(L.expert_gate[e], L.expert_up[e], L.expert_down[e], h);
    for (size_t i = 0; i < out.size(); ++i) out[i] += p[e] / chosen * c.expert_weights_scale * y[i];
  }
  return out;
}

// Softmax routing: p the logits' softmax, order the experts by p (descending, ties: the lower first), chosen
// the sum of the first k.
struct SoftmaxRouting {
  std::vector<double> p;
  std::vector<size_t> order;
  double chosen = 0;
};

SoftmaxRouting RouteBySoftmax(const std::vector<double>& logits, int64_t k) {
  SoftmaxRouting r;
  const double largest = *std::max_element(logits.begin(), logits.end());
  r.p.resize(logits.size());
  double total = 0;
  for (size_t e = 0; e < r.p.size(); ++e) total += (r.p[e] = std::exp(logits[e] - largest));
  for (double& v : r.p) v /= total;
  r.order.resize(r.p.size());
  for (size_t e = 0; e < r.order.size(); ++e) r.order[e] = e;
  std::stable_sort(r.order.begin(), r.order.end(), [&](size_t a, size_t b) { return r.p[a] > r.p[b]; });
  for (int64_t j = 0; j < k; ++j) r.chosen += r.p[r.order[size_t(j)]];
  return r;
}

}  // namespace

std::vector<double> Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& h) {
  if (c.expert_gating != ModelConfig::ExpertGating::kLogits) return DeepseekExperts(L, c, h);
  std::vector<double> logits = MatVec(L.router, h);
  for (size_t e = 0; e < L.router_b.size(); ++e) logits[e] += L.router_b[e];  // gpt-oss
  const SoftmaxRouting routing = RouteBySoftmax(logits, c.n_expert_used);
  const std::vector<double>& p = routing.p;
  const std::vector<size_t>& order = routing.order;
  const double chosen = c.expert_weights_norm ? routing.chosen : 1.0;
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

std::vector<double> Gemma4Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& x) {
  std::vector<double> hr = RmsNorm(x, std::vector<double>(x.size(), 1.0), c.rms_eps);
  for (size_t i = 0; i < hr.size(); ++i) hr[i] *= L.router_scale[i] / std::sqrt(double(x.size()));
  const SoftmaxRouting routing = RouteBySoftmax(MatVec(L.router, hr), c.n_expert_used);
  const std::vector<double> h = RmsNorm(x, L.pre_ffn_norm_2, c.rms_eps);
  std::vector<double> out(x.size(), 0.0);
  for (int64_t j = 0; j < c.n_expert_used; ++j) {
    const size_t e = routing.order[size_t(j)];
    std::vector<double> g = MatVec(L.expert_gate[e], h);
    const std::vector<double> u = MatVec(L.expert_up[e], h);
    for (size_t i = 0; i < g.size(); ++i) g[i] = Gelu(g[i]) * u[i];
    const std::vector<double> y = MatVec(L.expert_down[e], g);
    const double weight = routing.p[e] / routing.chosen * L.expert_scale[e];
    for (size_t i = 0; i < out.size(); ++i) out[i] += weight * y[i];
  }
  return out;
}

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

}  // namespace lockstep::testing::reference
