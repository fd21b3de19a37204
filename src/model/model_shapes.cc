// The shapes `make-model --shape` knows (model/model_builder.h): the dense and the real ones here, the
// LayerNorm families' in model_shapes_layernorm.cc, the mixtures of experts in model_shapes_moe.cc. Tiny
// shapes keep a real model's head counts, GQA ratio, layer pattern and architecture features at widths of
// tens and windows of tens of positions (so tests reach past a window); real shapes are the published
// hyper-parameters.
#include <string>
#include <string_view>
#include <vector>

#include "model/model_builder.h"
#include "model/model_shapes_internal.h"

namespace lockstep {
namespace {

// A published model's hyper-parameters, every other field at its default. (A positional aggregate would do
// the same, but GCC's -Wmissing-field-initializers warns about each field it leaves out.)
ModelShape Published(const std::string& name, const std::string& architecture, int64_t n_embd,
                     int64_t n_layer, int64_t n_head, int64_t n_head_kv, int64_t n_ff, int64_t n_ctx,
                     float rope_freq_base, float rms_eps, bool qkv_bias, bool tied_embeddings) {
  ModelShape s;
  s.name = name;
  s.architecture = architecture;
  s.n_embd = n_embd;
  s.n_layer = n_layer;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.n_ff = n_ff;
  s.n_ctx = n_ctx;
  s.rope_freq_base = rope_freq_base;
  s.rms_eps = rms_eps;
  s.qkv_bias = qkv_bias;
  s.tied_embeddings = tied_embeddings;
  return s;
}

// Qwen3-0.6B: 16 heads, 8 KV heads, q_dim 2 x n_embd.
void TinyQwen3(ModelShape& s) {
  s = Tiny(s.name, "qwen3");
  Widths(s, 128, 16, 8, 16, 192);
  s.n_layer = 4;
  s.n_ctx = 1024;
  s.rope_freq_base = 1000000.0f;
  s.rms_eps = 1e-6f;
}

// bge-*-en-v1.5: tiny-bert's kind at its real size, 12 layers of 12 heads, n_ff 4 x n_embd.
void BgeEnglish(ModelShape& s, int64_t n_embd, int64_t head_dim) {
  const std::string name = s.name;
  s = *FindModelShape("tiny-bert");
  s.name = name;
  Widths(s, n_embd, 12, 12, head_dim, 4 * n_embd);
  s.n_layer = 12;
}

// The dense shapes and the real ones, in the order `make-model --help` lists them (the LayerNorm families'
// and the mixtures of experts follow them: model_shapes_layernorm.cc, model_shapes_moe.cc).
constexpr ShapeEntry kShapes[] = {
    {"tiny",
     [](ModelShape& s) {
       s.tied_embeddings = false;  // exercises output.weight
     }},
    {"tiny-qwen2",
     [](ModelShape& s) {
       s.architecture = "qwen2";
       s.qkv_bias = true;
       s.n_head_kv = 1;
       s.rope_freq_base = 1000000.0f;
       s.rms_eps = 1e-6f;
     }},
    {"tiny-256",
     [](ModelShape& s) {
       s = Published(s.name, "llama", 256, 2, 4, 2, 512, 256, 10000.0f, 1e-5f, false, false);
     }},
    {"tiny-smollm2",
     [](ModelShape& s) {  // SmolLM2-135M's widths (576: K-quant rows fall back to q5_0 / q5_1), 2 layers
       s = Published(s.name, "llama", 576, 2, 9, 3, 1536, 256, 10000.0f, 1e-5f, false, true);
     }},
    {"tiny-qwen3", TinyQwen3},
    {"tiny-qwen3-reranker",
     [](ModelShape& s) {
       // tiny-qwen3 as llama.cpp converts Qwen3-Reranker: a 2-row (yes, no) classifier head, rank pooling,
       // and Qwen3's yes/no prompt (shortened) as the rerank template.
       TinyQwen3(s);
       s.n_cls_out = 2;
       s.rerank_template =
           "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query. "
           "Answer \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Query>: {query}\n<Document>: "
           "{document}<|im_end|>\n<|im_start|>assistant\n";
     }},
    {"tiny-bert",
     [](ModelShape& s) {
       // bge-small-en-v1.5's kind (heads of 32, n_ff 4 x n_embd, 512 positions, LayerNorm eps 1e-12, CLS
       // pooling) at a third of its width and 3 layers; needs --vocab-from a WordPiece vocabulary.
       s = Tiny(s.name, "bert");
       Widths(s, 128, 4, 4, 32, 512);
       s.n_layer = 3;
       s.n_ctx = 512;
       s.rms_eps = 1e-12f;
     }},
    {"tiny-bert-reranker",
     [](ModelShape& s) {
       // tiny-bert as llama.cpp converts a BERT cross-encoder (ms-marco-MiniLM): cls (dense, tanh) and a
       // one-logit cls.output, rank pooling.
       s = *FindModelShape("tiny-bert");
       s.name = "tiny-bert-reranker";
       s.n_cls_out = 1;
     }},
    {"tiny-nomic-bert",
     [](ModelShape& s) {
       // nomic-embed-text-v1.5's kind (12 heads of 64, n_ff 4 x n_embd, NeoX RoPE base 1000, LayerNorm eps
       // 1e-12; its files pool by mean, this one by CLS as tiny-bert's) at a sixth of its width and 3
       // layers; needs --vocab-from a WordPiece vocabulary.
       s = Tiny(s.name, "nomic-bert");
       Widths(s, 128, 4, 4, 32, 512);
       s.n_layer = 3;
       s.n_ctx = 512;
       s.rope_freq_base = 1000.0f;
       s.rms_eps = 1e-12f;
     }},
    {"tiny-jina-bert",
     [](ModelShape& s) {
       // jina-embeddings-v2-small-en's kind (8 heads of 64, n_ff 4 x n_embd, ALiBi with max bias 8 -- no key,
       // as llama.cpp fixes it --, LayerNorm eps 1e-12; its files pool by mean, this one by CLS as
       // tiny-bert's) at a quarter of its width and 3 layers; needs --vocab-from a WordPiece vocabulary.
       s = Tiny(s.name, "jina-bert-v2");
       Widths(s, 128, 4, 4, 32, 512);
       s.n_layer = 3;
       s.n_ctx = 512;
       s.rms_eps = 1e-12f;
     }},
    {"tiny-gemma",
     [](ModelShape& s) {
       // Gemma 2B: 8 heads of 256 over n_embd 2048, one KV head, embeddings x sqrt(n_embd), GeGLU; tied.
       s = Tiny(s.name, "gemma");
       Widths(s, 64, 8, 1, 32, 128);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
     }},
    {"tiny-gemma2",
     [](ModelShape& s) {
       // Gemma 2 2B: 26 layers (llama.cpp tells the model size by them), 8 heads, 4 KV heads, windows on the
       // even layers. Soft-caps small enough to bite at these widths (the real ones: 50 and 30).
       s = Tiny(s.name, "gemma2");
       Widths(s, 64, 8, 4, 16, 128);
       s.n_layer = 26;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
       s.sliding_window = 40;
       s.attn_softcap = 0.5f;
       s.final_softcap = 2.0f;
     }},
    {"tiny-gemma3",
     [](ModelShape& s) {
       // Gemma 3 4B: 8 heads, 4 KV heads, five local layers to one global, linear RoPE scaling 8 on the
       // global layers only.
       s = Tiny(s.name, "gemma3");
       Widths(s, 64, 8, 4, 16, 128);
       s.n_layer = 12;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.rope_linear_factor = 8;
       s.rms_eps = 1e-6f;
       s.sliding_window = 40;
     }},
    {"tiny-gemma4",
     [](ModelShape& s) {
       // Gemma 4's features at tiny widths: E2B's plan of four local layers to one global, with its last
       // layers sharing K/V (their FFN twice as wide) and per-layer token inputs; 31B's fewer KV heads and
       // V = K on the global layers; global heads twice the local ones (512 / 256 in every Gemma 4).
       s = Tiny(s.name, "gemma4");
       Widths(s, 64, 8, 2, 32, 128);
       s.head_dim_local = 16;
       s.n_head_kv_global = 1;
       s.n_layer = 10;
       s.shared_kv_layers = 5;
       s.n_embd_per_layer = 32;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.rms_eps = 1e-6f;
       s.sliding_window = 40;
       s.final_softcap = 2.0f;
     }},
    {"tiny-phi3",
     [](ModelShape& s) {  // Phi-3-mini-4k: 32 heads, no GQA, a window on every layer
       s = Tiny(s.name, "phi3");
       Widths(s, 256, 32, 32, 8, 256);
       s.n_layer = 4;
       s.n_ctx = 4096;
       s.tied_embeddings = false;
       s.sliding_window = 40;
     }},
    {"tiny-phi3.5",
     [](ModelShape& s) {  // Phi-3.5-mini: longrope (long factors: n_ctx > original context)
       s = Tiny(s.name, "phi3");
       Widths(s, 256, 32, 32, 8, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.longrope_orig_ctx = 256;
       s.tied_embeddings = false;
       s.sliding_window = 262144;
     }},
    {"tiny-phi4-mini",
     [](ModelShape& s) {  // Phi-4-mini: 24 heads, 8 KV heads, 3/4 of each head rotated
       s = Tiny(s.name, "phi3");
       Widths(s, 384, 24, 8, 16, 256);
       s.rope_dim = 12;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.longrope_orig_ctx = 256;
       s.tied_embeddings = false;
       s.rope_freq_base = 250000.0f;
     }},
    {"tiny-nemo",
     [](ModelShape& s) {  // Mistral Nemo: 32 heads, 8 KV heads, q_dim (4096) != n_embd (5120)
       s = Tiny(s.name, "llama");
       Widths(s, 96, 32, 8, 8, 128);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
     }},
    {"tiny-qwen2.5vl",
     [](ModelShape& s) {  // Qwen2.5-VL-3B's text: qwen2's layers (QKV bias), 16 heads, 2 KV heads
       s = Tiny(s.name, "qwen2vl");
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.rope_freq_base = 1000000.0f;
     }},
    {"tiny-qwen3vl",
     [](ModelShape& s) {  // Qwen3-VL-8B's text: qwen3's layers (Q/K norms), 32 heads, 8 KV heads
       s = Tiny(s.name, "qwen3vl");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 5000000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
     }},
    {"tiny-qwen35",
     [](ModelShape& s) {
       // Qwen3.5-9B: 16 heads, 4 KV heads, a quarter of each head rotated, three Gated DeltaNet layers to
       // one attention layer, twice as many value heads (32) as key heads (16) in the DeltaNet (here 4 and
       // 2).
       s = Tiny(s.name, "qwen35");
       Widths(s, 256, 16, 4, 32, 512);
       s.rope_dim = 8;
       s.n_layer = 8;
       s.n_ctx = 1024;
       s.rope_freq_base = 10000000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
       // DeltaNet heads of 64: ik_llama.cpp's delta rule reads a multi-token batch right only for heads of
       // 64 and 128 (its generic fallback indexes the permuted q/k/gate views as if contiguous).
       s.ssm_k_heads = 2;
       s.ssm_v_heads = 4;
       s.ssm_head_dim = 64;
     }},
    {"tiny-seed-oss",
     [](ModelShape& s) {
       // Seed-OSS-36B: 80 heads of 128 to 8 KV heads (q_dim twice n_embd), QKV bias (here 16 heads of 16 to
       // 2).
       s = Tiny(s.name, "seed_oss");
       Widths(s, 128, 16, 2, 16, 256);
       s.qkv_bias = true;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 10000000.0f;
       s.tied_embeddings = false;
     }},
    {"tiny-ministral3",
     [](ModelShape& s) {
       // Ministral 3 8B: 32 heads, 8 KV heads, YaRN factor 16 without its magnitude (yarn_log_multiplier 1)
       // and Llama 4's query temperature 0.1; an original context of 32 so that the temperature steps
       // (and YaRN interpolates) within a test's positions.
       s = Tiny(s.name, "mistral3");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.yarn_factor = 16;
       s.yarn_original_ctx = 32;
       s.yarn_log_mul = 1;
       s.attn_temperature_scale = 0.1f;
       s.tied_embeddings = false;
     }},
    {"tiny-mistral3",
     [](ModelShape& s) {  // Mistral Small 3.2 as newer llama.cpp converts it: llama's layers, no YaRN
       s = Tiny(s.name, "mistral3");
       Widths(s, 256, 16, 4, 16, 512);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
     }},
    {"tiny-ernie4.5",
     [](ModelShape& s) {  // ERNIE-4.5-0.3B: 16 heads, 2 KV heads, tied embeddings, RoPE base 500000
       s = Tiny(s.name, "ernie4_5");
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 500000.0f;
     }},
    {"tiny-glm4",
     [](ModelShape& s) {
       // GLM-4-9B-0414: 32 heads, 2 KV heads, half of each head rotated, QKV bias, [gate | up], post-norms.
       s = Tiny(s.name, "glm4");
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-cohere2",
     [](ModelShape& s) {
       // Command R7B: 32 heads, 8 KV heads, LayerNorms, parallel attention and FFN, a window with RoPE on
       // three layers of four and global layers without, logits x 0.25.
       s = Tiny(s.name, "cohere2");
       Widths(s, 128, 8, 2, 16, 256);
       s.n_layer = 8;
       s.n_ctx = 1024;
       s.sliding_window = 24;
       s.rope_freq_base = 50000.0f;
       s.logit_scale = 0.25f;
     }},
    {"tiny-command-r",
     [](ModelShape& s) {  // Command R (08-2024): 64 heads, 8 KV heads, logits x 0.0625
       s = Tiny(s.name, "command-r");
       Widths(s, 128, 8, 1, 16, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 4000000.0f;
       s.logit_scale = 0.0625f;
     }},
    {"tiny-command-r-plus",
     [](ModelShape& s) {
       // Command R+: 96 heads, 8 KV heads, per-head LayerNorms of Q and K (llama.cpp reads them in files of
       // 64 layers or more: Command R+'s 64).
       s = Tiny(s.name, "command-r");
       Widths(s, 192, 12, 1, 16, 384);  // llama.cpp: n_head x head_dim = n_embd
       s.n_layer = 64;
       s.n_ctx = 1024;
       s.rope_freq_base = 75000000.0f;
       s.logit_scale = 0.8333333f;
       s.qk_norm = true;
     }},
    {"tiny-internlm2",
     [](ModelShape& s) {
       // InternLM2.5-7B: 32 heads, 8 KV heads, llama's layers (llama.cpp's converter splits its wqkv into
       // attn_q / attn_k / attn_v), untied output.
       s = Tiny(s.name, "internlm2");
       Widths(s, 128, 8, 2, 16, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
     }},
    {"tiny-xverse",
     [](ModelShape&
            s) {  // XVERSE-7B: 32 heads and KV heads, llama's layers under its own name, untied output
       s = Tiny(s.name, "xverse");
       Widths(s, 128, 8, 8, 16, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
     }},
    {"tiny-qwen",
     [](ModelShape& s) {
       // Qwen-7B: 32 heads of 128, llama's layers with one attn_qkv and its bias, NeoX RoPE, untied output;
       // feed_forward_length written as twice n_ff (as the converter writes it).
       s = Tiny(s.name, "qwen");
       Widths(s, 128, 8, 8, 16, 352);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-plamo",
     [](ModelShape& s) {
       // PLaMo-13B: 40 heads of 128 sharing 5 KV heads (here 8 sharing 1), llama's layers with the FFN beside
       // the attention (no ffn_norm), untied output.
       s = Tiny(s.name, "plamo");
       Widths(s, 128, 8, 1, 16, 352);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
       s.parallel_ffn = true;
       s.tied_embeddings = false;
     }},
    {"tiny-refact",
     [](ModelShape& s) {
       // Refact-1.6B: 32 heads of 64 and one KV head, llama's layers with ALiBi (max bias 8: no key, as
       // llama.cpp's converter writes it), untied output.
       s = Tiny(s.name, "refact");
       Widths(s, 128, 8, 1, 16, 352);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
     }},
    {"tiny-baichuan",
     [](ModelShape& s) {
       // Baichuan-7B / Baichuan 2 7B: 32 layers of 32 heads (llama.cpp tells the 7B's RoPE from the 13B's
       // ALiBi by those 32 layers), llama's layers, untied output.
       s = Tiny(s.name, "baichuan");
       Widths(s, 64, 4, 4, 16, 160);
       s.n_layer = 32;
       s.n_ctx = 1024;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
     }},
    {"tiny-baichuan-13b",
     [](ModelShape& s) {  // Baichuan-13B / Baichuan 2 13B: tiny-baichuan's 40-layer twin, hence ALiBi
       s = *FindModelShape("tiny-baichuan");
       s.name = "tiny-baichuan-13b";
       s.n_layer = 40;
     }},
    {"tiny-chatglm",
     [](ModelShape& s) {
       // GLM-4-9B: 32 heads of 128, 2 KV heads, interleaved RoPE over half of each head, one attn_qkv with
       // its bias, SwiGLU from one ffn_up [gate | up], untied output.
       s = Tiny(s.name, "chatglm");
       Widths(s, 128, 8, 2, 16, 320);
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.tied_embeddings = false;
     }},
    {"tiny-deci",
     [](ModelShape& s) {
       // Llama-3_1-Nemotron-51B: llama's layers pruned per layer: full attention with 2 KV heads, "linear
       // attention" (attn_output alone), no attention, full attention with 1 KV head; FFN widths differ.
       s = Tiny(s.name, "deci");
       Widths(s, 128, 8, 2, 16, 384);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
       s.layer_heads = {8, 8, 0, 8};
       s.layer_kv_heads = {2, 0, 0, 1};
       s.layer_ff = {256, 384, 128, 320};
     }},
    {"tiny-deci-ultra",
     [](ModelShape& s) {
       // Llama-3_1-Nemotron-Ultra-253B's layers too: attention without an FFN (feed_forward_length 0), and
       // a layer with neither.
       s = *FindModelShape("tiny-deci");
       s.name = "tiny-deci-ultra";
       s.n_layer = 6;
       s.layer_heads = {8, 8, 0, 8, 8, 0};
       s.layer_kv_heads = {2, 0, 0, 1, 2, 0};
       s.layer_ff = {256, 384, 128, 0, 320, 0};
     }},
    {"tiny-smollm3",
     [](ModelShape& s) {  // SmolLM3-3B: 16 heads, 4 KV heads, 36 layers of which every fourth has no RoPE
       s = Tiny(s.name, "smollm3");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 8;
       s.n_ctx = 1024;
       s.rope_freq_base = 5000000.0f;
       s.rms_eps = 1e-6f;
     }},
    {"tiny-granite",
     [](ModelShape& s) {  // Granite 3.3 2B: 32 heads, 8 KV heads, and its four multipliers
       s = Tiny(s.name, "granite");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.granite_embedding_scale = 12.0f;
       s.granite_residual_scale = 0.22f;
       s.granite_attention_scale = 0.015625f;
       s.logit_scale = 8.0f;
     }},
    {"tiny-minicpm",
     [](ModelShape& s) {
       // MiniCPM-2B: 36 heads of 64 and as many KV heads, 40 layers; scale_emb 12, scale_depth 1.4 (residual
       // scale 1.4 / sqrt(40)), logits / (2304 / 256); tied embeddings.
       s = Tiny(s.name, "minicpm");
       Widths(s, 256, 16, 16, 16, 640);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.granite_embedding_scale = 12.0f;
       s.granite_residual_scale = 0.2213594f;
       s.logit_scale = 9.0f;
     }},
    {"tiny-exaone",
     [](ModelShape& s) {
       // EXAONE 3.5 2.4B: 32 heads of 80, 8 KV heads, llama's layers with NeoX RoPE (base 1e6); untied
       // output (the 7.8B's and 32B's; llama.cpp c392e50 requires output.weight).
       s = Tiny(s.name, "exaone");
       Widths(s, 128, 8, 2, 16, 384);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
     }},
    {"tiny-olmo2",
     [](ModelShape& s) {  // OLMo 2 1B: 16 heads, as many KV heads, its own norms (model/architectures.h)
       s = Tiny(s.name, "olmo2");
       Widths(s, 256, 16, 16, 16, 512);  // heads of 16: see model_shapes_moe.cc's TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 500000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
     }},
    {"tiny-mistral-swa",
     [](ModelShape& s) {  // Mistral 7B v0.1: 32 heads, 8 KV heads, a window on every layer
       s = Tiny(s.name, "llama");
       Widths(s, 256, 32, 8, 8, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
       s.sliding_window = 40;
     }},
    {"small-qwen35",
     [](ModelShape& s) {
       // tiny-qwen35 with Qwen3.5-9B's DeltaNet heads (16 key heads, 32 value heads, of 128) at a quarter of
       // its width, for benchmarks of the recurrence (bench/decode_bench.cc --recurrence-level).
       s = *FindModelShape("tiny-qwen35");
       s.name = "small-qwen35";
       Widths(s, 1024, 8, 2, 128, 3072);
       s.rope_dim = 32;
       s.ssm_k_heads = 16;
       s.ssm_v_heads = 32;
       s.ssm_head_dim = 128;
     }},
    {"stories15m",
     [](ModelShape& s) {
       s = Published(s.name, "llama", 288, 6, 6, 6, 768, 256, 10000.0f, 1e-5f, false, true);
     }},
    {"smollm2-135m",
     [](ModelShape& s) {
       s = Published(s.name, "llama", 576, 30, 9, 3, 1536, 2048, 100000.0f, 1e-5f, false, true);
     }},
    {"qwen2-0.5b",
     [](ModelShape& s) {
       s = Published(s.name, "qwen2", 896, 24, 14, 2, 4864, 32768, 1000000.0f, 1e-6f, true, true);
     }},
    {"llama-1b",
     [](ModelShape& s) {
       s = Published(s.name, "llama", 2048, 16, 32, 8, 8192, 131072, 500000.0f, 1e-5f, false, true);
       s.llama3_factor = 32;
       s.llama3_low_freq_factor = 1;
       s.llama3_high_freq_factor = 4;
       s.llama3_original_ctx = 8192;
     }},
    {"qwen3-0.6b",
     [](ModelShape& s) {
       s = Published(s.name, "qwen3", 1024, 28, 16, 8, 3072, 40960, 1000000.0f, 1e-6f, false, true);
       s.head_dim = 128;
     }},
    {"gemma2-2b",
     [](ModelShape& s) {
       s = Published(s.name, "gemma2", 2304, 26, 8, 4, 9216, 8192, 10000.0f, 1e-6f, false, true);
       s.head_dim = 256;
       s.sliding_window = 4096;
       s.attn_softcap = 50;
       s.final_softcap = 30;
     }},
    // bge-small-en-v1.5 and bge-base-en-v1.5 (BERT, 33 M / 110 M parameters; --vocab-from a WordPiece
    // vocabulary).
    {"bge-small-en", [](ModelShape& s) { BgeEnglish(s, 384, 32); }},
    {"bge-base-en", [](ModelShape& s) { BgeEnglish(s, 768, 64); }},
    {"gemma3-1b",
     [](ModelShape& s) {
       s = Published(s.name, "gemma3", 1152, 26, 4, 1, 6912, 32768, 1000000.0f, 1e-6f, false, true);
       s.head_dim = 256;
       s.sliding_window = 512;
     }},
};

}  // namespace

std::vector<std::string> ModelShapeNames() {
  std::vector<std::string> names;
  for (const ShapeEntry& e : kShapes) names.emplace_back(e.name);
  for (const ShapeEntry& e : LayerNormShapes()) names.emplace_back(e.name);
  for (const ShapeEntry& e : MixtureOfExpertsShapes()) names.emplace_back(e.name);
  return names;
}

Result<ModelShape> FindModelShape(const std::string& name) {
  for (std::span<const ShapeEntry> table :
       {std::span<const ShapeEntry>(kShapes), LayerNormShapes(), MixtureOfExpertsShapes()}) {
    for (const ShapeEntry& e : table) {
      if (e.name != name) continue;
      ModelShape s;
      s.name = name;
      e.set(s);
      return s;
    }
  }
  std::string list;
  for (const std::string& n : ModelShapeNames()) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown model shape '" + name + "'; known: " + list);
}

}  // namespace lockstep
