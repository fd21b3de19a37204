// Gemma 4 (`general.architecture` gemma4, the text model; llama.cpp's converter since April 2026): the keys
// it writes beyond gemma3's, read into ModelConfig. Its layers differ from one another:
//   - local (windowed) and global layers, per <arch>.attention.sliding_window_pattern (a boolean per layer);
//     local heads are attention.key_length_swa wide and rotate rope.dimension_count_swa dims with base
//     rope.freq_base_swa; global heads are attention.key_length wide, rotated with base rope.freq_base and
//     the rope_freqs tensor's per-pair divisors (its "proportional" RoPE: 1e30 leaves a pair unrotated);
//   - attention.head_count_kv and feed_forward_length may be arrays, one entry per layer;
//   - the last attention.shared_kv_layers layers store no K/V: each attends to the last earlier layer of
//     its kind (local or global), as transformers' Gemma 4 does;
//   - a layer without attn_v uses its K projection as V (before the norms), and V heads are RMS-normed
//     without a weight;
//   - blk.N.layer_output_scale (one number) scales the layer's output;
//   - attention scale 1 (the Q/K norms set the magnitude), final logits soft-capped (default 30).
// Per-layer token inputs (embedding_length_per_layer_input > 0: Gemma 4 E2B/E4B) are read into
// n_embd_per_layer. The mixture of experts (26B-A4B, <arch>.expert_count > 0) runs beside each layer's
// dense FFN (ModelConfig::dense_beside_experts). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// Sets Gemma 4's fields of `c` (which holds the common keys). Errors name the key.
Status ApplyGemma4(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
