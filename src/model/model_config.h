// ModelConfig: the hyper-parameters of a Llama-family transformer, read from GGUF metadata
// (`general.architecture`, `<arch>.embedding_length`, ...) and the token embedding's shape. Everything the
// forward pass needs comes from here; nothing is hard-coded per model. Value type, immutable once parsed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace lockstep {

// How RoPE pairs the dimensions of a head: kNormal rotates adjacent pairs (x[2i], x[2i+1]) — llama.cpp's
// layout for `llama` (its converter permutes the Q/K weights for it); kNeox rotates (x[i], x[i + n_rot/2]) —
// `qwen2`.
enum class RopeMode { kNormal, kNeox };

enum class RopeScaling { kNone, kLinear, kLlama3 };

// The largest attention head size accepted (attention kernels widen one head vector on the stack).
inline constexpr int64_t kMaxHeadDim = 4096;

struct ModelConfig {
  std::string architecture;  // "llama" | "qwen2"
  std::string name;          // general.name, if any
  int64_t n_vocab = 0;       // rows of token_embd
  int64_t n_ctx_train = 0;   // <arch>.context_length
  int64_t n_embd = 0;        // <arch>.embedding_length
  int64_t n_layer = 0;       // <arch>.block_count
  int64_t n_ff = 0;          // <arch>.feed_forward_length
  int64_t n_head = 0;        // <arch>.attention.head_count
  int64_t n_head_kv = 0;     // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;      // <arch>.attention.key_length (default n_embd / n_head)
  float rms_eps = 1e-5f;     // <arch>.attention.layer_norm_rms_epsilon
  bool qkv_bias = false;     // attn_{q,k,v}.bias present (qwen2)

  // RoPE.
  RopeMode rope_mode = RopeMode::kNormal;
  int64_t rope_dim = 0;          // <arch>.rope.dimension_count (default head_dim), rotated dims per head
  float rope_freq_base = 10000;  // <arch>.rope.freq_base
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_scale_factor = 1;  // linear: positions divided by it; llama3: the long-wavelength factor
  float rope_low_freq_factor = 1;
  float rope_high_freq_factor = 4;
  int64_t rope_orig_ctx = 8192;  // llama3: original_context_length
  // Per rotated pair i (rope_dim / 2 entries): theta_i is divided by rope_freq_factors[i] (llama3 scaling;
  // from the `rope_freqs.weight` tensor when present, else computed from the keys). Empty: all 1.
  std::vector<float> rope_freq_factors;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  // Human-readable one-line summary.
  std::string Summary() const;

  // Parses the metadata of `file`. Unsupported architectures, missing or inconsistent keys give a clear
  // error.
  static Result<ModelConfig> FromGguf(const GgufFile& file);
};

// Architectures this runtime can run.
const std::vector<std::string>& SupportedArchitectures();

// llama3-style per-pair divisors of theta (as llama.cpp's converter writes `rope_freqs`), rope_dim / 2
// entries.
std::vector<float> Llama3RopeFreqFactors(int64_t rope_dim, float freq_base, float factor,
                                         float low_freq_factor, float high_freq_factor, int64_t orig_ctx);

}  // namespace lockstep
