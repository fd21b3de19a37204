// Random-weight model files in the real shapes of known models (`lockstep make-model`, tests, benchmarks).
// Weights are normal(0, 0.02) from a seeded generator (one stream per tensor, so the same seed gives the same
// file), norms are 1.0, 1-D tensors are F32 (as llama.cpp writes them), 2-D tensors are in the chosen weight
// types (MakeModelOptions). Tensor names and metadata follow llama.cpp's conventions so other GGUF tools load
// the file. The
// vocabulary is copied from another GGUF file (`tokenizer.*` keys; the vocab size follows it) or is a small
// built-in byte-level BPE vocabulary. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "gguf/tensor_type.h"

namespace lockstep {

struct ModelShape {
  std::string name;  // e.g. "smollm2-135m"
  std::string architecture = "llama";
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_ff = 96;
  int64_t n_ctx = 256;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;
  bool tied_embeddings = true;
  // llama3 rope scaling (written as the rope_freqs tensor); factor 0 = none.
  float llama3_factor = 0;
  float llama3_low_freq_factor = 1;
  float llama3_high_freq_factor = 4;
  int64_t llama3_original_ctx = 8192;
};

// Shapes by name: tiny (llama, GQA, untied), tiny-qwen2 (qwen2, QKV bias, tied), tiny-256 (llama, untied,
// rows of 256 and 512 elements: K-quant blocks fit), stories15m, smollm2-135m, qwen2-0.5b, llama-1b.
Result<ModelShape> FindModelShape(const std::string& name);
std::vector<std::string> ModelShapeNames();

struct MakeModelOptions {
  ModelShape shape;
  // Type of every 2-D tensor: f32, f16, bf16, q8_0, q4_0, q4_k or q6_k. K-quant tensors whose rows are not a
  // multiple of 256 elements are written as q8_0 instead (llama.cpp's quantizer also falls back there).
  TensorType type = TensorType::kF32;
  // llama.cpp's Q4_K_M mix (type must be q4_k): q6_k for the output matrix (token_embd when the embeddings
  // are tied) and for attn_v and ffn_down of the layers UsesMoreBits picks, q4_k for the rest.
  bool q4_k_m = false;
  std::string vocab_from;  // GGUF file whose tokenizer.* metadata is copied; "" = built-in vocab
  uint64_t seed = 1;
};

// Weight types by their make-model names: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, q4_k_m (sets type and
// q4_k_m). InvalidArgument naming the choices for any other name.
Status SetWeightTypes(const std::string& name, MakeModelOptions& options);
std::string WeightTypeNames();  // "f32|f16|...|q4_k_m"

// Q4_K_M's rule for the layers whose attn_v and ffn_down get 6 bits: the first and last eighth of the
// layers and every third one between them.
bool UsesMoreBits(int64_t layer, int64_t n_layer);

// The built-in vocabulary's tokenizer.* metadata (gpt2 model, 256 byte tokens, a few merges, <|endoftext|>).
std::vector<std::pair<std::string, GgufValue>> BuiltinVocabulary();

// Writes the model to `path`. InvalidArgument for a type the shape cannot use (row length not a multiple of
// the block size, for K-quants of the q8_0 fallback's), a q4_k_m mix without type q4_k, or an unreadable
// vocab file.
Status WriteRandomModel(const MakeModelOptions& options, const std::string& path);

}  // namespace lockstep
