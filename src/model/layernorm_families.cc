// The LayerNorm families' configuration (model/layernorm_families.h).
#include "model/layernorm_families.h"

#include "model/architecture_keys.h"

namespace lockstep {
namespace {

// c.clamp_kqv from <arch>.attention.clamp_kqv where the file has it (olmo, mpt).
Status ReadClampKqv(const GgufFile& file, ModelConfig& c) {
  const std::string key = Key(c, "attention.clamp_kqv");
  LOCKSTEP_ASSIGN_OR_RETURN(const double clamp, file.GetFloatOr(key, 0.0));
  if (!(clamp >= 0 && clamp <= 1e30)) return OutOfRangeKey(file, key, "must be 0 (none) or positive");
  c.clamp_kqv = float(clamp);
  return Status::Ok();
}

}  // namespace

Status ApplyPhi2(const GgufFile&, ModelConfig& c) {
  // llama.cpp's phi2 graph: LayerNorms with biases, attention and an ungated GELU FFN in parallel from
  // attn_norm's output, biases on Q/K/V (attn_qkv.bias when fused), attn_output, the FFN and the output,
  // partial NeoX RoPE.
  c.norm_bias = c.parallel_ffn = c.ungated_ffn = c.ffn_bias = c.output_bias = true;
  c.attn_output_bias = true;
  c.qkv_bias = true;
  return Status::Ok();
}

Status ApplyStarCoder2(const GgufFile&, ModelConfig& c) {
  // llama.cpp's starcoder2 graph: LayerNorms with biases, biases on Q/K/V (by tensor) and attn_output,
  // NeoX RoPE, then (not in parallel) an ungated GELU FFN with biases; tied output where the file has no
  // output.weight.
  c.norm_bias = c.ungated_ffn = c.ffn_bias = true;
  c.attn_output_bias = true;
  return Status::Ok();
}

Status ApplyGptNeoX(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's gptneox graph (Pythia, RedPajama-INCITE, Dolly v2): LayerNorms with biases, one attn_qkv
  // with its bias, attn_output bias, partial NeoX RoPE, an ungated GELU FFN with biases; with
  // use_parallel_residual (the Hugging Face default, written by llama.cpp's converter) the FFN runs beside
  // the attention from its own ffn_norm of the layer's input, else after it.
  c.norm_bias = c.ungated_ffn = c.ffn_bias = true;
  c.attn_output_bias = true;
  c.qkv_bias = true;
  LOCKSTEP_ASSIGN_OR_RETURN(c.parallel_ffn, file.GetBoolOr(Key(c, "use_parallel_residual"), true));
  c.parallel_ffn_norm = c.parallel_ffn;
  return Status::Ok();
}

Status ApplyFalcon(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's falcon graph: LayerNorms with biases, one attn_qkv (no biases anywhere in the layers), NeoX
  // RoPE, attention and an ungated GELU FFN in parallel from attn_norm's output; Falcon-40B (attn_norm_2):
  // the attention from attn_norm_2's, the FFN from attn_norm's.
  c.norm_bias = c.ungated_ffn = c.parallel_ffn = true;
  c.attn_norm_2 = c.parallel_ffn_norm = file.FindTensor("blk.0.attn_norm_2.weight") != nullptr;
  return Status::Ok();
}

Status ApplyNemotron(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's nemotron graph (Nemotron-4, Minitron, Nemotron-Mini): LayerNorms with biases (LayerNorm1p:
  // the converter adds the 1 to the weights), Q/K/V/O biases where the file has them, partial NeoX RoPE,
  // then an ungated FFN: ffn_up (+ bias) -> squared ReLU -> ffn_down (+ bias), biases where the file has
  // them.
  c.norm_bias = c.ungated_ffn = true;
  c.ffn_bias = file.FindTensor("blk.0.ffn_up.bias") != nullptr;
  c.ffn_activation = FfnActivation::kReluSquared;
  return Status::Ok();
}

Status ApplyOlmo(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's olmo graph (OLMo 1: OLMo-1B, 7B, 7B-0424 / 0724): llama's layers under LayerNorms with
  // neither weight nor bias (attn_norm, ffn_norm and output_norm have no tensors); where the file has
  // attention.clamp_kqv (0424 / 0724), Q, K and V clamped to it after their projections.
  c.norm_weights = false;
  return ReadClampKqv(file, c);
}

Status ApplyGpt2(const GgufFile&, ModelConfig& c) {
  // llama.cpp's gpt2 and starcoder graphs (GPT-2; StarCoder, SantaCoder, StarCoderBase: the same with
  // multi-query attention): token embeddings plus learned position embeddings (no RoPE), LayerNorms with
  // biases, one attn_qkv with its bias, attn_output bias, then an ungated GELU FFN with biases.
  c.norm_bias = c.ungated_ffn = c.ffn_bias = c.attn_output_bias = c.qkv_bias = true;
  c.learned_positions = true;
  for (LayerAttention& layer : c.layers) layer.rope = false;
  return Status::Ok();
}

Status ApplyCodeShell(const GgufFile&, ModelConfig& c) {
  // llama.cpp's codeshell graph (CodeShell-7B): gpt2's layers (LayerNorms with biases, one attn_qkv with its
  // bias, attn_output bias, an ungated GELU FFN with biases) with grouped-query attention and NeoX RoPE in
  // place of position embeddings; untied output.
  c.norm_bias = c.ungated_ffn = c.ffn_bias = c.attn_output_bias = c.qkv_bias = true;
  return Status::Ok();
}

Status ApplyBloom(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's bloom graph (BLOOM, BLOOMZ): token embeddings under a LayerNorm with its bias
  // (token_embd_norm), then gpt2's layers (LayerNorms with biases, one attn_qkv with its bias, attn_output
  // bias, an ungated GELU FFN with biases) with ALiBi in place of any position embedding.
  c.norm_bias = c.ungated_ffn = c.ffn_bias = c.attn_output_bias = c.qkv_bias = true;
  c.embedding_norm = true;
  return ReadAlibi(file, c, /*fallback=*/0);
}

Status ApplyMpt(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's mpt graph (MPT-7B, MPT-30B and their chat / instruct / storywriter variants): LayerNorms,
  // one attn_qkv clamped to attention.clamp_kqv where the file has it, ALiBi, an ungated GELU FFN; the
  // biases (norms, attn_qkv, attn_output, FFN) and learned position embeddings where the file has them.
  c.ungated_ffn = true;
  c.norm_bias = file.FindTensor("blk.0.attn_norm.bias") != nullptr;
  c.qkv_bias = file.FindTensor("blk.0.attn_qkv.bias") != nullptr;
  c.ffn_bias = file.FindTensor("blk.0.ffn_up.bias") != nullptr;
  c.learned_positions = file.FindTensor("position_embd.weight") != nullptr;
  LOCKSTEP_RETURN_IF_ERROR(RefuseTensors(file, c, {"blk.0.attn_q_norm.weight", "blk.0.ffn_act.scales"},
                                         "Q/K LayerNorms, AWQ activation scales"));
  LOCKSTEP_RETURN_IF_ERROR(ReadClampKqv(file, c));
  return ReadAlibi(file, c, /*fallback=*/0);
}

Status ApplyJais(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's jais graph (Jais-13B, Jais-30B and their chat variants): LayerNorms with biases, one
  // attn_qkv with its bias, attn_output bias, ALiBi (attention.max_alibi_bias, required), scores scaled by
  // 1 / head_dim (muP's, not 1 / sqrt(head_dim)), SwiGLU with biases on gate, up and down; untied output.
  // (The converter folds Jais's embedding and output scales into token_embd and output.)
  c.norm_bias = c.qkv_bias = c.attn_output_bias = c.ffn_bias = true;
  c.attention_scale = 1.0f / float(c.head_dim);
  return ReadAlibi(file, c, /*fallback=*/0);
}

Status ApplyOrion(const GgufFile&, ModelConfig& c) {
  // llama.cpp's orion graph: llama's layers (no biases on Q/K/V/O, SwiGLU) under LayerNorms with biases.
  c.norm_bias = true;
  return Status::Ok();
}

Status ApplyStableLm(const GgufFile& file, ModelConfig& c) {
  // llama.cpp's stablelm graph: LayerNorms with biases, partial NeoX RoPE, QKV bias by tensor (StableLM 2
  // 1.6B). StableLM 2 12B: per-head Q/K LayerNorms and, without ffn_norm, the FFN in parallel (their
  // tensors say so).
  c.norm_bias = true;
  c.qk_norm = c.qk_norm_per_head = file.FindTensor("blk.0.attn_q_norm.weight") != nullptr;
  c.parallel_ffn = file.FindTensor("blk.0.ffn_norm.weight") == nullptr;
  return Status::Ok();
}

}  // namespace lockstep
