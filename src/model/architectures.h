// The architectures lockstep runs (`general.architecture`) and the GGUF conventions of each, as
// llama.cpp's converter (convert_hf_to_gguf.py) writes them and its loader reads them:
//   llama   Llama 2/3.x, SmolLM2, Mistral (and Mistral Nemo: key_length != n_embd / n_head), with an
//           optional <arch>.attention.sliding_window that then applies to every layer (Mistral 7B v0.1)
//   qwen2   QKV bias
//   qwen3   per-head RMSNorm of Q and K before RoPE, no bias, head_dim from key_length
//   phi3    fused attn_qkv and ffn_up (gate rows first), partial rotary (rope.dimension_count), longrope
//           factors (rope_factors_long/short tensors, rope.scaling.attn_factor), sliding window on every
//           layer (Phi-3-mini-4k: 2047; the key is required, with llama.cpp's defaults for old files)
//   gemma   Gemma, CodeGemma: embeddings x sqrt(n_embd), GeGLU, heads from attention.key_length
//   gemma2  embeddings x sqrt(n_embd), GeGLU, post-norms, attention and final logit soft-capping, a sliding
//           window (default 4096) on the even layers
//   gemma3  as gemma2 without soft-capping, with Q/K norms and five local layers to one global
//           ((layer + 1) % 6 != 0 are local: windowed, RoPE base rope.freq_base_swa or 10000, unscaled)
//   qwen3moe  as qwen3, with a mixture of experts as the FFN of every layer (model/moe.h)
//   smollm3 llama's layers with no RoPE on every fourth one ((layer + 1) % 4 == 0: "NoPE")
//   granite llama's layers with embedding, residual, attention and logit multipliers (Granite 3.x)
//   olmo2   no pre-norms: RMSNorm of the whole Q and of the whole K after the projections, post-norms on the
//           attention and FFN outputs (as gemma2's), NeoX RoPE (OLMo 2)
//   granitemoe  granite with a mixture of experts as the FFN of every layer (Granite 3.x MoE; Mixtral's
//           routing: softmax, top expert_used_count renormalised)
//   qwen2moe  qwen2's attention (QKV bias) with, as every layer's FFN, routed experts whose weights are their
//           softmax probabilities NOT renormalised, plus one shared expert (ffn_{gate,up,down}_shexp,
//           expert_shared_feed_forward_length wide) scaled by sigmoid(ffn_gate_inp_shexp . x) (Qwen1.5-MoE,
//           Qwen2-57B-A14B)
//   gpt-oss  OpenAI gpt-oss: QKV and attn_output biases, a learned sink logit per head in every softmax
//           (attn_sinks), a window on the even layers, YaRN RoPE (rope.scaling.type yarn), and as every
//           layer's FFN experts with a biased router (the top expert_used_count logits, softmax over them)
//           and biased gate/up/down with the clamped SwiGLU (alpha 1.702, limit 7); the FFN's pre-norm is
//           named post_attention_norm
//   mistral3  Ministral 3, newer conversions of Mistral Small 3.x / Magistral / Devstral: llama's layers,
//           with YaRN whose magnitude follows rope.scaling.yarn_log_multiplier (transformers'
//           mscale_all_dim) and Llama 4's query temperature (attention.temperature_scale; QueryTemperature
//           in model/rope.h)
//   ernie4_5  ERNIE-4.5-0.3B (dense): llama's layers under another name (llama.cpp's graph for it is llama's)
//   glm4    GLM-4-0414 / GLM-Z1 (dense): QKV bias, a fused [gate | up] ffn_up (as phi3's), half of each
//           head rotated (rope.dimension_count, interleaved pairs), gemma2's post-norms on the attention
//           and FFN outputs (post_attention_norm, post_ffw_norm)
//   deepseek2  DeepSeek-V2/V3, Moonlight, GLM-4.7-Flash: multi-head latent attention (model/mla.h; heads'
//           keys of attention.key_length, values of attention.value_length, from a latent of
//           attention.kv_lora_rank by attn_kv_b, the KV cache holding the latent; the query through
//           attention.q_lora_rank when attn_q_a is present), YaRN as
//           ik_llama.cpp's graph; leading_dense_block_count dense layers, then routed experts scored by
//           softmax or sigmoid (expert_gating_func), chosen with the exp_probs_b bias, weighted by their
//           scores (expert_weights_norm, expert_weights_scale), plus expert_shared_count ungated shared ones
//   gemma4  Gemma 4's text model: gemma3's layers with per-layer head sizes, KV heads and FFN widths,
//           layers sharing earlier layers' K/V, V = K where attn_v is absent, V norms, layer output scales,
//           proportional RoPE on global layers, per-layer token inputs, and (26B-A4B) GeGLU experts beside
//           each layer's dense FFN (model/gemma4.h)
//   qwen35  Qwen3.5 (dense): Gated DeltaNet linear attention (model/delta_net.h; <arch>.ssm.*) on all layers
//           but every full_attention_interval-th, whose attention has Q/K norms, partial NeoX RoPE and a
//           sigmoid output gate (attn_q rows [query | gate] per head); the FFN's pre-norm is named
//           post_attention_norm; multi-token-prediction layers (nextn_predict_layers) are not run
//   ernie4_5-moe  ERNIE-4.5-21B-A3B / 300B-A47B: ernie4_5's layers, then (after leading dense layers)
//           softmax-scored experts chosen with exp_probs_b, renormalised, beside an ungated shared FFN
//   bailingmoe2  Ling 2.0 (Ling-mini-2.0, Ling-flash-2.0): llama's layers with a fused attn_qkv, per-head Q/K
//           norms, partial NeoX RoPE; after leading dense layers DeepSeek's group-limited experts and a
//           shared expert (expert_shared_feed_forward_length); nextn layers are not run
//   dots1   dots.llm1: qwen3's attention (per-head Q/K norms) with DeepSeek's experts (sigmoid scores chosen
//           with exp_probs_b, ungated shared experts, leading dense layers)
//   minimax-m2  MiniMax-M2: llama's layers with RMS norms of the whole Q and K projections, partial NeoX
//           RoPE, and as every layer's FFN experts with sigmoid scores chosen with exp_probs_b, renormalised
//   seed_oss  Seed-OSS-36B: llama's layers with QKV bias (by tensor), NeoX RoPE, the FFN's pre-norm named
//           post_attention_norm
//   command-r, cohere2  Command R / R+, Command R7B / A: LayerNorms without a bias, the FFN beside the
//           attention reading attn_norm's output, logits x logit_scale; Command R+: per-head Q/K LayerNorms;
//           cohere2: a window with RoPE on three layers of four, the fourth global without RoPE
//   internlm2  InternLM2 / 2.5: llama's layers (the converter splits wqkv into attn_q / attn_k / attn_v)
//   starcoder2  StarCoder2: LayerNorms with biases, biases on Q/K/V/O, NeoX RoPE, an ungated GELU FFN with
//           biases after the attention
//   phi2    Phi-2: LayerNorms with biases, attention and an ungated GELU FFN in parallel, biases on Q/K/V (or
//           the fused attn_qkv), attn_output, the FFN and the output, partial NeoX RoPE
//   gptneox Pythia, RedPajama-INCITE, Dolly v2: LayerNorms with biases, one attn_qkv with its bias,
//           attn_output bias, partial NeoX RoPE, an ungated GELU FFN with biases; with use_parallel_residual
//           (default true) beside the attention from its own ffn_norm of the layer's input, else after it
//   nemotron  Nemotron-4, Minitron, Nemotron-Mini: LayerNorms with biases, partial NeoX RoPE, an ungated
//           squared-ReLU FFN (biases on Q/K/V/O and the FFN where the file has them)
//   olmo    OLMo 1 (1B, 7B, 7B-0424 / 0724): llama's layers under LayerNorms without weights or biases; Q, K
//           and V clamped to attention.clamp_kqv where the file has it
//   chatglm ChatGLM3-6B, GLM-4-9B, CodeGeeX4: llama's layers with one attn_qkv and its bias, partial
//           interleaved RoPE, SwiGLU from one ffn_up [gate | up]
//   gpt2, starcoder  GPT-2; StarCoder, SantaCoder (the same with MQA): learned position embeddings (no
//           RoPE), LayerNorms with biases, one attn_qkv with its bias, attn_output bias, an ungated GELU FFN
//           with biases
//   codeshell  CodeShell-7B: gpt2's layers with grouped-query attention and NeoX RoPE in place of position
//           embeddings
//   bloom   BLOOM, BLOOMZ: gpt2's layers with token_embd_norm on the embeddings and ALiBi (a per-head linear
//           bias of the scores by distance, ModelConfig::max_alibi_bias) in place of position embeddings
//   mpt     MPT-7B, MPT-30B: LayerNorms, one attn_qkv clamped to attention.clamp_kqv where the file has
//           it, ALiBi, an ungated GELU FFN; biases and position_embd where the file has them
//   jais    Jais-13B, Jais-30B: LayerNorms with biases, one attn_qkv with its bias, attn_output bias, ALiBi,
//           scores scaled by 1 / head_dim, SwiGLU with biases on gate, up and down
//   qwen    Qwen (1.8B, 7B, 14B, 72B; the first Qwen): llama's layers with one attn_qkv and its bias, NeoX
//           RoPE; feed_forward_length is twice the FFN's width (Hugging Face's intermediate_size)
//   plamo   PLaMo-13B: llama's layers with the FFN beside the attention from attn_norm's output
//   refact  Refact-1.6B: llama's layers (multi-query) with ALiBi (max bias 8) in place of RoPE
//   baichuan  Baichuan-7B, Baichuan 2 7B: llama's layers; Baichuan-13B, Baichuan 2 13B (40 layers): the same
//           with ALiBi (max bias 8) in place of RoPE (Baichuan 2's NormHead: lm_head normalised before
//           conversion, as llama.cpp expects)
//   deci    Llama-3_1-Nemotron-51B, Llama-3_3-Nemotron-Super-49B, Nemotron Ultra, DeciLM-7B: llama's
//           layers pruned per layer (model/deci_config.h): each its own KV heads and FFN width, some
//           without attention, with "linear attention" (attn_output alone) or without an FFN
//   xverse  XVERSE (7B, 13B, 65B): llama's layers under its own name
//   orion   Orion-14B: llama's layers (no Q/K/V/O biases, SwiGLU) under LayerNorms with biases
//   stablelm  StableLM 2, StableLM-3B-4E1T: llama's gated FFN under LayerNorms with biases, partial NeoX
//           RoPE; StableLM 2 12B: per-head Q/K LayerNorms, the FFN beside the attention (no ffn_norm)
//   glm4moe GLM-4.5 / 4.5-Air / 4.6: llama's layers with QKV bias (Q/K norms where the file has them), half
//           of each head rotated (NeoX pairs), the FFN's pre-norm named post_attention_norm; after
//           leading_dense_block_count dense layers DeepSeek's experts (sigmoid scores chosen with
//           exp_probs_b, renormalised when expert_weights_norm, x expert_weights_scale; one ungated shared
//           expert); nextn layers are not run
//   qwen35moe  qwen35 with, as every layer's FFN, experts (softmax, the top expert_used_count
//           renormalised) and qwen2moe's shared expert scaled by sigmoid(ffn_gate_inp_shexp . x)
//   qwen3next  Qwen3-Next: qwen35moe's layers, the DeltaNet's input projections fused as llama.cpp's
//           converter keeps them (ssm_in: per key head [q | k | v | z] of its value heads; ssm_ba: per key
//           head [beta | alpha]) and each key head serving a group of consecutive value heads
//   olmoe   OLMoE-1B-7B: llama's layers with RMS norms of the whole Q and K, NeoX pairs, experts weighted
//           by their softmax over all experts (not renormalised)
//   deepseek  DeepSeek-MoE 16B: llama's attention; after leading dense layers DeepSeek's softmax-scored
//           experts (not renormalised) beside gated shared experts
//   bert    a bidirectional encoder for embeddings (bge, all-MiniLM, e5): absolute position and token-type
//           embeddings, LayerNorm post-norms, biases, GELU; model/bert_encoder.h runs it
//   nomic-bert  nomic-embed-text v1 / v1.5: bert's encoder with NeoX RoPE in place of position embeddings,
//           one attn_qkv, SwiGLU, no biases but the LayerNorms'
//   jina-bert-v2  jina-embeddings-v2 (small / base, en): bert's encoder with ALiBi both ways in place of
//           position embeddings, GeGLU (ffn_down's bias alone); Q/K LayerNorms and attn_norm_2 refused
//   qwen2vl, qwen3vl, qwen3vlmoe  the text of Qwen2-VL / Qwen2.5-VL / Qwen3-VL files: qwen2's, qwen3's and
//           qwen3moe's layers (TextArchitecture below); text only
// llama files with <arch>.expert_count > 0 (Mixtral) run their experts too. Other mixture-of-experts files
// (phimoe, llama4, ...: other routing) are refused with "unsupported: mixture
// of experts" and what they need. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// The names SupportedArchitectures() lists.
std::vector<std::string> ArchitectureNames();

// The architecture whose layers run a file of `file_architecture` (general.architecture): itself, or for
// the text part of a vision-language model (its images need a projector lockstep does not run) the text
// model's: qwen2vl -> qwen2, qwen3vl -> qwen3, qwen3vlmoe -> qwen3moe.
std::string TextArchitecture(const std::string& file_architecture);

// Whether `architecture` is a bidirectional encoder run by model/bert_encoder.h (bert, nomic-bert,
// jina-bert-v2).
bool IsBertEncoder(const std::string& architecture);

// Whether `architecture` (a supported one) normalizes with LayerNorm where the others use RMSNorm (command-r,
// cohere2, stablelm, phi2, starcoder2, gptneox, orion, falcon, nemotron, olmo, gpt2, starcoder): its files
// give
// attention.layer_norm_epsilon.
bool UsesLayerNorm(const std::string& architecture);

// Checks that `c.architecture` is supported (Unimplemented naming the supported ones, or the mixture-of-
// experts refusal) and sets its RoPE mode and norm kind (ModelConfig::layer_norm).
Status CheckArchitecture(const GgufFile& file, ModelConfig& c);

// Sets the architecture-difference fields of `c` (model/model_config.h), which already holds the common
// keys: norms, activation, attention scale, soft-capping, sliding windows and per-layer attention, RoPE of
// local layers, experts (each architecture's applier, named in its row of architectures.cc's table).
// Errors name the key that is missing or out of range.
Status ApplyArchitecture(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
