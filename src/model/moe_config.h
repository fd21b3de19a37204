// The mixture-of-experts families' configuration, for model/architectures.cc: ApplyExperts reads the
// experts of qwen3moe, granitemoe, qwen2moe, gpt-oss, qwen35moe, qwen3next, gemma4, olmoe and llama (Mixtral)
// files; the others set up a whole family whose experts are DeepSeek's (model/deepseek2_config.h) or
// their own. Each sets c's fields from the file after the common keys and ApplyArchitecture's defaults;
// errors (InvalidArgument, Unimplemented) name the key. Pure functions.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// Softmax routing over <arch>.expert_count experts (the top expert_used_count renormalised, but qwen2moe's),
// widths, qwen2moe's / qwen35moe's shared expert, gpt-oss's biases; nothing when the file has no experts
// and its architecture needs none.
Status ApplyExperts(const GgufFile& file, ModelConfig& c);

// glm4moe (GLM-4.5, GLM-4.5-Air, GLM-4.6).
Status ApplyGlm4Moe(const GgufFile& file, ModelConfig& c);
// bailingmoe2 (Ling 2.0: Ling-mini-2.0, Ling-flash-2.0).
Status ApplyBailingMoe2(const GgufFile& file, ModelConfig& c);
// minimax-m2 (MiniMax-M2).
Status ApplyMinimaxM2(const GgufFile& file, ModelConfig& c);
// ernie4_5-moe (ERNIE-4.5-21B-A3B, 300B-A47B).
Status ApplyErnie45Moe(const GgufFile& file, ModelConfig& c);
// olmoe (OLMoE-1B-7B); after ApplyExperts.
Status ApplyOlmoe(const GgufFile& file, ModelConfig& c);
// deepseek (DeepSeek-MoE 16B, DeepSeek-V1's MoE).
Status ApplyDeepseek(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
