// The llama-like decoders' tensor plan and the matrix types (model/tensor_plan.h).
#include "model/tensor_plan.h"

#include "model/architectures.h"
#include "model/model_config.h"

namespace lockstep {

bool IsKQuant(TensorType type) {
  return type == TensorType::kQ2_K || type == TensorType::kQ3_K || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K || type == TensorType::kIQ4_XS;
}

TensorType KQuantFallback(TensorType type) {
  switch (type) {
    case TensorType::kIQ4_XS:
    case TensorType::kQ3_K:
    case TensorType::kQ2_K:
      return TensorType::kIQ4_NL;
    case TensorType::kQ4_K:
      return TensorType::kQ5_0;
    case TensorType::kQ5_K:
      return TensorType::kQ5_1;
    default:
      return TensorType::kQ8_0;
  }
}

TensorType MixBaseType(KQuantMix mix) {
  switch (mix) {
    case KQuantMix::kQ4KM:
    case KQuantMix::kQ4KS:
      return TensorType::kQ4_K;
    case KQuantMix::kQ5KM:
    case KQuantMix::kQ5KS:
      return TensorType::kQ5_K;
    case KQuantMix::kNone:
      break;
  }
  return TensorType::kF32;
}

TensorType MatrixType(const MakeModelOptions& o, Role role, int64_t layer, int64_t in) {
  TensorType type = o.type;
  const int64_t n_layer = o.shape.n_layer;
  const bool v_or_down = role == Role::kAttnV || role == Role::kFfnDown;
  if (o.mix != KQuantMix::kNone && role == Role::kOutput) type = TensorType::kQ6_K;
  if ((o.mix == KQuantMix::kQ4KM || o.mix == KQuantMix::kQ5KM) && v_or_down && UsesMoreBits(layer, n_layer)) {
    type = TensorType::kQ6_K;
  }
  if (o.mix == KQuantMix::kQ4KS &&
      ((role == Role::kAttnV && layer < 4) || (role == Role::kFfnDown && layer < n_layer / 8))) {
    type = TensorType::kQ5_K;
  }
  if (IsKQuant(type) && in % GetTensorTypeTraits(type).block_elements != 0) type = KQuantFallback(type);
  return type;
}

std::vector<PlannedTensor> PlanTensors(const MakeModelOptions& o, int64_t n_vocab) {
  const ModelShape& s = o.shape;
  if (IsBertEncoder(s.architecture)) return PlanBertTensors(o, n_vocab);
  if (s.architecture == "gemma4") return PlanGemma4Tensors(o, n_vocab);
  if (s.architecture == "deci") return PlanDeciTensors(o, n_vocab);
  const std::string a = TextArchitecture(s.architecture);  // the layers' tensors
  const int64_t head_dim = HeadDim(s);
  const int64_t q_dim = s.n_head * head_dim;
  const int64_t kv_dim = s.n_head_kv * head_dim;
  const bool olmo2 = a == "olmo2";  // no pre-norms; Q and K norms over the whole projection
  const bool whole_qk_norm = olmo2 || a == "minimax-m2" || a == "olmoe";
  const bool qk_norm = a == "qwen3" || a == "qwen3moe" || a == "gemma3" || a == "dots1" ||
                       a == "bailingmoe2" || whole_qk_norm || s.qk_norm;
  const bool post_norms = a == "gemma2" || a == "gemma3" || olmo2 || a == "glm4";
  // attn_qkv and ffn_up [gate | up], as llama.cpp's converter keeps them (glm4: ffn_up only)
  // gptneox: LayerNorms with biases, one attn_qkv with its bias, attn_output bias, the ungated FFN with
  // biases beside the attention from its own ffn_norm (parallel_ffn) or after it.
  const bool gptneox = a == "gptneox";
  // falcon: LayerNorms with biases, one attn_qkv, no biases in the layers, the ungated FFN beside the
  // attention (Falcon-40B, s.attn_norm_2: the attention from attn_norm_2, the FFN from attn_norm).
  const bool falcon = a == "falcon";
  // chatglm: one attn_qkv (with its bias: s.qkv_bias) and one ffn_up [gate | up].
  const bool chatglm = a == "chatglm";
  // gpt2, starcoder: position_embd, LayerNorms with biases, one attn_qkv (bias: s.qkv_bias), attn_output
  // bias, the ungated FFN with biases.
  // bloom: gpt2's layers without position_embd, token_embd_norm (with bias) on the embeddings. codeshell:
  // gpt2's layers without position_embd (RoPE).
  const bool gpt2 = a == "gpt2" || a == "starcoder", bloom = a == "bloom";
  const bool gpt2_layers = gpt2 || bloom || a == "codeshell";
  // mpt (MPT-7B's plan): LayerNorms and an ungated GELU FFN, all without biases, one attn_qkv.
  const bool mpt = a == "mpt";
  // jais: LayerNorms with biases, one attn_qkv (bias: s.qkv_bias), attn_output bias, the gated FFN with
  // biases on gate, up and down.
  const bool jais = a == "jais";
  const bool fused = a == "phi3" || a == "bailingmoe2" || gptneox || falcon || chatglm || gpt2_layers ||
                     mpt || jais || a == "qwen" || s.fused_qkv;
  const bool fused_ffn = a == "phi3" || a == "glm4" || chatglm;
  const bool gpt_oss = a == "gpt-oss";  // sinks, attn_output and expert biases (model/architectures.h)
  // Gated DeltaNet layers; gated attention output
  const bool qwen35 = a == "qwen35" || a == "qwen35moe" || a == "qwen3next";
  // LayerNorms, the FFN in parallel from attn_norm's output (no ffn_norm); Command R+: per-head Q/K norms.
  // stablelm: LayerNorms with biases; StableLM 2 12B: per-head Q/K norms, the FFN in parallel.
  const bool cohere = a == "command-r" || a == "cohere2";
  const bool stablelm = a == "stablelm";
  // phi2: LayerNorms with biases, the FFN in parallel, ungated with biases; attn_output and output biases.
  const bool phi2 = a == "phi2";
  // starcoder2: LayerNorms with biases, Q/K/V/O biases, the ungated FFN with biases (not in parallel).
  const bool starcoder2 = a == "starcoder2";
  // nemotron: LayerNorms with biases, the ungated (squared-ReLU) FFN without biases, as Nemotron-Mini's.
  const bool nemotron = a == "nemotron";
  // orion: llama's layers under LayerNorms with biases.
  const bool norm_bias =
      stablelm || phi2 || starcoder2 || gptneox || falcon || nemotron || gpt2_layers || jais || a == "orion";
  const bool ungated_ffn = phi2 || starcoder2 || gptneox || falcon || nemotron || gpt2_layers || mpt;
  const bool ffn_biases = ungated_ffn && !falcon && !nemotron && !mpt;  // and attn_output.bias
  // olmo (OLMo 1): LayerNorms without weights or biases: no norm tensors.
  const bool olmo = a == "olmo";
  const bool no_ffn_norm = olmo2 || olmo || cohere || phi2 || falcon || (s.parallel_ffn && !gptneox);
  TensorPlan plan(o);
  const Fill norm = plan.NormFill();
  // Tied embeddings: token_embd is the output matrix too, and takes its type.
  plan.Matrix("token_embd.weight", n_vocab, s.n_embd, s.tied_embeddings ? Role::kOutput : Role::kPlain);
  if (gpt2) plan.F32("position_embd.weight", {s.n_embd, s.n_ctx}, Fill::kNormal);
  if (bloom) {
    plan.Vec("token_embd_norm.weight", s.n_embd, norm);
    plan.Vec("token_embd_norm.bias", s.n_embd, Fill::kNormal);
  }
  if (!olmo) plan.Vec("output_norm.weight", s.n_embd, norm);
  if (norm_bias) plan.Vec("output_norm.bias", s.n_embd, Fill::kNormal);
  if (!s.tied_embeddings) plan.Matrix("output.weight", n_vocab, s.n_embd, Role::kOutput);
  if (phi2) plan.Vec("output.bias", n_vocab, Fill::kNormal);
  if (s.n_cls_out > 0) {  // wider than the matrices: the scores of different documents then spread out
    plan.F32("cls.output.weight", {s.n_embd, s.n_cls_out}, Fill::kNormal, 0.2f);
  }
  if (s.llama3_factor > 0) {
    plan.Values("rope_freqs.weight",
                Llama3RopeFreqFactors(RopeDim(s), s.rope_freq_base, s.llama3_factor, s.llama3_low_freq_factor,
                                      s.llama3_high_freq_factor, s.llama3_original_ctx));
  }
  if (s.longrope_orig_ctx > 0) {
    // Random factors (short ones near 1, long ones up to ~5), head_dim / 2 of them as llama.cpp c392e50 and
    // ik_llama.cpp load them (for partial rotary only the first rope_dim / 2 are read).
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
      const bool is_long = name[13] == 'l';
      NormalStream normal(o.seed ^ HashName(name));
      std::vector<float> f(size_t(head_dim / 2));
      for (float& x : f) x = 1.0f + std::abs(normal.Next(is_long ? 2.0f : 0.1f));
      plan.Values(name, f);
    }
  }
  for (plan.layer = 0; plan.layer < s.n_layer; ++plan.layer) {
    const int64_t layer = plan.layer;
    const std::string p = "blk." + std::to_string(layer) + ".";
    if (!olmo2 && !olmo) plan.Vec(p + "attn_norm.weight", s.n_embd, norm);
    if (norm_bias) plan.Vec(p + "attn_norm.bias", s.n_embd, Fill::kNormal);
    if (s.attn_norm_2) {
      plan.Vec(p + "attn_norm_2.weight", s.n_embd, norm);
      plan.Vec(p + "attn_norm_2.bias", s.n_embd, Fill::kNormal);
    }
    const bool dense = s.n_expert == 0 || layer < s.n_layer_dense_lead;
    const bool recurrent = qwen35 && (layer + 1) % s.full_attention_interval != 0;
    if (s.kv_lora_rank > 0) {
      PlanLatentAttention(p, plan);
    } else if (recurrent) {
      PlanDeltaNetLayer(p, plan);
    } else if (fused) {
      plan.Matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, s.n_embd, Role::kAttnV);
    } else {
      plan.Matrix(p + "attn_q.weight", (qwen35 ? 2 : 1) * q_dim,
                  s.n_embd);  // qwen35: [query | gate] per head
      plan.Matrix(p + "attn_k.weight", kv_dim, s.n_embd);
      plan.Matrix(p + "attn_v.weight", kv_dim, s.n_embd, Role::kAttnV);
    }
    if (s.qkv_bias && fused) {  // phi2's, gptneox's, chatglm's and gpt2's fused [q | k | v]
      plan.Vec(p + "attn_qkv.bias", q_dim + 2 * kv_dim, Fill::kNormal);
    } else if (s.qkv_bias) {
      plan.Vec(p + "attn_q.bias", q_dim, Fill::kNormal);
      plan.Vec(p + "attn_k.bias", kv_dim, Fill::kNormal);
      plan.Vec(p + "attn_v.bias", kv_dim, Fill::kNormal);
    }
    if ((cohere || stablelm) && s.qk_norm) {
      plan.F32(p + "attn_q_norm.weight", {head_dim, s.n_head}, norm);
      plan.F32(p + "attn_k_norm.weight", {head_dim, s.n_head_kv}, norm);
    } else if ((qk_norm || qwen35) && !recurrent) {
      plan.Vec(p + "attn_q_norm.weight", whole_qk_norm ? q_dim : head_dim, norm);
      plan.Vec(p + "attn_k_norm.weight", whole_qk_norm ? kv_dim : head_dim, norm);
    }
    if (!recurrent) plan.Matrix(p + "attn_output.weight", s.n_embd, s.n_head * ValueDim(s));
    if (gpt_oss) {  // sinks of a few units: the softmax's denominator then changes visibly
      plan.F32(p + "attn_sinks.weight", {s.n_head}, Fill::kNormal, 2.0f);
      plan.Vec(p + "attn_output.bias", s.n_embd, Fill::kNormal);
    }
    if (ffn_biases || jais) plan.Vec(p + "attn_output.bias", s.n_embd, Fill::kNormal);
    if (post_norms) plan.Vec(p + "post_attention_norm.weight", s.n_embd, norm);
    if (!no_ffn_norm) {
      const bool post_attention_named = gpt_oss || qwen35 || a == "glm4moe" || a == "seed_oss";
      plan.Vec(p + (post_attention_named ? "post_attention_norm.weight" : "ffn_norm.weight"), s.n_embd, norm);
      if (norm_bias) plan.Vec(p + "ffn_norm.bias", s.n_embd, Fill::kNormal);
    }
    if (!dense) {
      const int64_t ff = s.ExpertFf();
      plan.F32(p + "ffn_gate_inp.weight", {s.n_embd, s.n_expert}, Fill::kNormal, s.router_std);
      plan.Experts(p + "ffn_gate_exps.weight", ff, s.n_embd, s.n_expert, Role::kPlain);
      plan.Experts(p + "ffn_up_exps.weight", ff, s.n_embd, s.n_expert, Role::kPlain);
      plan.Experts(p + "ffn_down_exps.weight", s.n_embd, ff, s.n_expert, Role::kFfnDown);
      if (gpt_oss) {
        plan.F32(p + "ffn_gate_inp.bias", {s.n_expert}, Fill::kNormal, s.router_std);
        plan.F32(p + "ffn_gate_exps.bias", {ff, s.n_expert}, Fill::kNormal, s.expert_bias_std);
        plan.F32(p + "ffn_up_exps.bias", {ff, s.n_expert}, Fill::kNormal, s.expert_bias_std);
        plan.F32(p + "ffn_down_exps.bias", {s.n_embd, s.n_expert}, Fill::kNormal, 0);
      }
      if (s.selection_bias_std > 0) {
        plan.F32(p + "exp_probs_b.bias", {s.n_expert}, Fill::kNormal, s.selection_bias_std);
      }
      if (s.n_expert_shared > 0) {  // deepseek2's shared experts, one ungated FFN
        plan.Matrix(p + "ffn_gate_shexp.weight", ff * s.n_expert_shared, s.n_embd);
        plan.Matrix(p + "ffn_up_shexp.weight", ff * s.n_expert_shared, s.n_embd);
        plan.Matrix(p + "ffn_down_shexp.weight", s.n_embd, ff * s.n_expert_shared, Role::kFfnDown);
      }
      if (s.n_ff_shared > 0) {  // qwen2moe's shared expert and its gate
        plan.Vec(p + "ffn_gate_inp_shexp.weight", s.n_embd, Fill::kNormal);
        plan.Matrix(p + "ffn_gate_shexp.weight", s.n_ff_shared, s.n_embd);
        plan.Matrix(p + "ffn_up_shexp.weight", s.n_ff_shared, s.n_embd);
        plan.Matrix(p + "ffn_down_shexp.weight", s.n_embd, s.n_ff_shared, Role::kFfnDown);
      }
    } else if (fused_ffn) {
      plan.Matrix(p + "ffn_up.weight", 2 * s.n_ff, s.n_embd);
    } else if (ungated_ffn) {
      plan.Matrix(p + "ffn_up.weight", s.n_ff, s.n_embd);
      if (ffn_biases) {
        plan.Vec(p + "ffn_up.bias", s.n_ff, Fill::kNormal);
        plan.Vec(p + "ffn_down.bias", s.n_embd, Fill::kNormal);
      }
    } else {
      plan.Matrix(p + "ffn_gate.weight", s.n_ff, s.n_embd);
      plan.Matrix(p + "ffn_up.weight", s.n_ff, s.n_embd);
      if (jais) {
        plan.Vec(p + "ffn_gate.bias", s.n_ff, Fill::kNormal);
        plan.Vec(p + "ffn_up.bias", s.n_ff, Fill::kNormal);
        plan.Vec(p + "ffn_down.bias", s.n_embd, Fill::kNormal);
      }
    }
    if (dense) plan.Matrix(p + "ffn_down.weight", s.n_embd, s.n_ff, Role::kFfnDown);
    if (post_norms) plan.Vec(p + "post_ffw_norm.weight", s.n_embd, norm);
  }
  return std::move(plan.tensors);
}

}  // namespace lockstep
