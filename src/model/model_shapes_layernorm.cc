// The LayerNorm families' shapes `make-model --shape` knows (model/model_builder.h; the others in
// model/model_shapes.cc and model/model_shapes_moe.cc): tiny ones that keep a real model's head counts,
// norms, biases and position scheme (partial RoPE, learned embeddings, ALiBi) at widths of tens.
#include <string>

#include "model/model_shapes_internal.h"

namespace lockstep {
namespace {

constexpr ShapeEntry kLayerNormShapes[] = {
    {"tiny-orion",
     [](ModelShape& s) {
       // Orion-14B: 40 heads and KV heads of 128, llama's layers (SwiGLU, no Q/K/V/O biases) under LayerNorms
       // with biases, untied output.
       s = Tiny(s.name, "orion");
       Widths(s, 128, 8, 8, 16, 384);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
     }},
    {"tiny-falcon",
     [](ModelShape& s) {
       // Falcon-7B: 71 heads of 64 and one KV head, LayerNorms with biases, one attn_qkv, NeoX RoPE,
       // attention and an ungated GELU FFN (4 x n_embd, no biases) in parallel from attn_norm; tied output.
       s = Tiny(s.name, "falcon");
       Widths(s, 128, 8, 1, 16, 512);
       s.n_layer = 4;
       s.n_ctx = 1024;
     }},
    {"tiny-falcon-40b",
     [](ModelShape& s) {  // Falcon-40B: 8 KV heads; the attention from attn_norm_2, the FFN from attn_norm
       s = *FindModelShape("tiny-falcon");
       s.name = "tiny-falcon-40b";
       s.n_head_kv = 2;
       s.attn_norm_2 = true;
       s.tied_embeddings = false;
     }},
    {"tiny-olmo",
     [](ModelShape& s) {
       // OLMo-1B: 16 heads of 128 (all KV), LayerNorms without weights or biases, llama's SwiGLU FFN,
       // interleaved RoPE pairs, tied output.
       s = Tiny(s.name, "olmo");
       Widths(s, 128, 8, 8, 16, 320);
       s.n_layer = 4;
       s.n_ctx = 1024;
     }},
    {"tiny-olmo-0424",
     [](ModelShape& s) {
       // OLMo-7B-0424: Q, K and V clamped (attention.clamp_kqv, 8 there; 0.5 here so that the tiny
       // projections reach it), untied output.
       s = *FindModelShape("tiny-olmo");
       s.name = "tiny-olmo-0424";
       s.clamp_kqv = 0.5f;
       s.tied_embeddings = false;
     }},
    {"tiny-gpt2",
     [](ModelShape& s) {
       // GPT-2 (124M): 12 heads of 64, learned position embeddings, LayerNorms with biases, one attn_qkv
       // with its bias, attn_output bias, an ungated GELU FFN (4 x n_embd) with biases; output.weight
       // (llama.cpp's converter writes the tied wte again under that name).
       s = Tiny(s.name, "gpt2");
       Widths(s, 128, 8, 8, 16, 512);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-starcoder",
     [](ModelShape& s) {  // StarCoder / SantaCoder: GPT-2's layers with one KV head (multi-query), tied
       s = *FindModelShape("tiny-gpt2");
       s.name = "tiny-starcoder";
       s.architecture = "starcoder";
       s.n_head_kv = 1;
       s.tied_embeddings = true;
     }},
    {"tiny-codeshell",
     [](ModelShape& s) {
       // CodeShell-7B: 32 heads of 128, 8 KV heads, NeoX RoPE over whole heads, LayerNorms with biases, one
       // attn_qkv with its bias, attn_output bias, an ungated GELU FFN (4 x n_embd) with biases; untied
       // output.
       s = Tiny(s.name, "codeshell");
       Widths(s, 128, 8, 2, 16, 512);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-bloom",
     [](ModelShape& s) {
       // BLOOM-560M: 16 heads of 64, ALiBi (max bias 8), token_embd_norm, LayerNorms with biases, one
       // attn_qkv with its bias, attn_output bias, an ungated GELU FFN (4 x n_embd) with biases;
       // output.weight (llama.cpp's converter writes the tied embeddings again under that name). Here 12
       // heads: not a power of 2, so the second series of slopes is used too.
       s = Tiny(s.name, "bloom");
       Widths(s, 192, 12, 12, 16, 768);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
       s.max_alibi_bias = 8;
     }},
    {"tiny-mpt",
     [](ModelShape& s) {
       // MPT-7B: 32 heads of 128, ALiBi (max bias 8), LayerNorms without biases, one attn_qkv, an ungated
       // GELU FFN (4 x n_embd), no biases anywhere, tied output; Q/K/V clamped (MPT-30B's clip_qkv: here
       // 0.5, so that the tiny projections reach it).
       s = Tiny(s.name, "mpt");
       Widths(s, 128, 8, 8, 16, 512);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.max_alibi_bias = 8;
       s.clamp_kqv = 0.5f;
     }},
    {"tiny-jais",
     [](ModelShape& s) {
       // Jais-13B: 40 heads of 128 (here 10: both series of ALiBi slopes, as 40), ALiBi (max bias 8),
       // LayerNorms with biases, one attn_qkv with its bias, attn_output bias, scores scaled by 1 / head_dim,
       // SwiGLU (n_ff 13653: ffn_down then stays f16 in quantized files) with biases on gate, up and down;
       // untied output.
       s = Tiny(s.name, "jais");
       Widths(s, 160, 10, 10, 16, 352);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
       s.max_alibi_bias = 8;
     }},
    {"tiny-nemotron",
     [](ModelShape& s) {
       // Nemotron-Mini-4B: 24 heads of 128 with half of each rotated (NeoX), 8 KV heads, LayerNorms with
       // biases, an ungated squared-ReLU FFN (3 x n_embd), no other biases; untied output.
       s = Tiny(s.name, "nemotron");
       Widths(s, 192, 12, 4, 16, 576);  // llama.cpp: n_head x head_dim = n_embd
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
     }},
    {"tiny-phi2",
     [](ModelShape& s) {
       // phi-2: 32 heads of 80 with 32 of their dims rotated (NeoX), LayerNorms with biases, attention and an
       // ungated GELU FFN in parallel, biases on Q/K/V, attn_output, the FFN and the output; untied output.
       s = Tiny(s.name, "phi2");
       Widths(s, 160, 8, 8, 20, 320);  // llama.cpp: n_head x head_dim = n_embd
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-phi2-qkv",
     [](ModelShape& s) {  // tiny-phi2 as older conversions write phi-2: one attn_qkv and its bias
       s = *FindModelShape("tiny-phi2");
       s.name = "tiny-phi2-qkv";
       s.fused_qkv = true;
     }},
    {"tiny-starcoder2",
     [](ModelShape& s) {
       // StarCoder2-3B: 24 heads of 128, 2 KV heads, LayerNorms with biases, biases on Q/K/V/O and the
       // ungated GELU FFN, NeoX RoPE (base ~1e6), tied output.
       s = Tiny(s.name, "starcoder2");
       Widths(s, 192, 12, 1, 16, 384);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 999999.4f;
       s.qkv_bias = true;
     }},
    {"tiny-gptneox",
     [](ModelShape& s) {
       // Pythia-160M: 12 heads of 64 with a quarter of each rotated (NeoX), LayerNorms with biases, one
       // attn_qkv with its bias, attention and an ungated GELU FFN (4 x n_embd) in parallel, each from its
       // own norm, biases on attn_output and the FFN; untied output.
       s = Tiny(s.name, "gptneox");
       Widths(s, 128, 8, 8, 16, 512);  // llama.cpp: n_head x head_dim = n_embd
       s.rope_dim = 4;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.parallel_ffn = true;
       s.tied_embeddings = false;
     }},
    {"tiny-gptneox-sequential",
     [](ModelShape& s) {  // tiny-gptneox with use_parallel_residual false: the FFN after the attention
       s = *FindModelShape("tiny-gptneox");
       s.name = "tiny-gptneox-sequential";
       s.parallel_ffn = false;
     }},
    {"tiny-stablelm2",
     [](ModelShape& s) {
       // StableLM 2 1.6B: 32 heads and KV heads, a quarter of each head rotated (NeoX), QKV bias, LayerNorms
       // with biases, untied output.
       s = Tiny(s.name, "stablelm");
       Widths(s, 128, 8, 8, 16, 256);  // llama.cpp: n_head x head_dim = n_embd
       s.rope_dim = 4;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-stablelm2-12b",
     [](ModelShape& s) {
       // StableLM 2 12B: 32 heads, 8 KV heads, per-head Q/K LayerNorms, the FFN beside the attention (no
       // ffn_norm), no QKV bias.
       s = Tiny(s.name, "stablelm");
       Widths(s, 128, 8, 2, 16, 256);
       s.rope_dim = 4;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
       s.qk_norm = true;
       s.parallel_ffn = true;
     }},
};

}  // namespace

std::span<const ShapeEntry> LayerNormShapes() { return kLayerNormShapes; }

}  // namespace lockstep
