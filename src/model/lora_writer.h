// Random LoRA adapters for a model file (`lockstep make-lora`, tests): the GGUF layout llama.cpp's
// convert_lora_to_gguf.py writes (model/lora_adapter.h), so llama.cpp and lockstep load the same file.
// Values are uniform with standard deviation `weight_std` from a seeded generator (one stream per tensor:
// the same seed gives the same file). Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"

namespace lockstep {

struct MakeLoraOptions {
  int64_t rank = 8;
  float alpha = 16;  // adapter.lora.alpha (0: the user scale is used as is)
  // Base matrices adapted in every layer, by llama.cpp's names: attn_q, attn_k, attn_v, attn_output,
  // ffn_gate, ffn_up, ffn_down; "output" adds output.weight (untied models only).
  std::vector<std::string> targets = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                      "ffn_gate", "ffn_up", "ffn_down"};
  TensorType type = TensorType::kF32;  // of lora_a and lora_b: f32, f16 or bf16
  float weight_std = 0.05f;
  uint64_t seed = 1;
};

// Writes an adapter for `model` to `path`. InvalidArgument for a rank < 1, an unknown target, a target the
// model does not have as a separate matrix (tied output, phi3's fused attn_qkv) or a type other than
// f32/f16/bf16.
Status WriteRandomLora(const GgufFile& model, const MakeLoraOptions& options, const std::string& path);

}  // namespace lockstep
