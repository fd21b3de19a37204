// The shapes `make-model --shape` knows (model/model_builder.h). Tiny shapes keep a real model's head counts,
// GQA ratio, layer pattern and architecture features at widths of tens and windows of tens of positions (so
// tests reach past a window); real shapes are the published hyper-parameters.
#include <string>
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

// Sets the widths: heads of head_dim, n_embd (may differ from n_head * head_dim), n_ff.
void Widths(ModelShape& s, int64_t n_embd, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
            int64_t n_ff) {
  s.n_embd = n_embd;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.head_dim = head_dim;
  s.n_ff = n_ff;
}

}  // namespace

std::vector<std::string> ModelShapeNames() {
  return {"tiny",         "tiny-qwen2",  "tiny-256",       "tiny-qwen3", "tiny-gemma2",      "tiny-gemma3",
          "tiny-phi3",    "tiny-phi3.5", "tiny-phi4-mini", "tiny-nemo",  "tiny-mistral-swa", "stories15m",
          "smollm2-135m", "qwen2-0.5b",  "llama-1b",       "qwen3-0.6b", "gemma2-2b",        "gemma3-1b"};
}

Result<ModelShape> FindModelShape(const std::string& name) {
  ModelShape s;
  s.name = name;
  if (name == "tiny") {
    s.tied_embeddings = false;  // exercises output.weight
  } else if (name == "tiny-256") {
    s = {name, "llama", 256, 2, 4, 2, 512, 256, 10000.0f, 1e-5f, false, false};
  } else if (name == "tiny-qwen2") {
    s.architecture = "qwen2";
    s.qkv_bias = true;
    s.n_head_kv = 1;
    s.rope_freq_base = 1000000.0f;
    s.rms_eps = 1e-6f;
  } else if (name == "tiny-qwen3") {  // Qwen3-0.6B: 16 heads, 8 KV heads, q_dim 2 x n_embd
    s = Tiny(name, "qwen3");
    Widths(s, 128, 16, 8, 16, 192);
    s.n_layer = 4;
    s.n_ctx = 1024;
    s.rope_freq_base = 1000000.0f;
    s.rms_eps = 1e-6f;
  } else if (name == "tiny-gemma2") {
    // Gemma 2 2B: 26 layers (llama.cpp tells the model size by them), 8 heads, 4 KV heads, windows on the
    // even layers. Soft-caps small enough to bite at these widths (the real ones: 50 and 30).
    s = Tiny(name, "gemma2");
    Widths(s, 64, 8, 4, 16, 128);
    s.n_layer = 26;
    s.n_ctx = 1024;
    s.rms_eps = 1e-6f;
    s.sliding_window = 40;
    s.attn_softcap = 0.5f;
    s.final_softcap = 2.0f;
  } else if (name == "tiny-gemma3") {
    // Gemma 3 4B: 8 heads, 4 KV heads, five local layers to one global, linear RoPE scaling 8 on the global
    // layers only.
    s = Tiny(name, "gemma3");
    Widths(s, 64, 8, 4, 16, 128);
    s.n_layer = 12;
    s.n_ctx = 1024;
    s.rope_freq_base = 1000000.0f;
    s.rope_linear_factor = 8;
    s.rms_eps = 1e-6f;
    s.sliding_window = 40;
  } else if (name == "tiny-phi3") {  // Phi-3-mini-4k: 32 heads, no GQA, a window on every layer
    s = Tiny(name, "phi3");
    Widths(s, 256, 32, 32, 8, 256);
    s.n_layer = 4;
    s.n_ctx = 4096;
    s.tied_embeddings = false;
    s.sliding_window = 40;
  } else if (name == "tiny-phi3.5") {  // Phi-3.5-mini: longrope (long factors: n_ctx > original context)
    s = Tiny(name, "phi3");
    Widths(s, 256, 32, 32, 8, 256);
    s.n_layer = 4;
    s.n_ctx = 1024;
    s.longrope_orig_ctx = 256;
    s.tied_embeddings = false;
    s.sliding_window = 262144;
  } else if (name == "tiny-phi4-mini") {  // Phi-4-mini: 24 heads, 8 KV heads, 3/4 of each head rotated
    s = Tiny(name, "phi3");
    Widths(s, 384, 24, 8, 16, 256);
    s.rope_dim = 12;
    s.n_layer = 4;
    s.n_ctx = 1024;
    s.longrope_orig_ctx = 256;
    s.tied_embeddings = false;
    s.rope_freq_base = 250000.0f;
  } else if (name == "tiny-nemo") {  // Mistral Nemo: 32 heads, 8 KV heads, q_dim (4096) != n_embd (5120)
    s = Tiny(name, "llama");
    Widths(s, 96, 32, 8, 8, 128);
    s.n_layer = 4;
    s.n_ctx = 1024;
    s.rope_freq_base = 1000000.0f;
    s.tied_embeddings = false;
  } else if (name == "tiny-mistral-swa") {  // Mistral 7B v0.1: 32 heads, 8 KV heads, a window on every layer
    s = Tiny(name, "llama");
    Widths(s, 256, 32, 8, 8, 256);
    s.n_layer = 4;
    s.n_ctx = 1024;
    s.tied_embeddings = false;
    s.sliding_window = 40;
  } else if (name == "stories15m") {
    s = {name, "llama", 288, 6, 6, 6, 768, 256, 10000.0f, 1e-5f, false, true};
  } else if (name == "smollm2-135m") {
    s = {name, "llama", 576, 30, 9, 3, 1536, 2048, 100000.0f, 1e-5f, false, true};
  } else if (name == "qwen2-0.5b") {
    s = {name, "qwen2", 896, 24, 14, 2, 4864, 32768, 1000000.0f, 1e-6f, true, true};
  } else if (name == "llama-1b") {
    s = {name, "llama", 2048, 16, 32, 8, 8192, 131072, 500000.0f, 1e-5f, false, true};
    s.llama3_factor = 32;
    s.llama3_low_freq_factor = 1;
    s.llama3_high_freq_factor = 4;
    s.llama3_original_ctx = 8192;
  } else if (name == "qwen3-0.6b") {
    s = {name, "qwen3", 1024, 28, 16, 8, 3072, 40960, 1000000.0f, 1e-6f, false, true};
    s.head_dim = 128;
  } else if (name == "gemma2-2b") {
    s = {name, "gemma2", 2304, 26, 8, 4, 9216, 8192, 10000.0f, 1e-6f, false, true};
    s.head_dim = 256;
    s.sliding_window = 4096;
    s.attn_softcap = 50;
    s.final_softcap = 30;
  } else if (name == "gemma3-1b") {
    s = {name, "gemma3", 1152, 26, 4, 1, 6912, 32768, 1000000.0f, 1e-6f, false, true};
    s.head_dim = 256;
    s.sliding_window = 512;
  } else {
    std::string list;
    for (const std::string& n : ModelShapeNames()) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown model shape '" + name + "'; known: " + list);
  }
  return s;
}

}  // namespace lockstep
