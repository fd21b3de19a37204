// Transformer: the Model implementation for every supported architecture (model/architectures.h): pre-norm
// RMSNorm blocks (LayerNorm for Cohere's, StableLM's, Phi-2's and StarCoder2's; some with the FFN beside the
// attention), RoPE attention with GQA/MQA, a gated FFN (Phi-2's, StarCoder2's and Nemotron's ungated), tied
// or separate output matrix, and the architecture differences of ModelConfig, each applied where its name
// appears below.
//
// Forward over a ragged batch of R rows (embeddings x sqrt(n_embd) for Gemma), per layer:
//   x [R][n_embd] -> RMSNorm -> Q [R][q_dim], K/V [R][kv_dim] (one MatMul per weight for all rows; deepseek2:
//   model/mla.h's latent projections, in the absorbed form queries of n_head latent-wide heads and one KV
//   head of the latent, whose attention outputs W_vb turns into the heads' before attn_output)
//   -> (+bias) -> (clamped: OLMo 1) -> (Q/K head norms) -> RoPE per row at its position (the layer's: global
//   or local)
//   -> K/V written into the row's sequence blocks -> attention per (row, head) over the row's own positions
//   [0, position] or the layer's window of them (soft-capped scores for Gemma 2) -> O projection
//   -> (post-norm) -> residual -> RMSNorm -> gate/up [R][n_ff] -> SiLU(gate) * up or GELU(gate) * up
//   -> down projection (or, for a mixture of experts, model/moe.h's routed experts, plus for qwen2moe the
//   same gated FFN as a shared expert scaled by the sigmoid of its gate's logit, for deepseek2 unscaled;
//   deepseek2's leading layers are dense) -> (post-norm) -> residual.
// qwen35's recurrent layers run Gated DeltaNet (model/delta_net.h) over each sequence's recurrent state in
// place of attention; its attention layers multiply each head's output by sigmoid(gate) before attn_output.
// Then the rows that want logits are gathered, normed and multiplied by the output matrix in one MatMul
// (soft-capped for Gemma 2); the rows that want an embedding get their normed hidden state copied out. In
// the last layer, rows that want neither stop after writing their K/V (nothing reads the rest of their
// pass). Every per-row computation depends only on the row's own data and its sequence's KV, so a row's
// logits are bit-identical whatever else shares the batch. Scratch buffers grow to the largest batch seen and
// are reused. LoRA adapters (model/lora_adapter.h) add each row's own terms after every adapted product. The
// kernels are those of the table given at construction (tensor/kernels.h); scratch beyond the
// buffers above comes from the thread pool's arenas. Engine thread only.
#pragma once

#include <memory>
#include <vector>

#include "model/delta_net.h"
#include "model/lora_adapter.h"
#include "model/mla.h"
#include "model/model.h"
#include "model/model_weights.h"
#include "model/moe.h"
#include "model/per_layer_inputs.h"
#include "model/rope.h"
#include "tensor/kernels.h"

namespace lockstep {

class Transformer final : public Model {
 public:
  Transformer(std::shared_ptr<const GgufFile> file, ModelConfig config, ModelWeights weights,
              const Kernels& kernels);

  const ModelConfig& config() const override { return config_; }
  const Kernels& kernels() const override { return kernels_; }
  const ModelWeights& weights() const { return weights_; }
  using Model::Forward;
  Status Forward(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs,
                 ThreadPool& pool) override;

 private:
  Status Validate(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs) const;
  void EnsureScratch(int64_t rows);
  void Embed(const Batch& batch, ThreadPool& pool);
  void AttentionBlock(const Batch& batch, const KvLayout& kv, int32_t layer, bool only_output_rows,
                      ThreadPool& pool);
  // deci's "linear attention" layers: attn_norm -> attn_output -> residual, every row.
  void LinearAttentionBlock(int64_t rows, int32_t layer, ThreadPool& pool);
  // qwen35's recurrent layers: RMSNorm -> Gated DeltaNet (model/delta_net.h) -> residual, every row.
  void RecurrentBlock(const Batch& batch, int32_t layer, ThreadPool& pool);
  void FeedForwardBlock(int64_t rows, int32_t layer, ThreadPool& pool);
  // Gemma 4's MoE layers (ModelConfig::dense_beside_experts): into proj_, the dense FFN of xn_ (ffn_norm's)
  // RMS-normed by post_ffw_norm_1 plus the experts' output RMS-normed by post_ffw_norm_2.
  void DenseBesideExperts(int64_t rows, int32_t layer, ThreadPool& pool);
  // The gated FFN of `layer` (w_gate, w_up, w_down of width ff: the dense FFN, or qwen2moe's shared expert)
  // over the first `rows` rows of xn_, into out [rows][n_embd]; phi2's ungated one (config_.ungated_ffn).
  void GatedFeedForward(int64_t rows, int32_t layer, int64_t ff, float* out, ThreadPool& pool);
  void Outputs(const Batch& batch, bool compacted, const ForwardOutputs& outputs, ThreadPool& pool);
  // attn_norm, ffn_norm, output_norm and the Q/K head norms: RMSNorm, or LayerNorm (config_.layer_norm:
  // command-r, cohere2, stablelm, phi2, starcoder2) with bias b (empty: none); eps config_.rms_eps. out may
  // be x.
  void Norm(const float* x, const float* w, const std::vector<float>& b, int64_t n, float* out) const;

  struct RowTile {
    int64_t first_row = 0;  // scratch row of the tile's first query
    int32_t rows = 0;
    int32_t sequence = 0;  // of every row in the tile
    int32_t position = 0;  // of the first row; the others follow it
  };
  template <typename BatchRowOf>
  static void BuildTiles(const Batch& batch, int64_t n, const BatchRowOf& batch_row,
                         std::vector<RowTile>& tiles);

  // The rope scratch of row r for `layer`'s RoPE (global or local).
  const float* RowAngles(int32_t layer, int64_t r) const;

  ModelConfig config_;
  ModelWeights weights_;
  Kernels kernels_;
  Rope rope_;
  Rope local_rope_;  // Gemma 3's local layers (LayerAttention::local_rope)
  bool any_local_rope_ = false;
  MixtureOfExperts moe_;                  // the FFN when config_.n_expert > 0
  LatentAttention mla_;                   // Q, K and V when config_.kv_lora_rank > 0 (deepseek2)
  std::vector<float> ones_;               // Gemma 4's V norm: a weight of ones
  std::vector<float> alibi_slopes_;       // ALiBi (bloom): one slope per head (ModelConfig::AlibiSlopes)
  std::vector<float> ffn_ones_;           // the ungated GELU FFN (phi2, gpt2): n_ff ones (GELU as GeGLU x 1)
  PerLayerInputs per_layer_inputs_;       // Gemma 4 E2B/E4B (config_.n_embd_per_layer > 0)
  DeltaNet delta_net_;                    // the recurrent layers (LayerAttention::recurrent)
  std::vector<int64_t> recurrent_index_;  // per layer: its index among the recurrent layers, or -1

  // Scratch, reused across calls ([rows][width] row-major).
  std::vector<float> x_, xn_, q_, k_, v_, att_, proj_, gate_, up_;
  std::vector<float> qg_,
      q_gate_;  // attn_output_gate: attn_q's output [rows][2 q_dim], the gates [rows][q_dim]
  std::vector<float> shared_, shared_gate_;  // qwen2moe: the shared expert's output, its gate logit per row
  std::vector<float> router_x_;              // Gemma 4's experts: the router's input
  std::vector<float> row_cos_sin_;        // [rows][2 * rope pairs]: each row's RoPE angles, for every layer
  std::vector<float> row_cos_sin_local_;  // likewise for the local RoPE, when some layer uses it
  std::vector<RowTile> tiles_;            // attention tiles of the current Forward call, over all rows
  std::vector<int64_t> output_rows_;      // batch rows that want logits or an embedding, in order
  std::vector<RowTile>
      output_tiles_;  // attention tiles over output_rows_ (the last layer, when it skips rows)

  // Attention tasks of one layer: a tile's rows for some query heads, or one part of a split decode row
  // (its outputs and softmax stats at the split's offsets into part_outputs_ / part_stats_ until merged).
  struct AttentionTask {
    int32_t tile = 0;
    int32_t head = 0;  // first query head
    int32_t heads = 0;
    int32_t part = -1;  // -1: all positions (AttendRows); else the part of split `split`
    int32_t split = 0;
  };
  struct SplitRow {
    int32_t tile = 0;
    size_t outputs = 0, stats = 0;  // offsets of its heads' part outputs and stats
  };
  std::vector<AttentionTask> attention_tasks_;
  std::vector<SplitRow> split_rows_;
  std::vector<float> part_outputs_;
  std::vector<attention::SoftmaxStats> part_stats_;
  LoraApplier lora_;  // each row's LoRA terms after its matrix products (model/lora_adapter.h)
};

}  // namespace lockstep
