// The shapes `make-model --shape` knows (model/model_builder.h). Tiny shapes keep a real model's head counts,
// GQA ratio, layer pattern and architecture features at widths of tens and windows of tens of positions (so
// tests reach past a window); real shapes are the published hyper-parameters.
#include <string>
#include <string_view>
#include <vector>

#include "model/model_builder.h"

namespace lockstep {
namespace {

ModelShape Tiny(const std::string& name, const std::string& architecture) {
  ModelShape s;
  s.name = name;
  s.architecture = architecture;
  s.random_norms = true;
  s.weight_std = 0.05f;
  s.ascii_vocabulary = true;
  return s;
}

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

// Sets the widths: heads of head_dim, n_embd (may differ from n_head * head_dim), n_ff.
void Widths(ModelShape& s, int64_t n_embd, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
            int64_t n_ff) {
  s.n_embd = n_embd;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.head_dim = head_dim;
  s.n_ff = n_ff;
}

// A mixture of experts: n_expert experts of n_ff_expert, n_expert_used of them per token.
void Experts(ModelShape& s, int64_t n_expert, int64_t n_expert_used, int64_t n_ff_expert) {
  s.n_expert = n_expert;
  s.n_expert_used = n_expert_used;
  s.n_ff_expert = n_ff_expert;
}

// GLM-4.5's and dots.llm1's routing (DeepSeek-V3's): a first dense layer, sigmoid scores chosen with an
// exp_probs_b bias, renormalised x 2.5, beside `shared` ungated shared experts.
void SigmoidRoutedExperts(ModelShape& s, int64_t shared) {
  s.n_layer_dense_lead = 1;
  s.n_expert_shared = shared;
  s.expert_gating = 2;
  s.expert_weights_norm = true;
  s.expert_weights_scale = 2.5f;
  s.selection_bias_std = 0.05f;
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

// Qwen3-30B-A3B: 32 heads, 4 KV heads, q_dim 2 x n_embd, 128 experts of which 8 are used, experts 1/8 as wide
// as the dense feed_forward_length the file also carries. Heads of 16 (ik_llama.cpp's non-flash attention,
// which scripts/compare_peer.py uses, is wrong for heads of 8).
void TinyQwen3Moe(ModelShape& s) {
  s = Tiny(s.name, "qwen3moe");
  Widths(s, 256, 32, 4, 16, 512);
  s.n_layer = 4;
  s.n_ctx = 1024;
  s.rope_freq_base = 1000000.0f;
  s.rms_eps = 1e-6f;
  Experts(s, 8, 2, 64);
}

// Qwen1.5-MoE-A2.7B: 16 heads, as many KV heads, QKV bias, 4 of 60 experts (here 16) 1408 wide, a shared
// expert as wide as feed_forward_length (5632, 4 x an expert), untied output (llama.cpp requires
// output.weight).
void TinyQwen2Moe(ModelShape& s) {
  s = Tiny(s.name, "qwen2moe");
  Widths(s, 256, 16, 16, 16, 256);  // heads of 16: see TinyQwen3Moe
  s.n_layer = 4;
  s.n_ctx = 1024;
  s.rope_freq_base = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.qkv_bias = true;
  s.tied_embeddings = false;
  Experts(s, 16, 4, 64);
  s.n_ff_shared = 256;
}

// gpt-oss-20b: 64 heads of 64, 8 KV heads (q_dim wider than n_embd 2880), QKV and output biases, a sink per
// head, a window of 128 on the even layers, YaRN x32 from 4096, base 150000, 4 of 32 experts as wide as
// n_embd, untied output. Here heads of 16 (see TinyQwen3Moe), 4 of 16 experts, a window of 40.
void TinyGptOss(ModelShape& s) {
  s = Tiny(s.name, "gpt-oss");
  Widths(s, 128, 64, 8, 16, 128);
  s.n_layer = 4;
  s.n_ctx = 1024;
  s.rope_freq_base = 150000.0f;
  s.qkv_bias = true;
  s.tied_embeddings = false;
  s.sliding_window = 40;
  s.yarn_factor = 32;
  s.yarn_original_ctx = 4096;
  Experts(s, 16, 4, 128);
}

// DeepSeek-V2-Lite: 16 heads, keys of 128 + 64 rotated dims (the rotated ones shared by the heads), values
// of 128, a latent of 512, no query LoRA, 27 layers (ik_llama.cpp tells V2-Lite, which has no
// attention.q_lora_rank, by them), the first dense, then 6 of 64 experts of 1408 and 2 shared ones, softmax
// routing whose weights are not renormalised. Here 8 heads of 32 + 16, values of 32, a latent of 64, 4 of
// 16 experts of 32.
void TinyDeepseek2(ModelShape& s) {
  s = Tiny(s.name, "deepseek2");
  Widths(s, 128, 8, 8, 48, 128);
  s.rope_dim = 16;
  s.value_dim = 32;
  s.kv_lora_rank = 64;
  s.n_layer = 27;
  s.n_ctx = 1024;
  s.rms_eps = 1e-6f;
  s.tied_embeddings = false;
  Experts(s, 16, 4, 32);
  s.n_layer_dense_lead = 1;
  s.n_expert_shared = 2;
  s.weight_std = 0.035f;
}

// DeepSeek-V3 / R1: 128 heads of 128 + 64 rotated dims, values of 128, a query LoRA of 1536, a latent of 512,
// 61 layers of which 3 dense, then 8 of 256 experts of 2048 and one shared, sigmoid scores chosen with the
// exp_probs_b bias, renormalised and x 2.5, YaRN x40 from 4096 (yarn_log_multiplier 0.1 x mscale_all_dim 1).
// Here tiny-deepseek2's widths with a query LoRA of 64, 4 layers, one dense, 4 of 16 experts and one
// shared, YaRN x16 from 32 (so that it acts within the tests' positions). Its experts are not grouped
// (tiny-deepseek3-grouped's are): neither peer groups deepseek2's experts, and this one is ik_llama.cpp's.
void TinyDeepseek3(ModelShape& s) {
  TinyDeepseek2(s);
  s.n_layer = 4;
  s.q_lora_rank = 64;
  s.n_expert_shared = 1;
  s.expert_gating = 2;
  s.expert_weights_norm = true;
  s.expert_weights_scale = 2.5f;
  s.selection_bias_std = 0.05f;
  s.yarn_factor = 16;
  s.yarn_original_ctx = 32;
  s.yarn_log_mul = 0.1f;
}

// V3's expert groups (256 experts in 8 groups of 32, the 8 chosen from the best 4 groups by the sum of
// each group's two largest biased scores) at tiny-deepseek3's widths: 32 experts in 8 groups of 4, 8 chosen
// from the best 4 groups.
void TinyDeepseek3Grouped(ModelShape& s) {
  TinyDeepseek3(s);
  Experts(s, 32, 8, 32);
  s.expert_groups = 8;
  s.expert_groups_used = 4;
}

// bge-*-en-v1.5: tiny-bert's kind at its real size, 12 layers of 12 heads, n_ff 4 x n_embd.
void BgeEnglish(ModelShape& s, int64_t n_embd, int64_t head_dim) {
  const std::string name = s.name;
  s = *FindModelShape("tiny-bert");
  s.name = name;
  Widths(s, n_embd, 12, 12, head_dim, 4 * n_embd);
  s.n_layer = 12;
}

// Every shape, in the order `make-model --help` lists them: its name and what it sets on top of the defaults
// (ModelShape's member initialisers; `s.name` is already the shape's name).
struct ShapeEntry {
  std::string_view name;
  void (*set)(ModelShape& s);
};
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
    {"tiny-gemma4moe",
     [](ModelShape& s) {
       // Gemma 4 26B-A4B's plan at tiny-gemma4's widths: five local layers to one global, V = K and fewer KV
       // heads on the global ones, no shared K/V and no per-layer inputs; on every layer 8 of 128 experts
       // (here 2 of 8) beside the dense FFN. Router weights wide enough that its 1 / sqrt(n_embd) input
       // still separates the experts.
       s = *FindModelShape("tiny-gemma4");
       s.name = "tiny-gemma4moe";
       s.gemma4_global_every = 6;
       s.n_layer = 6;
       s.shared_kv_layers = 0;
       s.n_embd_per_layer = 0;
       Experts(s, 8, 2, 32);
       s.router_std = 3.0f;
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
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.qkv_bias = true;
       s.rope_freq_base = 1000000.0f;
     }},
    {"tiny-qwen3vl",
     [](ModelShape& s) {  // Qwen3-VL-8B's text: qwen3's layers (Q/K norms), 32 heads, 8 KV heads
       s = Tiny(s.name, "qwen3vl");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see TinyQwen3Moe
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
    {"tiny-qwen35moe",
     [](ModelShape& s) {
       // Qwen3.5-35B-A3B's plan at tiny-qwen35's widths: 8 of 256 experts (here 2 of 8) 512 wide, and a
       // shared expert as wide.
       s = *FindModelShape("tiny-qwen35");
       s.name = "tiny-qwen35moe";
       s.architecture = "qwen35moe";
       Experts(s, 8, 2, 64);
       s.n_ff_shared = 64;
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
    {"tiny-minimax-m2",
     [](ModelShape& s) {
       // MiniMax-M2's plan at tiny widths: 48 heads of 128 to 8 KV heads (here 12 of 16 to 2), half of each
       // head rotated, whole-projection Q/K norms, 8 of 256 experts (here 2 of 8) with sigmoid scores chosen
       // with exp_probs_b.
       // Its files' feed_forward_length is the experts' width (llama.cpp sizes the expert tensors by it).
       s = Tiny(s.name, "minimax-m2");
       Widths(s, 128, 12, 2, 16, 32);
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 5000000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
       Experts(s, 8, 2, 32);
       s.expert_gating = 2;
       s.selection_bias_std = 0.05f;
     }},
    {"tiny-glm4moe",
     [](ModelShape& s) {
       // GLM-4.5-Air's plan at tiny widths: 96 heads of 128 to 8 KV heads (here 12 of 16 to 2), QKV bias,
       // half of each head rotated, a first dense layer, then 8 of 128 experts (here 2 of 8) with sigmoid
       // scores chosen with exp_probs_b and one shared expert; GLM-4.6's scale 2.5 on the weights.
       s = Tiny(s.name, "glm4moe");
       Widths(s, 192, 12, 2, 16, 256);
       s.rope_dim = 8;
       s.qkv_bias = true;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
       Experts(s, 8, 2, 32);
       SigmoidRoutedExperts(s, /*shared=*/1);
     }},
    {"tiny-glm4.6",
     [](ModelShape& s) {
       // tiny-glm4moe with GLM-4.5's and GLM-4.6's per-head Q/K norms (Air has none).
       s = *FindModelShape("tiny-glm4moe");
       s.name = "tiny-glm4.6";
       s.qk_norm = true;
     }},
    {"tiny-qwen3next",
     [](ModelShape& s) {
       // Qwen3-Next-80B-A3B's plan at tiny-qwen35's widths: 10 of 512 experts (here 2 of 8) 512 wide and a
       // shared expert as wide; the DeltaNet's projections fused per key head (ssm_in, ssm_ba) and its 32
       // value heads grouped by its 16 key heads (here 4 and 2, so that grouping and qwen35's tiling differ).
       s = *FindModelShape("tiny-qwen35moe");
       s.name = "tiny-qwen3next";
       s.architecture = "qwen3next";
     }},
    {"tiny-ministral3",
     [](ModelShape& s) {
       // Ministral 3 8B: 32 heads, 8 KV heads, YaRN factor 16 without its magnitude (yarn_log_multiplier 1)
       // and Llama 4's query temperature 0.1; an original context of 32 so that the temperature steps
       // (and YaRN interpolates) within a test's positions.
       s = Tiny(s.name, "mistral3");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see TinyQwen3Moe
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
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 500000.0f;
     }},
    {"tiny-ernie4.5-moe",
     [](ModelShape& s) {
       // ERNIE-4.5-21B-A3B's plan at tiny-ernie4.5's widths: a first dense layer, then 6 of 64 experts (here
       // 2 of 8) scored by softmax and chosen with exp_probs_b, beside two shared experts (one FFN twice an
       // expert's width).
       s = *FindModelShape("tiny-ernie4.5");
       s.name = "tiny-ernie4.5-moe";
       s.architecture = "ernie4_5-moe";
       s.tied_embeddings = false;
       Experts(s, 8, 2, 32);
       s.n_layer_dense_lead = 1;
       s.n_expert_shared = 2;
       s.selection_bias_std = 0.05f;
     }},
    {"tiny-dots1",
     [](ModelShape& s) {
       // dots.llm1's plan at tiny widths: 32 heads of 128 (here 8 of 16), per-head Q/K norms, a first dense
       // layer, then 6 of 128 experts (here 2 of 8) with sigmoid scores chosen with exp_probs_b,
       // renormalised x 2.5, beside 2 shared experts.
       s = Tiny(s.name, "dots1");
       Widths(s, 128, 8, 8, 16, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 10000000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
       Experts(s, 8, 2, 32);
       SigmoidRoutedExperts(s, /*shared=*/2);
     }},
    {"tiny-bailingmoe2",
     [](ModelShape& s) {
       // Ling-mini-2.0's plan at tiny widths: 16 heads of 128 to 4 KV heads (here 8 of 16 to 2) through one
       // attn_qkv, per-head Q/K norms, half of each head rotated, a first dense layer, then 8 of 256 experts
       // in 8 groups, 4 used (here 4 of 32 in 8 groups of 4, 4 used), sigmoid with exp_probs_b, x 2.5, and a
       // shared expert.
       s = Tiny(s.name, "bailingmoe2");
       Widths(s, 128, 8, 2, 16, 256);
       s.rope_dim = 8;
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 600000.0f;
       s.rms_eps = 1e-6f;
       s.tied_embeddings = false;
       Experts(s, 32, 4, 32);
       SigmoidRoutedExperts(s, /*shared=*/1);
       s.expert_groups = 8;
       s.expert_groups_used = 4;
     }},
    {"tiny-glm4",
     [](ModelShape& s) {
       // GLM-4-9B-0414: 32 heads, 2 KV heads, half of each head rotated, QKV bias, [gate | up], post-norms.
       s = Tiny(s.name, "glm4");
       Widths(s, 256, 16, 2, 16, 512);  // heads of 16: see TinyQwen3Moe
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
    {"tiny-smollm3",
     [](ModelShape& s) {  // SmolLM3-3B: 16 heads, 4 KV heads, 36 layers of which every fourth has no RoPE
       s = Tiny(s.name, "smollm3");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see TinyQwen3Moe
       s.n_layer = 8;
       s.n_ctx = 1024;
       s.rope_freq_base = 5000000.0f;
       s.rms_eps = 1e-6f;
     }},
    {"tiny-granite",
     [](ModelShape& s) {  // Granite 3.3 2B: 32 heads, 8 KV heads, and its four multipliers
       s = Tiny(s.name, "granite");
       Widths(s, 256, 16, 4, 16, 512);  // heads of 16: see TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.granite_embedding_scale = 12.0f;
       s.granite_residual_scale = 0.22f;
       s.granite_attention_scale = 0.015625f;
       s.logit_scale = 8.0f;
     }},
    {"tiny-granitemoe",
     [](ModelShape& s) {  // Granite 3.1 MoE 1B-A400M: 16 heads, 8 KV heads, 8 of 32 experts, the multipliers
       s = Tiny(s.name, "granitemoe");
       Widths(s, 256, 16, 8, 16, 64);  // heads of 16: see TinyQwen3Moe
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.n_expert = 8;
       s.n_expert_used = 4;
       s.granite_embedding_scale = 12.0f;
       s.granite_residual_scale = 0.22f;
       s.granite_attention_scale = 0.0078125f;
       s.logit_scale = 6.0f;
     }},
    {"tiny-olmo2",
     [](ModelShape& s) {  // OLMo 2 1B: 16 heads, as many KV heads, its own norms (model/architectures.h)
       s = Tiny(s.name, "olmo2");
       Widths(s, 256, 16, 16, 16, 512);  // heads of 16: see TinyQwen3Moe
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
    {"tiny-qwen3moe", TinyQwen3Moe},
    {"tiny-qwen3vlmoe",
     [](ModelShape& s) {  // Qwen3-VL-30B-A3B's text: tiny-qwen3moe under the vision-language name
       TinyQwen3Moe(s);
       s.architecture = "qwen3vlmoe";
     }},
    {"tiny-qwen2moe", TinyQwen2Moe},
    {"tiny-mixtral",
     [](ModelShape& s) {  // Mixtral 8x7B: llama with experts (2 used); 32 heads of 16, 8 KV heads
       s = Tiny(s.name, "llama");
       Widths(s, 512, 32, 8, 16, 128);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.rope_freq_base = 1000000.0f;
       s.tied_embeddings = false;
       s.n_expert = 4;
       s.n_expert_used = 2;
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
    {"small-qwen3moe",
     [](ModelShape& s) {
       // tiny-qwen3moe at twice its width with Qwen3-30B-A3B's 8 of 64 experts (it has 128), for benchmarks
       // of the expert products; rows of 512 and 256 (K-quants fit).
       TinyQwen3Moe(s);
       Widths(s, 512, 32, 4, 16, 1536);
       Experts(s, 64, 8, 256);
     }},
    {"small-qwen2moe",
     [](ModelShape& s) {
       // tiny-qwen2moe with Qwen2-57B-A14B's plan (4 KV heads, 8 of 64 experts, a shared expert 8 x as wide
       // as one: 2560 and 20480 there) at a seventh of its width, for benchmarks; rows of 512, 256 and 2048
       // (K-quants fit).
       TinyQwen2Moe(s);
       Widths(s, 512, 32, 4, 16, 2048);
       Experts(s, 64, 8, 256);
       s.n_ff_shared = 2048;
     }},
    {"tiny-gpt-oss", TinyGptOss},
    {"tiny-deepseek2", TinyDeepseek2},
    {"tiny-deepseek3", TinyDeepseek3},
    // tiny-deepseek3 as llama.cpp's converter writes DeepSeek files since its MLA rework (attn_k_b and
    // attn_v_b, head_count_kv 1, key_length_mla): the same weights as tiny-deepseek3's file.
    {"tiny-deepseek3-split",
     [](ModelShape& s) {
       TinyDeepseek3(s);
       s.split_kv_b = true;
     }},
    {"tiny-deepseek3-grouped", TinyDeepseek3Grouped},
    {"small-deepseek2",
     [](ModelShape& s) {
       // tiny-deepseek2 at DeepSeek-V2-Lite's attention widths (16 heads of 128 + 64 rotated dims, values of
       // 128, a latent of 512: the absorbed form caches 576 + 512 a position and layer) with 4 layers, 4 of
       // 16 experts of 256, for benchmarks.
       TinyDeepseek2(s);
       Widths(s, 1024, 16, 16, 192, 1024);
       s.rope_dim = 64;
       s.value_dim = 128;
       s.kv_lora_rank = 512;
       s.n_layer = 4;
       s.n_ctx = 4096;
       Experts(s, 16, 4, 256);
     }},
    {"small-gpt-oss",
     [](ModelShape& s) {
       // gpt-oss-20b's plan (64 heads of 64, 8 KV heads, 4 of 32 experts as wide as n_embd, a window of 128)
       // at about a fifth of its width and a quarter of its depth, for benchmarks; rows of 512 and 4096.
       TinyGptOss(s);
       Widths(s, 512, 64, 8, 64, 512);
       s.n_layer = 6;
       s.n_ctx = 4096;
       s.sliding_window = 128;
       Experts(s, 32, 4, 512);
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
  return names;
}

Result<ModelShape> FindModelShape(const std::string& name) {
  for (const ShapeEntry& e : kShapes) {
    if (e.name != name) continue;
    ModelShape s;
    s.name = name;
    e.set(s);
    return s;
  }
  std::string list;
  for (const std::string& n : ModelShapeNames()) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown model shape '" + name + "'; known: " + list);
}

}  // namespace lockstep
