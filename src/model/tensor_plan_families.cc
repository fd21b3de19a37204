// The tensor plans of the families whose tensors differ from the llama-like decoders' (model/tensor_plan.h).
#include <algorithm>
#include <cmath>

#include "model/tensor_plan.h"

namespace lockstep {

// bert: absolute position and token-type tables, LayerNorms with biases, biases on every matrix, no gate
// and no output matrix.
std::vector<PlannedTensor> PlanBertTensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  const int64_t d = s.n_embd;
  TensorPlan plan(o);
  const Fill norm = plan.NormFill();
  auto layer_norm = [&](const std::string& name) {
    plan.Vec(name + ".weight", d, norm);
    plan.Vec(name + ".bias", d, Fill::kNormal);
  };
  // nomic-bert: RoPE (no position_embd), one attn_qkv, SwiGLU, no biases but the LayerNorms'. jina-bert-v2:
  // ALiBi (no position_embd), GeGLU with ffn_down's bias alone.
  const bool nomic = s.architecture == "nomic-bert", jina = s.architecture == "jina-bert-v2";
  plan.Matrix("token_embd.weight", n_vocab, d);
  plan.F32("token_types.weight", {d, 2}, Fill::kNormal);
  if (!nomic && !jina) plan.F32("position_embd.weight", {d, s.n_ctx}, Fill::kNormal);
  layer_norm("token_embd_norm");
  for (plan.layer = 0; plan.layer < s.n_layer; ++plan.layer) {
    const std::string p = "blk." + std::to_string(plan.layer) + ".";
    if (nomic) {
      plan.Matrix(p + "attn_qkv.weight", 3 * d, d);
      plan.Matrix(p + "attn_output.weight", d, d);
    } else {
      for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        plan.Matrix(p + m + ".weight", d, d);
        plan.Vec(p + m + ".bias", d, Fill::kNormal);
      }
    }
    layer_norm(p + "attn_output_norm");
    if (nomic || jina) plan.Matrix(p + "ffn_gate.weight", s.n_ff, d);
    plan.Matrix(p + "ffn_up.weight", s.n_ff, d);
    if (!nomic && !jina) plan.Vec(p + "ffn_up.bias", s.n_ff, Fill::kNormal);
    plan.Matrix(p + "ffn_down.weight", d, s.n_ff);
    if (!nomic) plan.Vec(p + "ffn_down.bias", d, Fill::kNormal);
    layer_norm(p + "layer_output_norm");
  }
  if (s.n_cls_out > 0) {  // BERT's head: a dense layer (tanh) before cls.output
    plan.F32("cls.weight", {d, d}, Fill::kNormal);
    plan.Vec("cls.bias", d, Fill::kNormal);
    plan.F32("cls.output.weight", {d, s.n_cls_out}, Fill::kNormal, 0.2f);
    plan.Vec("cls.output.bias", s.n_cls_out, Fill::kNormal);
  }
  return std::move(plan.tensors);
}

// deci: llama's tensors, each layer's as its head counts and FFN width say (model/deci_config.h).
std::vector<PlannedTensor> PlanDeciTensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  const int64_t d = s.n_embd, head_dim = HeadDim(s);
  TensorPlan plan(o);
  const Fill norm = plan.NormFill();
  plan.Matrix("token_embd.weight", n_vocab, d, s.tied_embeddings ? Role::kOutput : Role::kPlain);
  plan.Vec("output_norm.weight", d, norm);
  if (!s.tied_embeddings) plan.Matrix("output.weight", n_vocab, d, Role::kOutput);
  for (plan.layer = 0; plan.layer < s.n_layer; ++plan.layer) {
    const std::string p = "blk." + std::to_string(plan.layer) + ".";
    const int64_t heads = s.layer_heads[size_t(plan.layer)], kv_heads = s.layer_kv_heads[size_t(plan.layer)];
    const int64_t ff = s.layer_ff[size_t(plan.layer)];
    if (heads > 0) plan.Vec(p + "attn_norm.weight", d, norm);
    if (heads > 0 && kv_heads == 0) {  // linear attention
      plan.Matrix(p + "attn_output.weight", d, d);
    } else if (heads > 0) {
      plan.Matrix(p + "attn_q.weight", heads * head_dim, d);
      plan.Matrix(p + "attn_k.weight", kv_heads * head_dim, d);
      plan.Matrix(p + "attn_v.weight", kv_heads * head_dim, d, Role::kAttnV);
      plan.Matrix(p + "attn_output.weight", d, heads * head_dim);
    }
    if (ff > 0) {
      plan.Vec(p + "ffn_norm.weight", d, norm);
      plan.Matrix(p + "ffn_gate.weight", ff, d);
      plan.Matrix(p + "ffn_up.weight", ff, d);
      plan.Matrix(p + "ffn_down.weight", d, ff, Role::kFfnDown);
    }
  }
  return std::move(plan.tensors);
}

bool Gemma4Global(const ModelShape& s, int64_t layer) { return (layer + 1) % s.gemma4_global_every == 0; }
bool Gemma4Shared(const ModelShape& s, int64_t layer) { return layer >= s.n_layer - s.shared_kv_layers; }
int64_t Gemma4Ff(const ModelShape& s, int64_t layer) { return Gemma4Shared(s, layer) ? 2 * s.n_ff : s.n_ff; }

// Gemma 4's tensors as llama.cpp's converter names them.
std::vector<PlannedTensor> PlanGemma4Tensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  const int64_t d = s.n_embd, n_epl = s.n_embd_per_layer;
  TensorPlan plan(o);
  const Fill norm = plan.NormFill();
  plan.Matrix("token_embd.weight", n_vocab, d, Role::kOutput);  // tied, as every Gemma 4
  plan.Vec("output_norm.weight", d, norm);
  std::vector<float> freqs(size_t(s.head_dim / 2), 1e30f);  // a quarter of each global head rotated
  std::fill(freqs.begin(), freqs.begin() + s.head_dim / 8, 1.0f);
  plan.Values("rope_freqs.weight", std::move(freqs));
  if (n_epl > 0) {
    plan.Matrix("per_layer_token_embd.weight", n_vocab, n_epl * s.n_layer);
    plan.Matrix("per_layer_model_proj.weight", n_epl * s.n_layer, d);
    plan.Vec("per_layer_proj_norm.weight", n_epl, norm);
  }
  for (plan.layer = 0; plan.layer < s.n_layer; ++plan.layer) {
    const int64_t layer = plan.layer;
    const std::string p = "blk." + std::to_string(layer) + ".";
    const bool global = Gemma4Global(s, layer);
    const int64_t hd = global ? s.head_dim : s.head_dim_local;
    const int64_t kv_dim = (global && s.n_head_kv_global > 0 ? s.n_head_kv_global : s.n_head_kv) * hd;
    plan.Vec(p + "attn_norm.weight", d, norm);
    plan.Matrix(p + "attn_q.weight", s.n_head * hd, d);
    // Norm weights near `scale` (varied, so that misapplied norms show).
    auto scaled_norm = [&](const std::string& name, int64_t n, float scale) {
      std::vector<float> w(static_cast<size_t>(n));
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = (1.0f + 0.2f * std::sin(float(i * 7 + size_t(layer)))) * scale;
      plan.Values(name, std::move(w));
    };
    // Gemma 4 scales no scores: Q norms near 1 / sqrt(head size) keep random weights' attention from being
    // as sharp as one-hot.
    scaled_norm(p + "attn_q_norm.weight", hd, 1.0f / std::sqrt(float(hd)));
    if (!Gemma4Shared(s, layer)) {
      plan.Matrix(p + "attn_k.weight", kv_dim, d);
      if (!global) plan.Matrix(p + "attn_v.weight", kv_dim, d, Role::kAttnV);
      plan.Vec(p + "attn_k_norm.weight", hd, norm);
    }
    plan.Matrix(p + "attn_output.weight", d, s.n_head * hd);
    // Attention outputs a fifth of the residual's scale: unit-RMS V heads otherwise make the logits follow
    // their f16 rounding (5e-4) almost one to one, more than the top-2 margins of a tiny random model.
    scaled_norm(p + "post_attention_norm.weight", d, 0.2f);
    plan.Vec(p + "ffn_norm.weight", d, norm);
    plan.Matrix(p + "ffn_gate.weight", Gemma4Ff(s, layer), d);
    plan.Matrix(p + "ffn_up.weight", Gemma4Ff(s, layer), d);
    plan.Matrix(p + "ffn_down.weight", d, Gemma4Ff(s, layer), Role::kFfnDown);
    plan.Vec(p + "post_ffw_norm.weight", d, norm);
    if (s.n_expert > 0) {  // 26B-A4B: experts beside the dense FFN (ModelConfig::dense_beside_experts)
      const int64_t ff = s.n_ff_expert;
      plan.F32(p + "ffn_gate_inp.weight", {d, s.n_expert}, Fill::kNormal, s.router_std);
      plan.Vec(p + "ffn_gate_inp.scale", d, Fill::kNearOne);
      plan.Experts(p + "ffn_gate_up_exps.weight", 2 * ff, d, s.n_expert, Role::kPlain);
      plan.Experts(p + "ffn_down_exps.weight", d, ff, s.n_expert, Role::kFfnDown);
      plan.Vec(p + "ffn_down_exps.scale", s.n_expert, Fill::kNearOne);
      plan.Vec(p + "pre_ffw_norm_2.weight", d, norm);
      plan.Vec(p + "post_ffw_norm_1.weight", d, norm);
      plan.Vec(p + "post_ffw_norm_2.weight", d, norm);
    }
    plan.Vec(p + "layer_output_scale.weight", 1, Fill::kNearOne);
    if (n_epl > 0) {
      plan.Matrix(p + "inp_gate.weight", n_epl, d);
      plan.Matrix(p + "proj.weight", d, n_epl);
      plan.Vec(p + "post_norm.weight", d, norm);
    }
  }
  return std::move(plan.tensors);
}

// llama.cpp's names and shapes (model/delta_net.h): F32 conv taps and per-head vectors, ssm_a = -exp(A_log)
// for A_log in [0, 1.5). qwen3next: the input projections fused per key head (ssm_in, ssm_ba).
void PlanDeltaNetLayer(const std::string& p, TensorPlan& plan) {
  const ModelShape& s = plan.shape();
  const int64_t key_dim = s.ssm_k_heads * s.ssm_head_dim, value_dim = s.ssm_v_heads * s.ssm_head_dim;
  if (s.architecture == "qwen3next") {
    plan.Matrix(p + "ssm_in.weight", 2 * key_dim + 2 * value_dim, s.n_embd);
    plan.Matrix(p + "ssm_ba.weight", 2 * s.ssm_v_heads, s.n_embd);
  } else {
    plan.Matrix(p + "attn_qkv.weight", 2 * key_dim + value_dim, s.n_embd);
    plan.Matrix(p + "attn_gate.weight", value_dim, s.n_embd);
    plan.Matrix(p + "ssm_beta.weight", s.ssm_v_heads, s.n_embd);
    plan.Matrix(p + "ssm_alpha.weight", s.ssm_v_heads, s.n_embd);
  }
  plan.Matrix(p + "ssm_out.weight", s.n_embd, value_dim);
  plan.F32(p + "ssm_conv1d.weight", {s.ssm_conv_kernel, 2 * key_dim + value_dim}, Fill::kNormal, 0.3f);
  std::vector<float> a(size_t(s.ssm_v_heads));
  for (size_t h = 0; h < a.size(); ++h) a[h] = -std::exp(1.5f * float(h) / float(a.size()));
  plan.Values(p + "ssm_a", std::move(a));
  plan.F32(p + "ssm_dt.bias", {s.ssm_v_heads}, Fill::kNormal, 1.0f);
  plan.Vec(p + "ssm_norm.weight", s.ssm_head_dim, plan.NormFill());
}

// model/mla.h: the query (through the query LoRA when q_lora_rank > 0), the compressed KV and its norm, and
// attn_kv_b's decompression.
void PlanLatentAttention(const std::string& p, TensorPlan& plan) {
  const ModelShape& s = plan.shape();
  const int64_t q_dim = s.n_head * HeadDim(s);
  if (s.q_lora_rank > 0) {
    plan.Matrix(p + "attn_q_a.weight", s.q_lora_rank, s.n_embd);
    plan.Vec(p + "attn_q_a_norm.weight", s.q_lora_rank, plan.NormFill());
    plan.Matrix(p + "attn_q_b.weight", q_dim, s.q_lora_rank);
  } else {
    plan.Matrix(p + "attn_q.weight", q_dim, s.n_embd);
  }
  plan.Matrix(p + "attn_kv_a_mqa.weight", s.kv_lora_rank + RopeDim(s), s.n_embd);
  plan.Vec(p + "attn_kv_a_norm.weight", s.kv_lora_rank, plan.NormFill());
  const int64_t nope = HeadDim(s) - RopeDim(s);
  if (s.split_kv_b) {  // llama.cpp's layout since its MLA rework: each head's keys part transposed
    const KvBSource source{p + "attn_kv_b.weight", nope, ValueDim(s)};
    plan.KvBPart(p + "attn_k_b.weight", {nope, s.kv_lora_rank, s.n_head}, Fill::kKvBKeys, source);
    plan.KvBPart(p + "attn_v_b.weight", {s.kv_lora_rank, ValueDim(s), s.n_head}, Fill::kKvBValues, source);
    return;
  }
  plan.Matrix(p + "attn_kv_b.weight", s.n_head * (nope + ValueDim(s)), s.kv_lora_rank, Role::kAttnV);
}

}  // namespace lockstep
