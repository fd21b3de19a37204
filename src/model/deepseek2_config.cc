// deepseek2's configuration (model/deepseek2_config.h).
#include "model/deepseek2_config.h"

#include <cmath>

#include "model/architecture_keys.h"

namespace lockstep {
namespace {

// llama.cpp's conversions since its MLA rework (attention.key_length_mla present): head_count_kv 1,
// key_length kv_lora_rank + rope dims and value_length kv_lora_rank (its latent cache's widths), the heads'
// own widths in key_length_mla and value_length_mla, and attn_kv_b split into attn_k_b and attn_v_b
// (ModelConfig::kv_b_split; an attn_kv_b beside them, as ik_llama.cpp's converter keeps it, is read
// instead). The config then holds the heads' widths, as for the older files.
Status ApplyDeepseek2SplitWidths(const GgufFile& file, ModelConfig& c) {
  const std::string k_key = Key(c, "attention.key_length_mla"), v_key = Key(c, "attention.value_length_mla");
  if (c.n_head_kv != 1 || c.head_dim != c.kv_lora_rank + c.rope_dim || c.value_dim != c.kv_lora_rank) {
    return InvalidArgument(file.path() + ": deepseek2 with '" + k_key +
                           "' needs attention.head_count_kv = 1, key_length = kv_lora_rank + "
                           "rope.dimension_count (" +
                           std::to_string(c.kv_lora_rank + c.rope_dim) +
                           ") and value_length = kv_lora_rank (" + std::to_string(c.kv_lora_rank) +
                           "); the file has " + std::to_string(c.n_head_kv) + ", " +
                           std::to_string(c.head_dim) + " and " + std::to_string(c.value_dim));
  }
  LOCKSTEP_ASSIGN_OR_RETURN(const int64_t head_dim, ReadCount(file, k_key, -1, kMaxHeadDim));
  LOCKSTEP_ASSIGN_OR_RETURN(const int64_t value_dim, ReadCount(file, v_key, -1, kMaxHeadDim));
  if (head_dim <= c.rope_dim || value_dim < 1) {
    return InvalidArgument(file.path() + ": '" + k_key + "' = " + std::to_string(head_dim) +
                           " must exceed rope.dimension_count (" + std::to_string(c.rope_dim) + ") and '" +
                           v_key + "' must be at least 1");
  }
  c.n_head_kv = c.n_head;
  c.head_dim = head_dim;
  c.value_dim = value_dim;
  c.attention_scale = 1.0f / std::sqrt(float(c.head_dim));
  c.kv_b_split = file.FindTensor("blk.0.attn_kv_b.weight") == nullptr;
  return Status::Ok();
}

}  // namespace

Status ApplyDeepseekExperts(const GgufFile& file, ModelConfig& c, int64_t default_gating) {
  LOCKSTEP_RETURN_IF_ERROR(ReadExpertCounts(file, c));
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t shared, ReadCount(file, Key(c, "expert_shared_count"), -1, 64));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_layer_dense_lead,
                            ReadCount(file, Key(c, "leading_dense_block_count"), 0, c.n_layer));
  if (shared < 1) {
    return OutOfRangeKey(file, Key(c, "expert_shared_count"), "= 0: " + c.architecture + " needs at least 1");
  }
  c.n_ff_shared = c.n_ff_expert * shared;
  c.shared_expert_gate = false;
  const std::string groups_key = Key(c, "expert_group_count"), used_key = Key(c, "expert_group_used_count");
  LOCKSTEP_ASSIGN_OR_RETURN(c.expert_groups, ReadCount(file, groups_key, 1, c.n_expert));
  LOCKSTEP_ASSIGN_OR_RETURN(c.expert_groups_used,
                            ReadCount(file, used_key, c.expert_groups, c.expert_groups));
  if (c.expert_groups < 1 || c.n_expert % c.expert_groups != 0) {
    return OutOfRangeKey(file, groups_key,
                         "= " + std::to_string(c.expert_groups) + " must divide '" + Key(c, "expert_count") +
                             "' = " + std::to_string(c.n_expert));
  }
  if (c.expert_groups_used < 1 || c.expert_groups_used * (c.n_expert / c.expert_groups) < c.n_expert_used) {
    return OutOfRangeKey(file, used_key,
                         "= " + std::to_string(c.expert_groups_used) + " leaves fewer experts than '" +
                             Key(c, "expert_used_count") + "' = " + std::to_string(c.n_expert_used));
  }
  const std::string gating_key = Key(c, "expert_gating_func");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t gating, file.GetIntOr(gating_key, default_gating));
  if (gating != 1 && gating != 2) {
    return Unimplemented(file.path() + ": unsupported: '" + gating_key + "' = " + std::to_string(gating) +
                         " (deepseek2 runs 1, softmax, and 2, sigmoid)");
  }
  c.expert_gating = gating == 2 ? ModelConfig::ExpertGating::kSigmoid : ModelConfig::ExpertGating::kSoftmax;
  LOCKSTEP_ASSIGN_OR_RETURN(c.expert_weights_norm, file.GetBoolOr(Key(c, "expert_weights_norm"), false));
  LOCKSTEP_ASSIGN_OR_RETURN(double scale, file.GetFloatOr(Key(c, "expert_weights_scale"), 1.0));
  if (!(scale > 0) || !std::isfinite(scale)) {
    return OutOfRangeKey(file, Key(c, "expert_weights_scale"), "must be a finite number > 0");
  }
  c.expert_weights_scale = float(scale);
  if (c.n_layer_dense_lead < c.n_layer) {
    c.expert_selection_bias =
        file.FindTensor("blk." + std::to_string(c.n_layer_dense_lead) + ".exp_probs_b.bias") != nullptr;
  }
  return Status::Ok();
}

Status ApplyDeepseek2(const GgufFile& file, ModelConfig& c) {
  // Without the key: sigmoid for 47- and 48-layer files (GLM-4.7-Flash), as ik_llama.cpp guesses.
  LOCKSTEP_RETURN_IF_ERROR(ApplyDeepseekExperts(file, c, c.n_layer == 47 || c.n_layer == 48 ? 2 : 1));
  LOCKSTEP_ASSIGN_OR_RETURN(c.kv_lora_rank, ReadCount(file, Key(c, "attention.kv_lora_rank"), -1, 1 << 16));
  if (file.FindTensor("blk.0.attn_q_a.weight") != nullptr) {
    LOCKSTEP_ASSIGN_OR_RETURN(c.q_lora_rank, ReadCount(file, Key(c, "attention.q_lora_rank"), -1, 1 << 16));
  }
  if (c.kv_lora_rank < 1 || (file.FindTensor("blk.0.attn_q_a.weight") != nullptr && c.q_lora_rank < 1)) {
    return InvalidArgument(file.path() +
                           ": deepseek2 needs attention.kv_lora_rank (and with attn_q_a, "
                           "attention.q_lora_rank) of at least 1");
  }
  if (file.Has(Key(c, "attention.key_length_mla"))) {
    LOCKSTEP_RETURN_IF_ERROR(ApplyDeepseek2SplitWidths(file, c));
  } else if (file.FindTensor("blk.0.attn_kv_b.weight") == nullptr &&
             file.FindTensor("blk.0.attn_k_b.weight") != nullptr) {
    return InvalidArgument(file.path() + ": deepseek2 with attn_k_b / attn_v_b needs '" +
                           Key(c, "attention.key_length_mla") + "' and '" +
                           Key(c, "attention.value_length_mla") + "' (the heads' widths)");
  }
  if (c.n_head_kv != c.n_head || c.rope_dim >= c.head_dim) {
    return InvalidArgument(file.path() + ": deepseek2 needs attention.head_count_kv = head_count (" +
                           std::to_string(c.n_head) + ") and rope.dimension_count < key_length (" +
                           std::to_string(c.head_dim) + ")");
  }
  c.mla_latent_cache = true;  // the absorbed form (model/mla.h)
  if (c.rope_scaling == RopeScaling::kYarn) {
    const float log_factor = std::log(1.0f / (1.0f / c.rope_scale_factor));
    const float mscale = c.rope_attn_factor * (1.0f + c.yarn_log_mul * log_factor);
    c.attention_scale = mscale * mscale / std::sqrt(float(c.head_dim));
    c.rope_attn_factor = 1.0f / (1.0f + 0.1f * log_factor);
    c.yarn_log_mul = 0;  // model/rope.h then multiplies by 1 + 0.1 ln factor (with extrapolation): 1 in all
  }
  return Status::Ok();
}

}  // namespace lockstep
