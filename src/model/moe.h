// MixtureOfExperts: the routed experts of a mixture-of-experts layer (ModelConfig::n_expert > 0: qwen3moe,
// granitemoe, qwen2moe, Mixtral) over a ragged batch of R rows, as llama.cpp's graphs for those
// architectures compute it (qwen2moe's shared expert: model/transformer_feed_forward.cc, the dense FFN's
// code):
//
//   xn [R][n_embd] -> router logits [R][n_expert] (one MatMul with ffn_gate_inp)
//   -> per row (RouteRow): the n_expert_used largest logits (ties: the lower expert index first), their
//      softmax weights renormalised to sum to 1 (softmax over all experts, then renormalised over the chosen
//      ones, equals a softmax over the chosen logits: gpt-oss's routing, whose logits have the router's bias
//      added first); qwen2moe (!expert_weights_norm): their softmax over all experts as it is
//   -> slots: the (row, choice) pairs grouped by expert (expert-major, rows ascending within an expert), each
//      slot holding its row's xn
//   -> Gemma 4: each chosen expert's weight times its ffn_down_exps.scale (LayerWeights::expert_scale)
//   -> every expert with slots: gate/up over its slots (+ its biases, gpt-oss) -> SwiGLU (gpt-oss: clamped;
//      Gemma 4: GeGLU)
//      -> down (+ its bias), each product one grouped MatMul over all experts (tensor/matmul_grouped.h: one
//      parallel loop, not one per expert)
//   -> out[r] = sum over the row's choices, in rank order, of weight * its expert's output (fused
//      multiply-adds).
//
// Batch invariance: a row's routing reads only its own logits; a MatMul's result for a row does not depend on
// the other rows of the call (tensor/matmul.h), nor, in a grouped product, on the other groups
// (tensor/matmul_grouped.h); the weighted sum runs in the row's rank order with the same
// float operations. So a row's output is bit-identical whatever else shares the batch. Scratch grows to the
// largest batch seen and is reused. Engine thread only (each Transformer owns one).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "tensor/kernels.h"
#include "tensor/matmul_grouped.h"

namespace lockstep {

class ThreadPool;

// Routing of one row: experts[0..k) the indices of the k largest of logits[0..n_expert) in descending order
// (ties and NaNs: the lower index first), weights[0..k) exp(logit - largest) / their sum, summed in rank
// order (renormalise), or / the sum over all n_expert logits, in expert order (!renormalise: the chosen
// experts' softmax probabilities). exp: tensor/activations.h's ExpPolynomial, the same bits on every CPU.
// Pure.
void RouteRow(const float* logits, int64_t n_expert, int64_t k, bool renormalise, int32_t* experts,
              float* weights);

// Group-limited routing (ModelConfig::expert_groups, expert_groups_used): n_expert / count consecutive
// experts per group, the experts of `used` groups choosable; used = count: all.
struct ExpertGroups {
  int64_t count = 1;
  int64_t used = 1;
};

// DeepSeek's routing of one row (ModelConfig::expert_gating kSoftmax or kSigmoid): scores[0..n_expert), the
// router logits on entry, become the experts' scores: their softmax (the largest logit subtracted,
// ExpPolynomial, summed in expert order, each times 1 / sum) or each one's sigmoid 1 / (1 + e^-x). An
// expert's choosing score is its score + bias[e] (bias null: none). With groups.used < groups.count, each
// group is scored -- kSigmoid: the sum of its two largest choosing scores (the larger first; DeepSeek-V3's
// noaux_tc), kSoftmax: its largest (DeepSeek-V2's group_limited_greedy) -- and the experts outside the
// groups.used best groups (ties: the lower group first) cannot be chosen. experts[0..k) the k largest
// choosing scores among the choosable experts (ties and NaNs: the lower index first), in descending order;
// weights[j] the chosen experts' scores, divided by their sum (in rank order) when renormalise, then times
// scale. Needs n_expert <= kMaxExperts. Pure.
void RouteScoredRow(float* scores, int64_t n_expert, int64_t k, ModelConfig::ExpertGating gating,
                    const float* bias, ExpertGroups groups, bool renormalise, float scale, int32_t* experts,
                    float* weights);

class MixtureOfExperts {
 public:
  // out[r] for r in [0, rows): the layer's expert mixture applied to xn[r]; xn, out: [rows][n_embd].
  // router_x (null: xn) is what the router reads (Gemma 4's differs from the experts' input).
  void Forward(const Kernels& kernels, const ModelConfig& config, const LayerWeights& weights,
               const float* xn, int64_t rows, float* out, ThreadPool& pool, const float* router_x = nullptr);

 private:
  // groups_ for the experts with slots: expert e's first[e] (and second[e], if not empty) over its slots'
  // rows of x ([slots][in]), into its slots' rows of y_first (and y_second), [slots][out].
  void GroupExperts(std::span<const WeightMatrix> first, std::span<const WeightMatrix> second, const float* x,
                    int64_t in, float* y_first, float* y_second, int64_t out);
  // fn(e, s) for every slot s of every expert e (starts_).
  template <typename Fn>
  void ForEachSlot(int64_t n_expert, const Fn& fn) const {
    for (int64_t e = 0; e < n_expert; ++e) {
      for (int64_t s = starts_[size_t(e)]; s < starts_[size_t(e) + 1]; ++s) fn(e, s);
    }
  }

  std::vector<float> logits_;     // [rows][n_expert]
  std::vector<int32_t> chosen_;   // [rows][n_expert_used]: expert of each choice, by rank
  std::vector<float> weights_;    // [rows][n_expert_used]
  std::vector<int64_t> slot_;     // [rows][n_expert_used]: the choice's slot
  std::vector<int64_t> starts_;   // [n_expert + 1]: each expert's first slot
  std::vector<float> inputs_;     // [slots][n_embd]: xn of each slot's row
  std::vector<float> gate_, up_;  // [slots][n_ff_expert]
  std::vector<float> outputs_;    // [slots][n_embd]
  // The grouped products' arguments (tensor/matmul_grouped.h): one group per expert with slots.
  std::vector<WeightMatrix> group_matrices_;  // [n_expert][1 or 2]
  std::vector<float*> group_outputs_;         // [n_expert][1 or 2]
  std::vector<MatMulGroup> groups_;
};

}  // namespace lockstep
