#include "model/moe.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>

#include "model/row_tasks.h"
#include "tensor/activations.h"
#include "tensor/matmul.h"
#include "tensor/matmul_grouped.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// x[i] += bias[i].
inline void AddBias(float* x, const float* bias, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += bias[i];
}

}  // namespace

void RouteRow(const float* logits, int64_t n_expert, int64_t k, bool renormalise, int32_t* experts,
              float* weights) {
  assert(k >= 1 && k <= n_expert);
  for (int64_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int32_t e = 0; e < int32_t(n_expert); ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken = taken || experts[i] == e;
      if (!taken && (best < 0 || logits[e] > logits[best])) best = e;
    }
    experts[j] = best;
  }
  const float largest = logits[experts[0]];
  float sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    weights[j] = ExpPolynomial(logits[experts[j]] - largest);
    sum += weights[j];
  }
  if (!renormalise) {
    sum = 0;
    for (int64_t e = 0; e < n_expert; ++e) sum += ExpPolynomial(logits[e] - largest);
  }
  for (int64_t j = 0; j < k; ++j) weights[j] /= sum;
}

namespace {

// Marks allowed[e] for the experts of the groups.used best of groups.count groups (ExpertGroups), each
// group's score computed from choosing(e) over its experts.
template <typename Choosing>
void AllowBestGroups(int64_t n_expert, ExpertGroups groups, ModelConfig::ExpertGating gating,
                     const Choosing& choosing, std::array<bool, kMaxExperts>& allowed) {
  const int64_t size = n_expert / groups.count;
  std::array<float, kMaxExperts> group_score;
  for (int64_t g = 0; g < groups.count; ++g) {
    float first = -INFINITY, second = -INFINITY;  // the group's two largest (NaNs never are)
    for (int64_t e = g * size; e < (g + 1) * size; ++e) {
      const float x = choosing(int32_t(e));
      if (x > first) {
        second = first;
        first = x;
      } else if (x > second) {
        second = x;
      }
    }
    const bool top_two = gating == ModelConfig::ExpertGating::kSigmoid && size > 1;
    group_score[size_t(g)] = top_two ? first + second : first;
  }
  std::fill(allowed.begin(), allowed.begin() + n_expert, false);
  std::array<bool, kMaxExperts> taken{};
  for (int64_t j = 0; j < groups.used; ++j) {
    int64_t best = -1;
    for (int64_t g = 0; g < groups.count; ++g) {
      if (!taken[size_t(g)] && (best < 0 || group_score[size_t(g)] > group_score[size_t(best)])) best = g;
    }
    taken[size_t(best)] = true;
    std::fill(allowed.begin() + best * size, allowed.begin() + (best + 1) * size, true);
  }
}

}  // namespace

void RouteScoredRow(float* scores, int64_t n_expert, int64_t k, ModelConfig::ExpertGating gating,
                    const float* bias, ExpertGroups groups, bool renormalise, float scale, int32_t* experts,
                    float* weights) {
  assert(k >= 1 && k <= n_expert && n_expert <= kMaxExperts);
  assert(groups.count >= 1 && n_expert % groups.count == 0 && groups.used >= 1 &&
         groups.used <= groups.count);
  if (gating == ModelConfig::ExpertGating::kSigmoid) {
    for (int64_t e = 0; e < n_expert; ++e) scores[e] = 1.0f / (1.0f + ExpPolynomial(-scores[e]));
  } else {
    float largest = scores[0];
    for (int64_t e = 1; e < n_expert; ++e) largest = std::max(largest, scores[e]);
    float sum = 0;
    for (int64_t e = 0; e < n_expert; ++e) sum += (scores[e] = ExpPolynomial(scores[e] - largest));
    const float inverse = 1.0f / sum;
    for (int64_t e = 0; e < n_expert; ++e) scores[e] *= inverse;
  }
  auto choosing = [&](int32_t e) { return bias != nullptr ? scores[e] + bias[e] : scores[e]; };
  std::array<bool, kMaxExperts> allowed;
  std::fill(allowed.begin(), allowed.begin() + n_expert, true);
  if (groups.used < groups.count) AllowBestGroups(n_expert, groups, gating, choosing, allowed);
  for (int64_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int32_t e = 0; e < int32_t(n_expert); ++e) {
      bool taken = !allowed[size_t(e)];
      for (int64_t i = 0; i < j; ++i) taken = taken || experts[i] == e;
      if (!taken && (best < 0 || choosing(e) > choosing(best))) best = e;
    }
    experts[j] = best;
  }
  float sum = 0;
  for (int64_t j = 0; j < k; ++j) sum += (weights[j] = scores[experts[j]]);
  for (int64_t j = 0; j < k; ++j) {
    if (renormalise) weights[j] /= sum;
    weights[j] *= scale;
  }
}

void MixtureOfExperts::GroupExperts(std::span<const WeightMatrix> first, std::span<const WeightMatrix> second,
                                    const float* x, int64_t in, float* y_first, float* y_second,
                                    int64_t out) {
  const size_t n_expert = first.size(), per_expert = second.empty() ? 1 : 2;
  group_matrices_.resize(n_expert * per_expert);
  group_outputs_.resize(n_expert * per_expert);
  groups_.clear();
  for (size_t e = 0; e < n_expert; ++e) {
    const int64_t begin = starts_[e], count = starts_[e + 1] - begin;
    if (count == 0) continue;
    WeightMatrix* ws = group_matrices_.data() + e * per_expert;
    float** ys = group_outputs_.data() + e * per_expert;
    ws[0] = first[e];
    ys[0] = y_first + begin * out;
    if (per_expert == 2) {
      ws[1] = second[e];
      ys[1] = y_second + begin * out;
    }
    groups_.push_back(MatMulGroup{std::span<const WeightMatrix>(ws, per_expert), x + begin * in, count,
                                  std::span<float* const>(ys, per_expert)});
  }
}

void MixtureOfExperts::Forward(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                               const float* xn, int64_t rows, float* out, ThreadPool& pool,
                               const float* router_x) {
  const int64_t n_expert = c.n_expert;
  const int64_t k = c.n_expert_used;
  const int64_t d = c.n_embd;
  const int64_t ff = c.n_ff_expert;
  const size_t slots = size_t(rows * k);
  GrowTo(logits_, size_t(rows * n_expert));
  GrowTo(chosen_, slots);
  GrowTo(weights_, slots);
  GrowTo(slot_, slots);
  GrowTo(inputs_, slots * d);
  GrowTo(gate_, slots * ff);
  GrowTo(up_, slots * ff);
  GrowTo(outputs_, slots * d);

  MatMul(kernels.matmul, w.router, router_x != nullptr ? router_x : xn, rows, logits_.data(), pool);
  if (!w.router_b.empty()) {  // gpt-oss: the router's bias, before the choice
    for (int64_t r = 0; r < rows; ++r) AddBias(logits_.data() + r * n_expert, w.router_b.data(), n_expert);
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (c.expert_gating == ModelConfig::ExpertGating::kLogits) {
      RouteRow(logits_.data() + r * n_expert, n_expert, k, c.expert_weights_norm, chosen_.data() + r * k,
               weights_.data() + r * k);
    } else {  // deepseek2
      RouteScoredRow(logits_.data() + r * n_expert, n_expert, k, c.expert_gating,
                     w.selection_bias.empty() ? nullptr : w.selection_bias.data(),
                     ExpertGroups{c.expert_groups, c.expert_groups_used}, c.expert_weights_norm,
                     c.expert_weights_scale, chosen_.data() + r * k, weights_.data() + r * k);
    }
    if (!w.expert_scale.empty()) {  // Gemma 4
      for (int64_t j = 0; j < k; ++j)
        weights_[size_t(r * k + j)] *= w.expert_scale[size_t(chosen_[size_t(r * k + j)])];
    }
  }
  // Slots grouped by expert, rows ascending within each.
  starts_.assign(size_t(n_expert + 1), 0);
  for (size_t s = 0; s < slots; ++s) ++starts_[size_t(chosen_[s]) + 1];
  for (int64_t e = 0; e < n_expert; ++e) starts_[e + 1] += starts_[e];
  for (size_t s = 0; s < slots; ++s) slot_[s] = starts_[size_t(chosen_[s])]++;
  for (int64_t e = n_expert; e > 0; --e) starts_[e] = starts_[e - 1];  // back to each expert's first slot
  starts_[0] = 0;
  ForEachRow(pool, int64_t(slots), [&](int64_t s) {
    std::memcpy(inputs_.data() + slot_[s] * d, xn + (s / k) * d, sizeof(float) * d);
  });

  // Every expert with slots: gate and up over its slots in one grouped product (one parallel loop for all
  // experts), (their biases,) the activation, then down in another (and its bias).
  const bool biases = !w.expert_down_b.empty();
  auto add_expert_bias = [&](int64_t e, int64_t s) {  // slot s of expert e: its gate and up
    AddBias(gate_.data() + s * ff, w.expert_gate_b.data() + e * ff, ff);
    AddBias(up_.data() + s * ff, w.expert_up_b.data() + e * ff, ff);
  };
  GroupExperts(w.expert_gate, w.expert_up, inputs_.data(), d, gate_.data(), up_.data(), ff);
  MatMulGrouped(kernels.matmul, groups_, pool);
  if (biases) ForEachSlot(n_expert, add_expert_bias);
  ForEachRow(pool, int64_t(slots), [&](int64_t s) {
    if (c.ffn_activation == FfnActivation::kSwiGluOai) {  // gpt-oss
      kernels.elementwise.swiglu_oai(gate_.data() + s * ff, up_.data() + s * ff, ff, kSwiGluOaiAlpha,
                                     kSwiGluOaiLimit);
    } else if (c.ffn_activation == FfnActivation::kGeluTanh) {  // Gemma 4
      kernels.elementwise.geglu(gate_.data() + s * ff, up_.data() + s * ff, ff);
    } else {
      kernels.elementwise.swiglu(gate_.data() + s * ff, up_.data() + s * ff, ff);
    }
  });
  GroupExperts(w.expert_down, {}, gate_.data(), ff, outputs_.data(), nullptr, d);
  MatMulGrouped(kernels.matmul, groups_, pool);
  if (biases) {
    ForEachSlot(n_expert, [&](int64_t e, int64_t s) {
      AddBias(outputs_.data() + s * d, w.expert_down_b.data() + e * d, d);
    });
  }

  // Each row's weighted sum in rank order, one fused multiply-add per term (the same bits on every CPU).
  ForEachRow(pool, rows, [&](int64_t r) {
    float* y = out + r * d;
    for (int64_t i = 0; i < d; ++i) y[i] = 0;
    for (int64_t j = 0; j < k; ++j) {
      const float weight = weights_[size_t(r * k + j)];
      const float* expert_out = outputs_.data() + slot_[size_t(r * k + j)] * d;
      for (int64_t i = 0; i < d; ++i) y[i] = std::fma(weight, expert_out[i], y[i]);
    }
  });
}

}  // namespace lockstep
