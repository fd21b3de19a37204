// deepseek2's configuration (DeepSeek-V2 / V2.5 / V2-Lite / V3 / R1, Moonlight, GLM-4.7-Flash): multi-head
// latent attention (ModelConfig::kv_lora_rank, model/mla.h; in its absorbed form, mla_latent_cache, the KV
// cache holds the latent) and DeepSeek's experts (model/moe.h). The keys
// as llama.cpp's converter wrote them before its MLA rework (head_count_kv = head_count, key_length = qk_nope
// + qk_rope, value_length, rope.dimension_count = qk_rope, attn_kv_b), or as it writes them since
// (attention.key_length_mla present: head_count_kv 1, key_length kv_lora_rank + qk_rope, value_length
// kv_lora_rank, the heads' widths in key_length_mla / value_length_mla, attn_k_b / attn_v_b:
// ModelConfig::kv_b_split). YaRN as ik_llama.cpp's deepseek2 graph: the rotation's magnitude is 1 (ggml's
// 1 + 0.1 ln factor cancelled) and the attention scale is mscale^2 / sqrt(head_dim), mscale =
// rope.scaling.attn_factor x (1 + yarn_log_multiplier x ln factor) (the file writes 0.1 mscale_all_dim).
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// Sets c's deepseek2 fields from the file (after the common keys: model/model_config.cc); InvalidArgument
// or Unimplemented naming the key for what is missing, inconsistent or not run.
Status ApplyDeepseek2(const GgufFile& file, ModelConfig& c);

// DeepSeek's experts (ik_llama.cpp's deepseek2 and glm4moe hyper-parameters): expert_count,
// expert_used_count, expert_feed_forward_length and expert_shared_count (the shared experts: one ungated FFN
// of expert_shared_count x expert_feed_forward_length) required; expert_gating_func 1 softmax or 2 sigmoid
// (absent: default_gating); expert_weights_norm (default false), expert_weights_scale (default 1),
// leading_dense_block_count (default 0), the selection bias by its tensor, and group-limited routing
// (expert_group_count, default 1, dividing expert_count; expert_group_used_count, default all groups, enough
// groups for expert_used_count).
Status ApplyDeepseekExperts(const GgufFile& file, ModelConfig& c, int64_t default_gating);

}  // namespace lockstep
