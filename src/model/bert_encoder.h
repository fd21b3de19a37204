// BertEncoder: the Model of `bert` files (bge, all-MiniLM, e5 embedding models) and `nomic-bert` ones
// (nomic-embed-text), a bidirectional encoder that gives embeddings only (no logits: Forward refuses rows
// that want them), computed as llama.cpp's bert graph does:
//   x = token_embd[token] + token_types[0] + position_embd[position] -> LayerNorm(token_embd_norm)
//   per layer (post-norm):
//     Q, K, V = x W + b -> per head, each row attends to EVERY row of its own sequence (no causal mask;
//     scale 1 / sqrt(head_dim)) -> O = att Wo + bo -> x = LayerNorm(O + x, attn_output_norm)
//     h = GELU(x Wup + bup) Wdown + bdown -> x = LayerNorm(h + x, layer_output_norm)
//   a row's embedding is its final x (no output norm; the engine pools the rows: CLS, mean, ...).
// nomic-bert: no position_embd; Q and K rotated (NeoX RoPE at the row's position) before attention; one
// attn_qkv; h = SwiGLU(x Wgate, x Wup) Wdown; no biases but the LayerNorms' (ModelConfig's flags say which).
// jina-bert-v2: no position_embd; head h's score of key j for query i gains slope_h * -|i - j| (ALiBi both
// ways, after the scale); h = (GELU(x Wgate) * x Wup) Wdown + bdown, GELU through the f16 table.
// GELU is the tanh form with llama.cpp's CPU rounding: its input and result pass through f16 (a 64K-entry
// table built at construction), and |x| >= 10 gives 0 or x.
//
// Batch contract (stricter than model/batch.h's): every sequence in the batch is given whole -- its rows are
// positions 0, 1, ..., n - 1 -- because a token's state depends on all the others. A sequence that starts
// above position 0 is FailedPrecondition; positions must be below n_ctx_train (position_embd's rows). The
// KV blocks are not used (nothing is written: a later forward pass cannot extend a sequence). A row's
// result depends only on its own sequence's rows (fixed orders per row), so it is the same whatever else
// shares the batch. Engine thread only.
#pragma once

#include <memory>
#include <vector>

#include "model/model.h"
#include "model/model_weights.h"
#include "model/rope.h"
#include "tensor/float16.h"
#include "tensor/kernels.h"

namespace lockstep {

class BertEncoder final : public Model {
 public:
  BertEncoder(std::shared_ptr<const GgufFile> file, ModelConfig config, ModelWeights weights,
              const Kernels& kernels);

  const ModelConfig& config() const override { return config_; }
  const Kernels& kernels() const override { return kernels_; }
  using Model::Forward;
  Status Forward(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs,
                 ThreadPool& pool) override;

 private:
  // Each sequence's batch rows in position order (sequences_ [i] = rows of sequence i, empty when absent).
  Status Plan(const Batch& batch, const ForwardOutputs& outputs);
  void Embed(const Batch& batch, ThreadPool& pool);
  void Attention(int64_t layer, ThreadPool& pool);
  void FeedForward(int64_t layer, ThreadPool& pool);
  // GELU as llama.cpp's CPU backend computes it: 0 below -10, x above 10, else the f16 table.
  float Gelu(float x) const { return x <= -10.0f ? 0.0f : x >= 10.0f ? x : gelu_f16_[F32ToF16(x)]; }
  bool Rotates() const { return !config_.layers.empty() && config_.layers[0].rope; }  // nomic-bert

  ModelConfig config_;
  ModelWeights weights_;
  Kernels kernels_;
  std::vector<float> gelu_f16_;      // GELU of every f16 value, by its bits
  Rope rope_;                        // nomic-bert (ModelConfig::layers[l].rope)
  std::vector<float> alibi_slopes_;  // jina-bert-v2: one per head (ModelConfig::AlibiSlopes)

  int64_t rows_ = 0;
  std::vector<std::vector<int64_t>> sequences_;
  // Scratch, reused across calls ([rows][width] row-major).
  std::vector<float> x_, q_, k_, v_, att_, proj_, up_, gate_;
  std::vector<float> cos_sin_;  // nomic-bert: each row's RoPE angles ([rows][2 * rope_.pairs()])
};

}  // namespace lockstep
