// The LayerNorm families' configuration, for model/architectures.cc (ArchInfo::apply): llama.cpp's graphs of
// the decoders whose norms are LayerNorms (ArchInfo::layer_norm) and whose positions come from partial RoPE,
// learned embeddings or ALiBi. Each sets c's fields from the file after the common keys and
// ApplyArchitecture's defaults; errors (InvalidArgument, Unimplemented) name the key. Pure functions.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// phi2 (phi-2): attention and an ungated GELU FFN in parallel, biases throughout.
Status ApplyPhi2(const GgufFile& file, ModelConfig& c);
// starcoder2 (StarCoder2): Q/K/V/O biases, an ungated GELU FFN with biases.
Status ApplyStarCoder2(const GgufFile& file, ModelConfig& c);
// gptneox (Pythia, RedPajama-INCITE, Dolly v2): fused Q/K/V, the FFN beside the attention or after it.
Status ApplyGptNeoX(const GgufFile& file, ModelConfig& c);
// falcon (Falcon-7B, 40B): multi-query attention and FFN in parallel.
Status ApplyFalcon(const GgufFile& file, ModelConfig& c);
// nemotron (Nemotron-4, Minitron, Nemotron-Mini): the squared-ReLU FFN.
Status ApplyNemotron(const GgufFile& file, ModelConfig& c);
// olmo (OLMo 1): LayerNorms without weights, Q/K/V clamped where the file says.
Status ApplyOlmo(const GgufFile& file, ModelConfig& c);
// gpt2, starcoder (GPT-2; StarCoder, SantaCoder): learned position embeddings.
Status ApplyGpt2(const GgufFile& file, ModelConfig& c);
// codeshell (CodeShell-7B): gpt2's layers with GQA and NeoX RoPE.
Status ApplyCodeShell(const GgufFile& file, ModelConfig& c);
// bloom (BLOOM, BLOOMZ): token_embd_norm and ALiBi.
Status ApplyBloom(const GgufFile& file, ModelConfig& c);
// mpt (MPT-7B, MPT-30B): ALiBi, a clamped fused Q/K/V.
Status ApplyMpt(const GgufFile& file, ModelConfig& c);
// jais (Jais-13B, Jais-30B): ALiBi, scores scaled by 1 / head_dim, SwiGLU with biases.
Status ApplyJais(const GgufFile& file, ModelConfig& c);
// orion (Orion-14B): llama's layers under LayerNorms with biases.
Status ApplyOrion(const GgufFile& file, ModelConfig& c);
// stablelm (StableLM 2, StableLM-3B-4E1T): partial NeoX RoPE; StableLM 2 12B's per-head Q/K norms.
Status ApplyStableLm(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
