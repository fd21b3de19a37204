// The reference forward pass's parts (tests/model/reference_forward.h): matrices in double, one layer's
// weights as loaded, and the numerics and layers reference_forward.cc assembles. Tests only; plain loops in
// double, nothing shared with the fast path but the GGUF reader, the dequantizer and the metadata parser.
//   reference_ops.cc     loading, MatVec, RMSNorm, RoPE, activations, a SwiGLU FFN
//   reference_layers.cc  Gated DeltaNet, the experts' routing, deepseek2's latent attention
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep::testing::reference {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

// One layer's weights as loaded (what its architecture has; the rest empty).
struct Layer {
  std::vector<double> attn_norm, attn_norm_b, ffn_norm_b, ffn_norm, bq, bk, bv, q_norm, k_norm,
      post_attn_norm, post_ffn_norm;
  // gpt-oss: the sinks [n_head], attn_output's bias, the router's bias and the experts' [n_expert][width].
  std::vector<double> sinks, bo, router_b;
  std::vector<double> b_up, b_down;  // phi2's ungated FFN (up holds ffn_up; gate is empty); jais's gated one
  std::vector<double> b_gate;        // jais: the gated FFN's gate bias
  Matrix gate_b, up_b, down_b;
  Matrix wq, wk, wv, wo, gate, up, down;
  // Mixture of experts: the router [n_expert][n_embd] and each expert's gate, up and down (qwen2moe: the
  // shared expert in gate, up and down, its gate in shared_gate).
  Matrix router;
  std::vector<double> shared_gate, selection_bias;
  // deepseek2's latent attention (wq is attn_q when there is no query LoRA; split files: wk_b and wv_b, as
  // loaded: wk_b's rows [n_head * kv_lora_rank] of k_nope width, wv_b's [n_head * value_dim] of
  // kv_lora_rank).
  Matrix wq_a, wq_b, wkv_a, wkv_b, wk_b, wv_b;
  std::vector<double> q_a_norm, kv_a_norm;
  std::vector<Matrix> expert_gate, expert_up, expert_down;
  // Gemma 4: the output scale (empty: none) and the per-layer input's gate, projection and post-norm; the
  // experts' router input scale, per-expert output scales and norms (26B-A4B; gate / up / down are then the
  // dense FFN beside them).
  std::vector<double> out_scale, pl_post_norm;
  std::vector<double> router_scale, expert_scale, pre_ffn_norm_2, post_ffn_norm_1, post_ffn_norm_2;
  Matrix pl_gate, pl_proj;
  // qwen35's Gated DeltaNet layers: the projections, conv taps [channel][tap], and per-head vectors.
  Matrix dn_qkv, dn_z, dn_beta, dn_alpha, dn_out, dn_conv;
  std::vector<double> dn_a, dn_dt, dn_norm;
};

// A tensor dequantized to double, [rows][cols] (a vector: its first row).
Result<Matrix> Load(const GgufFile& file, const std::string& name);
Result<std::vector<double>> LoadVector(const GgufFile& file, const std::string& name);
// Expert e's [out][in] slice of each 3-D tensor [in, out, n_expert] (loaded as n_expert * out rows).
Result<std::vector<Matrix>> LoadExperts(const GgufFile& file, const std::string& name, int64_t n_expert);

std::vector<double> MatVec(const Matrix& w, const std::vector<double>& x);
std::vector<double> RmsNorm(const std::vector<double>& x, const std::vector<double>& w, double eps);
// LayerNorm (command-r, cohere2, stablelm): (x - mean) / sqrt(variance + eps) * w + b (b empty: none).
std::vector<double> LayerNorm(const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b, double eps);
// Rotates every head of v in place at `pos` (a local layer's RoPE: the local base, unscaled).
void Rotate(std::vector<double>& v, int64_t heads, const ModelConfig& c, int64_t pos, bool local);
// RMSNorm of each head_dim slice of v (w: head_dim weights).
void NormHeads(std::vector<double>& v, const std::vector<double>& w, double eps);
Matrix RowRange(const Matrix& m, size_t first, size_t count);
double Sigmoid(double x);
double Gelu(double x);  // tanh approximation
// SiLU(gate · h) * (up · h), then down. gpt-oss (clamped, with the expert's biases when given):
// x = min(g, 7), y = clamp(u, -7, 7), x sigmoid(1.702 x) (y + 1).
std::vector<double> SwiGlu(const Matrix& gate, const Matrix& up, const Matrix& down,
                           const std::vector<double>& h, bool clamped = false,
                           const std::vector<double>* gate_b = nullptr,
                           const std::vector<double>* up_b = nullptr,
                           const std::vector<double>* down_b = nullptr);

// Gated DeltaNet (the paper's recurrent form) over a whole sequence of normed inputs h[t]: returns each
// position's layer output. All in double, the conv and the state starting from zeros.
Matrix DeltaNetReference(const Layer& L, const ModelConfig& c, const Matrix& h);
// The router's softmax over every expert, the n_expert_used most probable (a stable sort: the lower index
// first among equals), their probabilities renormalised (qwen2moe: as they are); the chosen experts' outputs
// so weighted, summed; qwen2moe: plus the shared expert's output times sigmoid(shared_gate · h).
std::vector<double> Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& h);
// Gemma 4's experts for the layer input x, as transformers' Gemma4TextRouter and experts: the router reads
// RMSNorm(x) (no weight) x scale x n_embd^-0.5, softmax, the top k renormalised then x per_expert_scale;
// the experts GeGLU over RMSNorm(x) with pre_ffw_norm_2.
std::vector<double> Gemma4Experts(const Layer& L, const ModelConfig& c, const std::vector<double>& x);
// deepseek2's query, key and value of one token from its normed input h at position t, in the file's
// layout: q and k per head [nope | rope] (k's rope part, one per token, in every head), v per head.
void LatentAttention(const Layer& L, const ModelConfig& c, const std::vector<double>& h, int64_t t,
                     std::vector<double>& q, std::vector<double>& k, std::vector<double>& v);

}  // namespace lockstep::testing::reference
