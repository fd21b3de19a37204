// deci's configuration (Llama-3_1-Nemotron-51B, Llama-3_3-Nemotron-Super-49B, Llama-3_1-Nemotron-Ultra-253B,
// DeciLM-7B): llama's layers pruned per layer by neural architecture search. The file writes
// attention.head_count, attention.head_count_kv and feed_forward_length as one value per layer:
// - head_count 0: the layer has no attention (no attn_norm; LayerAttention::no_attention);
// - head_count > 0 and head_count_kv 0: "linear attention", attn_output applied to attn_norm's output
//   (LayerAttention::linear_attention);
// - otherwise grouped-query attention with the layer's own KV heads (DeciLM-7B: every layer);
// - feed_forward_length 0: the layer has no FFN (Nemotron Ultra; ModelConfig::LayerFf).
// Layers without attention store no K/V.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// Sets c's per-layer fields from the file (after the common keys, which hold the largest per-layer values:
// model/model_config.cc); InvalidArgument or Unimplemented naming the key and layer.
Status ApplyDeci(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
