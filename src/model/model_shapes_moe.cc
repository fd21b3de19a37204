// The mixture-of-experts shapes `make-model --shape` knows (model/model_builder.h; the others in
// model/model_shapes.cc): tiny ones that keep a real model's routing, expert counts and layer plan at widths
// of tens, and small ones for benchmarks of the expert products.
#include <string>

#include "model/model_shapes_internal.h"

namespace lockstep {
namespace {

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

constexpr ShapeEntry kMoeShapes[] = {
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
    {"tiny-qwen3moe", TinyQwen3Moe},
    {"tiny-qwen3vlmoe",
     [](ModelShape& s) {  // Qwen3-VL-30B-A3B's text: tiny-qwen3moe under the vision-language name
       TinyQwen3Moe(s);
       s.architecture = "qwen3vlmoe";
     }},
    {"tiny-qwen2moe", TinyQwen2Moe},
    {"tiny-olmoe",
     [](ModelShape& s) {
       // OLMoE-1B-7B: 16 heads of 128 (as many KV heads), RMS norms of the whole Q and K, NeoX pairs, 8 of 64
       // experts as wide as feed_forward_length (1024), not renormalised; untied output. Here 4 of 16.
       s = Tiny(s.name, "olmoe");
       Widths(s, 128, 8, 8, 16, 64);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
       Experts(s, 16, 4, 0);
     }},
    {"tiny-deepseek",
     [](ModelShape& s) {
       // DeepSeek-MoE 16B: 16 heads of 128 (as many KV heads), one dense layer first, then 6 of 64 experts of
       // 1408 beside 2 shared ones, softmax scores not renormalised; untied output. Here 4 of 16 experts.
       s = Tiny(s.name, "deepseek");
       Widths(s, 128, 8, 8, 16, 256);
       s.n_layer = 4;
       s.n_ctx = 1024;
       s.tied_embeddings = false;
       Experts(s, 16, 4, 32);
       s.n_layer_dense_lead = 1;
       s.n_expert_shared = 2;
       s.expert_gating = 1;
     }},
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
};

}  // namespace

std::span<const ShapeEntry> MixtureOfExpertsShapes() { return kMoeShapes; }

}  // namespace lockstep
