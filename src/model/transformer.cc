#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "model/architecture_ops.h"
#include "model/attention.h"
#include "model/batch_checks.h"
#include "model/row_tasks.h"
#include "tensor/activations.h"
#include "tensor/dequantize.h"
#include "tensor/norms.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Rows of one prefill chunk that share each widened KV block in attention (bounded so that a long chunk still
// splits into enough tasks for every worker).
constexpr int64_t kTileRows = 16;

}  // namespace

Transformer::Transformer(std::shared_ptr<const GgufFile> file, ModelConfig config, ModelWeights weights,
                         const Kernels& kernels)
    : Model(std::move(file)),
      config_(std::move(config)),
      weights_(std::move(weights)),
      kernels_(kernels),
      rope_(config_),
      local_rope_(config_, Rope::Kind::kLocal),
      delta_net_(config_) {
  if (config_.ungated_ffn && config_.ffn_activation != FfnActivation::kReluSquared) {  // GELU
    ffn_ones_.assign(size_t(config_.n_ff), 1.0f);
  }
  int64_t recurrent = 0;
  for (const LayerAttention& layer : config_.layers) {
    any_local_rope_ = any_local_rope_ || layer.local_rope;
    recurrent_index_.push_back(layer.recurrent ? recurrent++ : -1);
  }
  alibi_slopes_ = config_.AlibiSlopes();
  if (config_.v_norm) ones_.assign(size_t(std::max(config_.head_dim, config_.head_dim_local)), 1.0f);
}

const float* Transformer::RowAngles(int32_t layer, int64_t r) const {
  if (config_.layers[size_t(layer)].local_rope) {
    return row_cos_sin_local_.data() + size_t(r) * 2 * local_rope_.pairs();
  }
  return row_cos_sin_.data() + size_t(r) * 2 * rope_.pairs();
}

Status Transformer::Validate(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs) const {
  const KvLayout expected = MakeKvLayout(kv.dtype, kv.block_tokens);
  if (kv.n_layer != expected.n_layer || kv.n_kv_head != expected.n_kv_head ||
      kv.head_dim != expected.head_dim || kv.ValueDim() != expected.ValueDim() ||
      kv.layer_shapes != expected.layer_shapes || kv.base != 0 || kv.block_tokens <= 0) {
    return InvalidArgument("KV layout (layers " + std::to_string(kv.n_layer) + ", kv heads " +
                           std::to_string(kv.n_kv_head) + ", head dim " + std::to_string(kv.head_dim) +
                           ", value dim " + std::to_string(kv.ValueDim()) + ", block tokens " +
                           std::to_string(kv.block_tokens) + ") does not match the model");
  }
  LOCKSTEP_RETURN_IF_ERROR(CheckOutputBuffer("logits", outputs.logits, batch.LogitRows(), config_.n_vocab));
  LOCKSTEP_RETURN_IF_ERROR(
      CheckOutputBuffer("embeddings", outputs.embeddings, batch.EmbeddingRows(), config_.n_embd));
  const bool recurrent = config_.RecurrentLayers() > 0;
  if (kv.recurrent_state_floats != config_.RecurrentStateFloats()) {
    return InvalidArgument("KV layout's recurrent state of " + std::to_string(kv.recurrent_state_floats) +
                           " floats does not match the model's " +
                           std::to_string(config_.RecurrentStateFloats()));
  }
  std::vector<int32_t> next_position(recurrent ? batch.sequences.size() : 0, -1);
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& row = batch.rows[i];
    auto where = [i] { return BatchRowWhere(i); };  // built only on error
    LOCKSTEP_RETURN_IF_ERROR(CheckRowToken(row, i, config_.n_vocab));
    if (config_.learned_positions) {  // gpt2, starcoder
      LOCKSTEP_RETURN_IF_ERROR(CheckRowPositionEmbedding(row, i, config_.n_ctx_train));
    }
    if (row.sequence < 0 || size_t(row.sequence) >= batch.sequences.size() ||
        batch.sequences[row.sequence].blocks == nullptr) {
      return InvalidArgument(where() + "sequence " + std::to_string(row.sequence) + " has no KV blocks");
    }
    if (recurrent) {  // the recurrence advances through a sequence's positions one by one
      if (batch.sequences[row.sequence].recurrent_state == nullptr) {
        return InvalidArgument(where() + "sequence " + std::to_string(row.sequence) +
                               " has no recurrent state (the model has recurrent layers)");
      }
      int32_t& next = next_position[size_t(row.sequence)];
      if (next >= 0 && row.position != next) {
        return InvalidArgument(where() + "position " + std::to_string(row.position) + " does not follow " +
                               std::to_string(next - 1) +
                               " of its sequence (recurrent layers need adjacent rows)");
      }
      next = row.position + 1;
    }
    const std::vector<std::byte*>& blocks = *batch.sequences[row.sequence].blocks;
    if (row.position < 0 || int64_t(row.position) >= int64_t(blocks.size()) * kv.block_tokens) {
      return OutOfRange(where() + "position " + std::to_string(row.position) + " is not covered by its " +
                        std::to_string(blocks.size()) + " KV blocks");
    }
    // Only the blocks some layer reads (sliding windows: model/attention.h AttentionStart).
    const int64_t first_read = AttentionStart(kv, row.position, int32_t(config_.WidestWindow()));
    for (int64_t b = first_read / kv.block_tokens; b <= row.position / kv.block_tokens; ++b) {
      if (blocks[b] == nullptr)
        return InvalidArgument(where() + "KV block " + std::to_string(b) + " is null");
    }
  }
  return Status::Ok();
}

void Transformer::EnsureScratch(int64_t rows) {
  const ModelConfig& c = config_;
  const size_t r = size_t(rows);
  GrowTo(x_, r * c.n_embd);
  GrowTo(xn_, r * c.n_embd);
  GrowTo(proj_, r * c.n_embd);
  GrowTo(q_, r * c.MaxQDim());
  GrowTo(att_, r * c.MaxAttDim());
  if (c.attn_output_gate) {
    GrowTo(qg_, r * 2 * c.q_dim());
    GrowTo(q_gate_, r * c.q_dim());
  }
  GrowTo(k_, r * c.MaxKvDim());
  GrowTo(v_, r * c.MaxVDim());
  // Experts: model/moe.h's own scratch, and the shared expert (and deepseek2's leading dense FFNs) here.
  // Gemma 4's dense FFN beside its experts: their output in shared_, the router's input in router_x_.
  const size_t ff = size_t(c.n_expert == 0 || c.dense_beside_experts
                               ? c.n_ff
                               : std::max(c.n_ff_shared, c.n_layer_dense_lead > 0 ? c.n_ff : 0));
  GrowTo(gate_, r * ff);
  GrowTo(up_, r * ff);
  if (c.n_ff_shared > 0 || c.dense_beside_experts) {
    GrowTo(shared_, r * c.n_embd);
    GrowTo(shared_gate_, r);
  }
  if (c.dense_beside_experts) GrowTo(router_x_, r * c.n_embd);
  GrowTo(row_cos_sin_, r * 2 * rope_.pairs());
  if (any_local_rope_) GrowTo(row_cos_sin_local_, r * 2 * local_rope_.pairs());
}

Status Transformer::Forward(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs,
                            ThreadPool& pool) {
  LOCKSTEP_RETURN_IF_ERROR(Validate(batch, kv, outputs));
  const int64_t rows = static_cast<int64_t>(batch.rows.size());
  if (rows == 0) return Status::Ok();
  EnsureScratch(rows);
  LOCKSTEP_RETURN_IF_ERROR(lora_.Begin(lora_adapters_, batch));

  Embed(batch, pool);
  if (config_.n_embd_per_layer > 0)
    per_layer_inputs_.Compute(kernels_, config_, weights_, batch, x_.data(), pool);
  // RoPE angles and attention row tiles depend only on the batch: once for all layers.
  ForEachRow(pool, rows, [&](int64_t r, int) {
    rope_.Angles(batch.rows[r].position, row_cos_sin_.data() + size_t(r) * 2 * rope_.pairs());
    if (any_local_rope_) {
      local_rope_.Angles(batch.rows[r].position,
                         row_cos_sin_local_.data() + size_t(r) * 2 * local_rope_.pairs());
    }
  });
  BuildTiles(
      batch, rows, [](int64_t r) { return r; }, tiles_);
  // The last layer's output is needed only for the rows that want logits or an embedding (output rows); the
  // others need only their K/V there (later rows and steps read it). So when some rows want no output (a
  // prompt: all but its last row), the last layer writes every row's K/V and then continues with the output
  // rows alone, gathered to the front of the scratch buffers (skipping ~1/n_layer of a prompt's work). Each
  // kept row's arithmetic is the same as without the skip, so its outputs are bit-identical either way.
  output_rows_.clear();
  for (int64_t r = 0; r < rows; ++r) {
    if (batch.rows[r].wants_logits || batch.rows[r].wants_embedding) output_rows_.push_back(r);
  }
  // (A recurrent last layer runs every row: each advances its sequence's state. deci's last layers without
  // attention run every row too: they are cheap, and only attention gathers the output rows.)
  const bool skip_in_last_layer = int64_t(output_rows_.size()) < rows && config_.Attends(config_.n_layer - 1);
  if (skip_in_last_layer) {
    BuildTiles(
        batch, int64_t(output_rows_.size()), [&](int64_t j) { return output_rows_[j]; }, output_tiles_);
  }
  if (config_.RecurrentLayers() > 0) delta_net_.Begin(batch);
  for (int32_t layer = 0; layer < config_.n_layer; ++layer) {
    const bool only_output_rows = skip_in_last_layer && layer == config_.n_layer - 1;
    const LayerAttention& kind = config_.layers[size_t(layer)];
    if (kind.recurrent) {
      RecurrentBlock(batch, layer, pool);
    } else if (kind.linear_attention) {
      LinearAttentionBlock(rows, layer, pool);
    } else if (!kind.no_attention) {
      AttentionBlock(batch, kv, layer, only_output_rows, pool);
    }
    // deci: layers without attention (the FFN reads the residual stream as it is) or without an FFN
    if (config_.LayerFf(layer) > 0) {
      FeedForwardBlock(only_output_rows ? int64_t(output_rows_.size()) : rows, layer, pool);
    }
  }
  Outputs(batch, skip_in_last_layer, outputs, pool);
  return Status::Ok();
}

// Attention tiles over `n` rows of the q/att scratch; scratch row j holds batch row batch_row(j). A tile is a
// run of up to kTileRows scratch rows of one sequence at consecutive positions.
template <typename BatchRowOf>
void Transformer::BuildTiles(const Batch& batch, int64_t n, const BatchRowOf& batch_row,
                             std::vector<RowTile>& tiles) {
  tiles.clear();
  for (int64_t j = 0; j < n;) {
    const BatchRow& first = batch.rows[batch_row(j)];
    int64_t end = j + 1;
    while (end < n && end - j < kTileRows) {
      const BatchRow& row = batch.rows[batch_row(end)];
      if (row.sequence != first.sequence || row.position != first.position + (end - j)) break;
      ++end;
    }
    tiles.push_back({j, int32_t(end - j), first.sequence, first.position});
    j = end;
  }
}

void Transformer::Embed(const Batch& batch, ThreadPool& pool) {
  const GgufTensorInfo& embd = *weights_.token_embd;
  const int64_t d = config_.n_embd;
  const size_t row_bytes = RowBytes(embd.type, d);
  // scale_embeddings (Gemma): sqrt(n_embd) in f32, as llama.cpp scales them.
  const float embedding_scale = std::sqrt(float(d));
  ForEachRow(pool, int64_t(batch.rows.size()), [&](int64_t r, int) {
    DequantizeRow(embd.type, embd.data + size_t(batch.rows[r].token) * row_bytes, x_.data() + r * d, d);
    if (config_.learned_positions) {  // gpt2, starcoder (Validate checked the position)
      const float* pos = weights_.position_embd.data() + int64_t(batch.rows[r].position) * d;
      for (int64_t i = 0; i < d; ++i) x_[size_t(r * d + i)] += pos[i];
    }
    if (config_.embedding_norm) {  // bloom
      Norm(x_.data() + r * d, weights_.embd_norm.data(), weights_.embd_norm_b, d, x_.data() + r * d);
    }
    if (config_.scale_embeddings) Scale(x_.data() + r * d, d, embedding_scale);
    if (config_.embedding_multiplier != 0) Scale(x_.data() + r * d, d, config_.embedding_multiplier);
  });
}

void Transformer::Norm(const float* x, const float* w, const std::vector<float>& b, int64_t n,
                       float* out) const {
  if (config_.layer_norm) {
    LayerNorm(x, w, b.empty() ? nullptr : b.data(), n, config_.rms_eps, out);
  } else {
    kernels_.elementwise.rms_norm(x, w, n, config_.rms_eps, out);
  }
}

// compacted: the output rows' hidden states are the first rows of x_ (the last layer ran on them alone).
void Transformer::Outputs(const Batch& batch, bool compacted, const ForwardOutputs& outputs,
                          ThreadPool& pool) {
  const int64_t d = config_.n_embd;
  int64_t n = 0, embedded = 0, output = 0;
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    const BatchRow& row = batch.rows[r];
    if (!row.wants_logits && !row.wants_embedding) continue;
    const float* x = x_.data() + (compacted ? output : int64_t(r)) * d;
    ++output;
    if (row.wants_embedding) {
      Norm(x, weights_.output_norm.data(), weights_.output_norm_b, d,
           outputs.embeddings.data() + embedded * d);
      ++embedded;
    }
    if (!row.wants_logits) continue;
    Norm(x, weights_.output_norm.data(), weights_.output_norm_b, d, xn_.data() + n * d);
    ++n;
  }
  std::span<float> logits = outputs.logits;
  if (n > 0) MatMul(kernels_.matmul, weights_.output, xn_.data(), n, logits.data(), pool);
  lora_.Apply(0, LoraTarget::kOutput, xn_.data(), n, nullptr, logits.data(), kernels_.matmul, pool);
  if (!weights_.output_b.empty()) {  // phi2
    ForEachRow(pool, n, [&](int64_t r, int) {
      float* l = logits.data() + size_t(r) * config_.n_vocab;
      for (int64_t i = 0; i < config_.n_vocab; ++i) l[i] += weights_.output_b[size_t(i)];
    });
  }
  if (config_.logit_scale != 0) {  // Granite, Cohere
    ForEachRow(pool, n, [&](int64_t r, int) {
      Scale(logits.data() + size_t(r) * config_.n_vocab, config_.n_vocab, config_.logit_scale);
    });
  }
  if (config_.final_softcap > 0) {  // Gemma 2's final logit soft-capping
    ForEachRow(pool, n, [&](int64_t r, int) {
      SoftCap(logits.data() + size_t(r) * config_.n_vocab, config_.n_vocab, config_.final_softcap);
    });
  }
}

}  // namespace lockstep
