// Transformer's recurrent and feed-forward blocks: DeltaNet layers, the gated FFN, experts and the shared
// expert, per-layer output scales; model/transformer.h has the data flow.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/architecture_ops.h"
#include "model/row_tasks.h"
#include "model/transformer.h"
#include "tensor/activations.h"
#include "tensor/thread_pool.h"

namespace lockstep {

void Transformer::RecurrentBlock(const Batch& batch, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t d = c.n_embd;
  ForEachRow(pool, rows, [&](int64_t r, int) {
    kernels_.elementwise.rms_norm(x_.data() + r * d, w.attn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
  });
  delta_net_.Forward(kernels_, w, recurrent_index_[size_t(layer)], batch, xn_.data(), proj_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    const float* p = proj_.data() + r * d;
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::GatedFeedForward(int64_t rows, int32_t layer, int64_t ff, float* out, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  // Fewer rows than the batch's: the output rows, gathered (the last layer's skip).
  const int64_t* lora_rows = rows < lora_.batch_rows() ? output_rows_.data() : nullptr;
  const auto add_down_bias = [&] {  // phi2, starcoder2, jais (none: falcon, llama)
    ForEachRow(pool, w.b_down.empty() ? 0 : rows, [&](int64_t r, int) {
      for (int64_t i = 0; i < c.n_embd; ++i) out[r * c.n_embd + i] += w.b_down[size_t(i)];
    });
  };
  // phi2, starcoder2: up (+ bias) -> GELU -> down (+ bias). GELU's tanh form as Gemma's GeGLU computes it,
  // times 1 (exact): the kernel's bits on every CPU level. (ik_llama.cpp's CPU backend computes it in f32
  // over whole vectors, reading llama.cpp's f16 table only for the elements past them.) nemotron: the
  // squared ReLU in its place.
  if (c.ungated_ffn) {
    MatMul(kernels_.matmul, w.w_up, xn_.data(), rows, up_.data(), pool);
    lora_.Apply(layer, LoraTarget::kUp, xn_.data(), rows, lora_rows, up_.data(), kernels_.matmul, pool);
    ForEachRow(pool, rows, [&](int64_t r, int) {
      float* u = up_.data() + r * ff;
      for (size_t i = 0; i < w.b_up.size(); ++i) u[i] += w.b_up[i];  // none: falcon
      if (c.ffn_activation == FfnActivation::kReluSquared) {
        kernels_.elementwise.relu_squared(u, ff);
      } else {
        kernels_.elementwise.geglu(u, ffn_ones_.data(), ff);
      }
    });
    MatMul(kernels_.matmul, w.w_down, up_.data(), rows, out, pool);
    lora_.Apply(layer, LoraTarget::kDown, up_.data(), rows, lora_rows, out, kernels_.matmul, pool);
    add_down_bias();
    return;
  }
  const WeightMatrix gate_up[] = {w.w_gate, w.w_up};
  float* const outs[] = {gate_.data(), up_.data()};
  MatMulShared(kernels_.matmul, gate_up, xn_.data(), rows, outs, pool);
  lora_.Apply(layer, LoraTarget::kGate, xn_.data(), rows, lora_rows, gate_.data(), kernels_.matmul, pool);
  lora_.Apply(layer, LoraTarget::kUp, xn_.data(), rows, lora_rows, up_.data(), kernels_.matmul, pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* g = gate_.data() + r * ff;
    float* u = up_.data() + r * ff;
    for (size_t i = 0; i < w.b_gate.size(); ++i) {  // jais
      g[i] += w.b_gate[i];
      u[i] += w.b_up[i];
    }
    if (c.ffn_activation == FfnActivation::kGeluTanh) {
      kernels_.elementwise.geglu(g, u, ff);  // Gemma's GeGLU
    } else if (c.ffn_activation == FfnActivation::kSwiGluOai) {
      kernels_.elementwise.swiglu_oai(g, u, ff, kSwiGluOaiAlpha, kSwiGluOaiLimit);  // gpt-oss
    } else {
      kernels_.elementwise.swiglu(g, u, ff);
    }
  });
  MatMul(kernels_.matmul, w.w_down, gate_.data(), rows, out, pool);
  lora_.Apply(layer, LoraTarget::kDown, gate_.data(), rows, lora_rows, out, kernels_.matmul, pool);
  add_down_bias();
}

void Transformer::DenseBesideExperts(int64_t rows, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t d = c.n_embd;
  GatedFeedForward(rows, layer, c.LayerFf(layer), proj_.data(), pool);  // from ffn_norm's xn_
  ForEachRow(pool, rows, [&](int64_t r, int) {
    const float* x = x_.data() + r * d;
    kernels_.elementwise.rms_norm(proj_.data() + r * d, w.post_ffn_norm_1.data(), d, c.rms_eps,
                                  proj_.data() + r * d);
    kernels_.elementwise.rms_norm(x, w.pre_ffn_norm_2.data(), d, c.rms_eps, xn_.data() + r * d);
    kernels_.elementwise.rms_norm(x, w.router_input_scale.data(), d, c.rms_eps, router_x_.data() + r * d);
  });
  moe_.Forward(kernels_, c, w, xn_.data(), rows, shared_.data(), pool, router_x_.data());
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* p = proj_.data() + r * d;
    float* e = shared_.data() + r * d;
    kernels_.elementwise.rms_norm(e, w.post_ffn_norm_2.data(), d, c.rms_eps, e);
    for (int64_t i = 0; i < d; ++i) p[i] += e[i];
  });
}

void Transformer::FeedForwardBlock(int64_t rows, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t d = c.n_embd;
  // Cohere's, StableLM 2 12B's and phi2's parallel FFN reads xn_ as the attention block left it: attn_norm's
  // output (of the output rows, gathered to the front, in the last layer's skip); GPT-NeoX's and
  // Falcon-40B's, ffn_norm's of the layer's input (written there by the attention block).
  ForEachRow(pool, c.parallel_ffn ? 0 : rows, [&](int64_t r, int) {
    if (c.pre_norms) {
      Norm(x_.data() + r * d, w.ffn_norm.data(), w.ffn_norm_b, d, xn_.data() + r * d);
    } else {
      std::memcpy(xn_.data() + r * d, x_.data() + r * d, sizeof(float) * d);  // OLMo 2
    }
  });
  if (c.dense_beside_experts) {
    DenseBesideExperts(rows, layer, pool);
  } else if (!c.FeedForwardExperts(layer)) {
    GatedFeedForward(rows, layer, c.LayerFf(layer), proj_.data(), pool);
  } else {
    moe_.Forward(kernels_, c, w, xn_.data(), rows, proj_.data(), pool);
    if (c.n_ff_shared > 0 && !c.shared_expert_gate) {
      // deepseek2: + the shared experts' output as it is (a separate sum, then one add per element, as
      // ik_llama.cpp adds its two outputs).
      GatedFeedForward(rows, layer, c.n_ff_shared, shared_.data(), pool);
      ForEachRow(pool, rows, [&](int64_t r, int) {
        float* p = proj_.data() + r * d;
        const float* s = shared_.data() + r * d;
        for (int64_t i = 0; i < d; ++i) p[i] += s[i];
      });
    } else if (c.n_ff_shared > 0) {
      // qwen2moe: + the shared expert's output x sigmoid(ffn_gate_inp_shexp . xn) (one fused multiply-add
      // per element: the same bits on every CPU).
      GatedFeedForward(rows, layer, c.n_ff_shared, shared_.data(), pool);
      MatMul(kernels_.matmul, w.shared_gate, xn_.data(), rows, shared_gate_.data(), pool);
      ForEachRow(pool, rows, [&](int64_t r, int) {
        const float gate = 1.0f / (1.0f + ExpPolynomial(-shared_gate_[size_t(r)]));
        float* p = proj_.data() + r * d;
        const float* s = shared_.data() + r * d;
        for (int64_t i = 0; i < d; ++i) p[i] = std::fma(s[i], gate, p[i]);
      });
    }
  }
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    float* p = proj_.data() + r * d;
    if (c.post_norms)
      kernels_.elementwise.rms_norm(p, w.post_ffn_norm.data(), d, c.rms_eps, p);  // Gemma's post_ffw_norm
    if (c.residual_multiplier != 0) Scale(p, d, c.residual_multiplier);           // Granite
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
  // Gemma 4: the per-layer token inputs, then the layer's output scale. Fewer rows than the batch's: the
  // output rows, gathered (the last layer's skip).
  if (c.n_embd_per_layer > 0) {
    const int64_t* rows_of = rows < int64_t(lora_.batch_rows()) ? output_rows_.data() : nullptr;
    per_layer_inputs_.Apply(kernels_, c, w, layer, x_.data(), rows, rows_of, pool);
  }
  if (!w.out_scale.empty()) {
    ForEachRow(pool, rows, [&](int64_t r, int) { Scale(x_.data() + r * d, d, w.out_scale[0]); });
  }
}

}  // namespace lockstep
