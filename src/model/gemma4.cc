#include "model/gemma4.h"

#include <algorithm>
#include <cmath>

#include "model/architecture_keys.h"

namespace lockstep {

Status ApplyGemma4(const GgufFile& file, ModelConfig& c) {
  const std::string a = c.file_architecture + ".";
  c.post_norms = true;
  c.scale_embeddings = true;
  c.ffn_activation = FfnActivation::kGeluTanh;
  c.qk_norm = true;
  c.v_norm = true;
  c.attention_scale = 1.0f;
  LOCKSTEP_ASSIGN_OR_RETURN(double cap, file.GetFloatOr(a + "final_logit_softcapping", 30.0));
  if (!(cap >= 0) || !std::isfinite(cap))
    return OutOfRangeKey(file, a + "final_logit_softcapping", "must be >= 0");
  c.final_softcap = float(cap);

  LOCKSTEP_ASSIGN_OR_RETURN(c.sliding_window, file.GetInt(a + "attention.sliding_window"));
  if (c.sliding_window < 1 || c.sliding_window > (int64_t{1} << 30)) {
    return OutOfRangeKey(file, a + "attention.sliding_window", "is out of range");
  }
  const std::string pattern_key = a + "attention.sliding_window_pattern";
  LOCKSTEP_ASSIGN_OR_RETURN(const GgufValue::Array* pattern, file.GetArray(pattern_key));
  if (int64_t(pattern->elements.size()) != c.n_layer) {
    return OutOfRangeKey(file, pattern_key,
                         "must have one boolean per layer (" + std::to_string(c.n_layer) + ")");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.head_dim_local, file.GetIntOr(a + "attention.key_length_swa", c.head_dim));
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t value_local,
                            file.GetIntOr(a + "attention.value_length_swa", c.head_dim_local));
  if (c.head_dim_local < 2 || c.head_dim_local > kMaxHeadDim || value_local != c.head_dim_local) {
    return OutOfRangeKey(
        file, a + "attention.key_length_swa",
        "must be in 2.." + std::to_string(kMaxHeadDim) + " and equal attention.value_length_swa");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(c.rope_dim_local,
                            file.GetIntOr(a + "rope.dimension_count_swa", c.head_dim_local));
  if (c.rope_dim_local < 2 || c.rope_dim_local > c.head_dim_local || c.rope_dim_local % 2 != 0) {
    return OutOfRangeKey(file, a + "rope.dimension_count_swa",
                         "must be even and in 2..attention.key_length_swa");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(double local_base, file.GetFloatOr(a + "rope.freq_base_swa", 10000.0));
  if (!(local_base > 1)) return OutOfRangeKey(file, a + "rope.freq_base_swa", "must be > 1");
  c.rope_freq_base_local = float(local_base);

  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> kv_heads, PerLayerInts(file, a + "attention.head_count_kv",
                                                                        c.n_layer, c.n_head, 1, c.n_head));
  LOCKSTEP_ASSIGN_OR_RETURN(c.layer_n_ff,
                            PerLayerInts(file, a + "feed_forward_length", c.n_layer, -1, 1, 1 << 20));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const GgufValue& flag = pattern->elements[size_t(l)];
    if (!flag.AsBool() && !flag.AsInt()) return OutOfRangeKey(file, pattern_key, "must hold booleans");
    const bool local = flag.AsBool() ? *flag.AsBool() : *flag.AsInt() != 0;
    LayerAttention& layer = c.layers[size_t(l)];
    layer.window = local ? c.sliding_window : 0;
    layer.local_rope = local;
    layer.head_dim = local ? c.head_dim_local : c.head_dim;
    layer.n_head_kv = kv_heads[size_t(l)];
    if (c.n_head % layer.n_head_kv != 0) {
      return OutOfRangeKey(file, a + "attention.head_count_kv",
                           "= " + std::to_string(layer.n_head_kv) + " (layer " + std::to_string(l) +
                               ") does not divide attention.head_count");
    }
  }

  const std::string shared_key = a + "attention.shared_kv_layers";
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t shared, file.GetIntOr(shared_key, 0));
  if (shared < 0 || shared >= c.n_layer)
    return OutOfRangeKey(file, shared_key, "must be in 0..block_count - 1");
  const int64_t first_shared = c.n_layer - shared;
  for (int64_t l = first_shared; l < c.n_layer; ++l) {
    LayerAttention& layer = c.layers[size_t(l)];
    int64_t from = first_shared - 1;
    while (from >= 0 && (c.layers[size_t(from)].window > 0) != (layer.window > 0)) --from;
    if (from < 0) {
      return OutOfRangeKey(
          file, shared_key,
          "leaves layer " + std::to_string(l) + " no earlier layer of its kind to share K/V with");
    }
    layer.kv_from = int32_t(from);
    if (c.layers[size_t(from)].n_head_kv != layer.n_head_kv) {
      return OutOfRangeKey(file, a + "attention.head_count_kv",
                           "differs between layer " + std::to_string(l) + " and layer " +
                               std::to_string(from) + ", whose K/V it shares");
    }
  }
  // 26B-A4B: experts (read by ApplyExperts) beside every layer's dense FFN.
  c.dense_beside_experts = c.n_expert > 0;
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_embd_per_layer, file.GetIntOr(a + "embedding_length_per_layer_input", 0));
  if (c.n_embd_per_layer < 0 || c.n_embd_per_layer > (1 << 16)) {
    return OutOfRangeKey(file, a + "embedding_length_per_layer_input", "is out of range (0..65536)");
  }
  return Status::Ok();
}

}  // namespace lockstep
