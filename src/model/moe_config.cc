// The mixture-of-experts families' configuration (model/moe_config.h).
#include "model/moe_config.h"

#include "model/architecture_keys.h"
#include "model/deepseek2_config.h"

namespace lockstep {

// glm4moe (GLM-4.5, GLM-4.5-Air, GLM-4.6): llama's layers with QKV bias and Q/K norms when their tensors are
// there, partial NeoX RoPE, the FFN's pre-norm named post_attention_norm, and DeepSeek's experts (sigmoid
// scores unless the file says otherwise, exp_probs_b choosing, one ungated shared expert, leading dense
// layers). The multi-token-prediction layers (nextn_predict_layers, the last blocks) are not run.
Status ApplyGlm4Moe(const GgufFile& file, ModelConfig& c) {
  c.ffn_norm_is_post_attention_norm = true;
  c.qk_norm = file.FindTensor("blk.0.attn_q_norm.weight") != nullptr;
  LOCKSTEP_RETURN_IF_ERROR(SkipNextnLayers(file, c));
  return ApplyDeepseekExperts(file, c, /*default_gating=*/2);
}

// olmoe (OLMoE-1B-7B; llama.cpp's graph): llama's layers with RMS norms of the whole Q and the whole K
// projection (olmo2's, before RoPE), NeoX pairs, and as every layer's FFN expert_used_count of expert_count
// experts (as wide as feed_forward_length: its files write no expert width) weighted by their softmax over
// all experts, not renormalised.
Status ApplyOlmoe(const GgufFile&, ModelConfig& c) {
  c.qk_norm = c.qk_norm_whole = true;
  c.expert_weights_norm = false;
  return Status::Ok();
}

// deepseek (DeepSeek-MoE 16B; llama.cpp's graph): llama's layers (optional Q/K/V/O biases), then after
// leading_dense_block_count dense layers DeepSeek's experts scored by a softmax over all experts, not
// renormalised, beside expert_shared_count gated shared experts. llama.cpp's graph never applies
// expert_weights_scale (its files write 1), so it is left at 1 here.
Status ApplyDeepseek(const GgufFile& file, ModelConfig& c) {
  LOCKSTEP_RETURN_IF_ERROR(ApplyDeepseekExperts(file, c, /*default_gating=*/1));
  c.expert_weights_scale = 1;
  return Status::Ok();
}

// bailingmoe2 (Ling 2.0 / Ring 2.0: Ling-mini-2.0, Ling-flash-2.0; llama.cpp's graph): llama's layers with a
// fused attn_qkv, per-head Q/K norms, partial NeoX RoPE, then after leading dense layers DeepSeek's experts
// (group-limited: expert_group_count, expert_group_used_count) beside a shared expert of
// expert_shared_feed_forward_length; the nextn (multi-token prediction) layers are not run.
Status ApplyBailingMoe2(const GgufFile& file, ModelConfig& c) {
  c.qk_norm = true;
  LOCKSTEP_RETURN_IF_ERROR(SkipNextnLayers(file, c));
  LOCKSTEP_RETURN_IF_ERROR(ApplyDeepseekExperts(file, c, /*default_gating=*/2));
  // The shared experts' width as the file states it (ApplyDeepseekExperts: expert_shared_count x the
  // experts' width).
  LOCKSTEP_ASSIGN_OR_RETURN(
      c.n_ff_shared, ReadCount(file, Key(c, "expert_shared_feed_forward_length"), c.n_ff_shared, 1 << 20));
  return Status::Ok();
}

// minimax-m2 (MiniMax-M2, llama.cpp's graph for it): llama's layers with RMS norms of the whole Q and the
// whole K projection (before RoPE), partial NeoX RoPE, and as every layer's FFN experts scored by
// expert_gating_func (its files: 2, sigmoid; absent: sigmoid), chosen with exp_probs_b, their scores
// renormalised (llama.cpp's graph renormalises whatever the file says); no shared expert.
Status ApplyMinimaxM2(const GgufFile& file, ModelConfig& c) {
  c.qk_norm = true;
  c.qk_norm_whole = true;
  LOCKSTEP_RETURN_IF_ERROR(ReadExpertCounts(file, c));
  const std::string gating_key = Key(c, "expert_gating_func");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t gating, file.GetIntOr(gating_key, 2));
  if (gating != 1 && gating != 2) {
    return Unimplemented(file.path() + ": unsupported: '" + gating_key + "' = " + std::to_string(gating) +
                         " (minimax-m2 supports 1, softmax, and 2, sigmoid)");
  }
  c.expert_gating = gating == 2 ? ModelConfig::ExpertGating::kSigmoid : ModelConfig::ExpertGating::kSoftmax;
  c.expert_weights_norm = true;
  c.expert_selection_bias = file.FindTensor("blk.0.exp_probs_b.bias") != nullptr;
  return Status::Ok();
}

// ernie4_5-moe (ERNIE-4.5-21B-A3B, 300B-A47B; llama.cpp's graph): ernie4_5's layers, after
// leading_dense_block_count dense ones experts on every layer (interleave_moe_layer_step 1; others are not
// run) scored by their softmax, chosen with exp_probs_b when the file has it, their scores renormalised,
// beside one ungated shared FFN of expert_shared_feed_forward_length (absent or 0: none).
Status ApplyErnie45Moe(const GgufFile& file, ModelConfig& c) {
  LOCKSTEP_RETURN_IF_ERROR(ReadExpertCounts(file, c));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_ff_shared,
                            ReadCount(file, Key(c, "expert_shared_feed_forward_length"), 0, 1 << 20));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_layer_dense_lead,
                            ReadCount(file, Key(c, "leading_dense_block_count"), 0, c.n_layer));
  const std::string step_key = Key(c, "interleave_moe_layer_step");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t step, ReadCount(file, step_key, 1, c.n_layer));
  if (step != 1) {
    return Unimplemented(file.path() + ": unsupported: '" + step_key + "' = " + std::to_string(step) +
                         " (lockstep runs experts on every layer after the leading dense ones)");
  }
  c.shared_expert_gate = false;
  c.expert_gating = ModelConfig::ExpertGating::kSoftmax;
  c.expert_weights_norm = true;
  if (c.n_layer_dense_lead < c.n_layer) {
    c.expert_selection_bias =
        file.FindTensor("blk." + std::to_string(c.n_layer_dense_lead) + ".exp_probs_b.bias") != nullptr;
  }
  return Status::Ok();
}

// The experts of qwen3moe, granitemoe, qwen2moe, gpt-oss and llama (Mixtral) files: softmax routing over
// <arch>.expert_count experts, the top <arch>.expert_used_count renormalised (llama.cpp's graphs for all
// but qwen2moe, whatever the file says about norm_topk_prob; qwen2moe's are not), SwiGLU experts of
// <arch>.expert_feed_forward_length (default: Mixtral feed_forward_length, qwen2moe feed_forward_length /
// expert_used_count, as llama.cpp). qwen2moe: one shared expert of <arch>.expert_shared_feed_forward_length
// (default feed_forward_length) besides.
Status ApplyExperts(const GgufFile& file, ModelConfig& c) {
  const std::string count_key = Key(c, "expert_count");
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_expert, file.GetIntOr(count_key, 0));
  const bool qwen2moe = c.architecture == "qwen2moe";
  // qwen2moe's shared expert, renormalised weights
  const bool qwen35moe = c.architecture == "qwen35moe" || c.architecture == "qwen3next";
  const bool gpt_oss = c.architecture == "gpt-oss";
  if (c.n_expert == 0 && c.architecture != "qwen3moe" && c.architecture != "granitemoe" && !qwen2moe &&
      !gpt_oss && !qwen35moe && c.architecture != "olmoe") {
    return Status::Ok();
  }
  if (c.n_expert <= 0 || c.n_expert > kMaxExperts) {
    return OutOfRangeKey(file, count_key,
                         "= " + std::to_string(c.n_expert) + " is out of range (1.." +
                             std::to_string(kMaxExperts) +
                             (file.Has(count_key) ? ")" : "; the key is missing)"));
  }
  const std::string used_key = Key(c, "expert_used_count");
  if (!file.Has(used_key)) {
    return InvalidArgument(file.path() + ": key '" + used_key +
                           "' is missing (a mixture of experts needs it)");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_expert_used, file.GetInt(used_key));
  if (c.n_expert_used <= 0 || c.n_expert_used > c.n_expert) {
    return OutOfRangeKey(file, used_key,
                         "= " + std::to_string(c.n_expert_used) + " is out of range (1.." + count_key +
                             " = " + std::to_string(c.n_expert) + ")");
  }
  const std::string ff_key = Key(c, "expert_feed_forward_length");
  if ((gpt_oss || c.architecture == "gemma4") && !file.Has(ff_key)) {  // llama.cpp requires it for gpt-oss
    return InvalidArgument(file.path() + ": key '" + ff_key + "' is missing (" + c.architecture +
                           " needs its expert width)");
  }
  auto width = [&](const std::string& key, int64_t fallback, int64_t& value) -> Status {
    LOCKSTEP_ASSIGN_OR_RETURN(value, file.GetIntOr(key, fallback));
    if (value <= 0 || value > (1 << 20)) {
      return OutOfRangeKey(file, key, "= " + std::to_string(value) + " is out of range (1..1048576)");
    }
    return Status::Ok();
  };
  LOCKSTEP_RETURN_IF_ERROR(width(ff_key, qwen2moe ? c.n_ff / c.n_expert_used : c.n_ff, c.n_ff_expert));
  if (qwen2moe || qwen35moe) {
    c.expert_weights_norm = qwen35moe;
    LOCKSTEP_RETURN_IF_ERROR(width(Key(c, "expert_shared_feed_forward_length"), c.n_ff, c.n_ff_shared));
  }
  // What llama.cpp's graphs for these architectures never use (qwen2moe's never reads it: one shared
  // expert); a file that sets it otherwise wants another.
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t shared, file.GetIntOr(Key(c, "expert_shared_count"), 0));
  if (shared != 0 && !((qwen2moe || qwen35moe) && shared == 1)) {
    return Unimplemented(file.path() + ": unsupported: shared experts ('" + Key(c, "expert_shared_count") +
                         "' = " + std::to_string(shared) + ")");
  }
  // llama.cpp's gating functions: 1 softmax over all experts; 3 (gpt-oss's, whatever its file says) softmax
  // over the chosen experts' logits. Both choose the largest logits, and with renormalised weights they give
  // the same weights (RouteRow).
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t gating, file.GetIntOr(Key(c, "expert_gating_func"), gpt_oss ? 3 : 1));
  if (gating != (gpt_oss ? 3 : 1)) {
    return Unimplemented(file.path() + ": unsupported: '" + Key(c, "expert_gating_func") +
                         "' = " + std::to_string(gating) + " (" + c.architecture + " supports only " +
                         (gpt_oss ? "3, softmax over the chosen experts)" : "1, softmax routing)"));
  }
  return Status::Ok();
}

}  // namespace lockstep
