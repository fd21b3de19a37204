#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "model/architecture_ops.h"
#include "model/attention.h"
#include "tensor/activations.h"
#include "tensor/dequantize.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Below this many rows, per-row element-wise work runs on the calling thread (a pool round trip costs more).
constexpr int64_t kParallelRows = 8;
// RoPE and KV writes run on the pool from this many rows: a key is stored dim-major (tensor/kv_storage.h),
// so writing one touches a line per dim, mostly missing the caches (~1 us a decode row).
constexpr int64_t kParallelKvRows = 2;
// Below this many (position x query dim) products, attention runs on the calling thread.
constexpr int64_t kInlineAttentionWork = 1 << 15;
// Rows of one prefill chunk that share each widened KV block in attention (bounded so that a long chunk still
// splits into enough tasks for every worker).
constexpr int64_t kTileRows = 16;

// pool.Run through a closure holding one reference, which fits std::function's small buffer: no heap
// allocation per call.
template <typename Fn>
void RunTasks(ThreadPool& pool, int64_t tasks, const Fn& fn) {
  pool.Run(tasks, [&fn](int64_t task, int worker) { fn(task, worker); });
}

template <typename Fn>
void ForEachRow(ThreadPool& pool, int64_t rows, const Fn& fn, int64_t parallel_rows = kParallelRows) {
  if (rows < parallel_rows || pool.size() == 1) {
    for (int64_t r = 0; r < rows; ++r) fn(r, 0);
    return;
  }
  RunTasks(pool, rows, fn);
}

// A permutation of [0, n): 0, n-1, 1, n-2, ... Attention tasks visit rows in this order so that the pool's
// contiguous shares mix early and late positions of a causal prefill (a row's cost grows with its position).
inline int64_t ZigZag(int64_t i, int64_t n) { return i % 2 == 0 ? i / 2 : n - 1 - i / 2; }

template <typename T>
void GrowTo(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

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
  int64_t recurrent = 0;
  for (const LayerAttention& layer : config_.layers) {
    any_local_rope_ = any_local_rope_ || layer.local_rope;
    recurrent_index_.push_back(layer.recurrent ? recurrent++ : -1);
  }
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
  const size_t needed = size_t(batch.LogitRows()) * size_t(config_.n_vocab);
  if (outputs.logits.size() < needed) {
    return InvalidArgument("logits buffer holds " + std::to_string(outputs.logits.size()) +
                           " floats, the batch needs " + std::to_string(needed));
  }
  const size_t embedding_floats = size_t(batch.EmbeddingRows()) * size_t(config_.n_embd);
  if (outputs.embeddings.size() < embedding_floats) {
    return InvalidArgument("embeddings buffer holds " + std::to_string(outputs.embeddings.size()) +
                           " floats, the batch needs " + std::to_string(embedding_floats));
  }
  const bool recurrent = config_.RecurrentLayers() > 0;
  if (kv.recurrent_state_floats != config_.RecurrentStateFloats()) {
    return InvalidArgument("KV layout's recurrent state of " + std::to_string(kv.recurrent_state_floats) +
                           " floats does not match the model's " +
                           std::to_string(config_.RecurrentStateFloats()));
  }
  std::vector<int32_t> next_position(recurrent ? batch.sequences.size() : 0, -1);
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& row = batch.rows[i];
    auto where = [i] { return "batch row " + std::to_string(i) + ": "; };  // built only on error
    if (row.token < 0 || row.token >= config_.n_vocab) {
      return InvalidArgument(where() + "token " + std::to_string(row.token) +
                             " is outside the vocabulary (0.." + std::to_string(config_.n_vocab - 1) + ")");
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
  const size_t ff =
      size_t(c.n_expert == 0 ? c.n_ff : std::max(c.n_ff_shared, c.n_layer_dense_lead > 0 ? c.n_ff : 0));
  GrowTo(gate_, r * ff);
  GrowTo(up_, r * ff);
  if (c.n_ff_shared > 0) {
    GrowTo(shared_, r * c.n_embd);
    GrowTo(shared_gate_, r);
  }
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
  // (A recurrent last layer runs every row: each advances its sequence's state.)
  const bool skip_in_last_layer =
      int64_t(output_rows_.size()) < rows && !config_.layers[size_t(config_.n_layer - 1)].recurrent;
  if (skip_in_last_layer) {
    BuildTiles(
        batch, int64_t(output_rows_.size()), [&](int64_t j) { return output_rows_[j]; }, output_tiles_);
  }
  if (config_.RecurrentLayers() > 0) delta_net_.Begin(batch);
  for (int32_t layer = 0; layer < config_.n_layer; ++layer) {
    const bool only_output_rows = skip_in_last_layer && layer == config_.n_layer - 1;
    if (config_.layers[size_t(layer)].recurrent) {
      RecurrentBlock(batch, layer, pool);
    } else {
      AttentionBlock(batch, kv, layer, only_output_rows, pool);
    }
    FeedForwardBlock(only_output_rows ? int64_t(output_rows_.size()) : rows, layer, pool);
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
    if (config_.scale_embeddings) Scale(x_.data() + r * d, d, embedding_scale);
    if (config_.embedding_multiplier != 0) Scale(x_.data() + r * d, d, config_.embedding_multiplier);
  });
}

void Transformer::AttentionBlock(const Batch& batch, const KvLayout& kv, int32_t layer, bool only_output_rows,
                                 ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t d = c.n_embd;
  // This layer's widths as attention runs it (Gemma 4's differ by layer; deepseek2's values from its keys,
  // and in the absorbed form its one latent KV head: ModelConfig::Cache*) and the KV it reads: its own, or
  // for Gemma 4's shared-KV layers an earlier layer's, which it neither computes nor writes.
  const int64_t head_dim = c.CacheHeadDim(layer);
  const int64_t n_head_kv = c.CacheKvHeads(layer);
  const int64_t q_dim = c.n_head * head_dim;
  const int64_t kv_dim = n_head_kv * head_dim;
  const int64_t nv = c.CacheValueDim(layer), v_dim = n_head_kv * nv;  // a value head's width, a row's values
  const int64_t att_dim = c.n_head * nv;                              // attention outputs: [n_head][nv]
  const bool stores_kv = c.StoresKv(layer);
  const KvLayout layer_kv = kv.Layer(c.KvLayer(layer));
  // Rows from the queries on: all, or the output rows gathered to the front (scratch row j =
  // output_rows_[j]).
  const int64_t out_rows = only_output_rows ? int64_t(output_rows_.size()) : rows;
  auto gather = [&](std::vector<float>& buffer, int64_t width) {  // ascending rows, j <= output_rows_[j]
    for (int64_t j = 0; j < out_rows; ++j) {
      if (output_rows_[j] != j) {
        std::memcpy(buffer.data() + j * width, buffer.data() + output_rows_[j] * width,
                    sizeof(float) * width);
      }
    }
  };

  ForEachRow(pool, rows, [&](int64_t r, int) {
    if (c.pre_norms) {
      kernels_.elementwise.rms_norm(x_.data() + r * d, w.attn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
    } else {
      std::memcpy(xn_.data() + r * d, x_.data() + r * d, sizeof(float) * d);  // OLMo 2
    }
  });
  // Gemma 4: a layer without attn_v takes K's projection as V; shared-KV layers project Q alone.
  const bool latent = c.kv_lora_rank > 0;
  const bool value_is_key = stores_kv && !latent && w.wv.data == nullptr;
  const int n_kv_weights = !stores_kv ? 0 : value_is_key ? 1 : 2;
  // attn_output_gate (qwen35): attn_q's rows are [query | gate] per head, split apart in finish_query.
  float* const q_out = c.attn_output_gate ? qg_.data() : q_.data();
  if (latent && c.mla_latent_cache) {  // deepseek2 (no LoRA adapters), absorbed
    mla_.LatentKeysValues(kernels_, c, w, xn_.data(), rows, k_.data(), v_.data(), pool);
    if (only_output_rows) gather(xn_, d);
    mla_.AbsorbedQueries(kernels_, c, w, xn_.data(), out_rows, q_.data(), pool);
  } else if (latent) {  // decompressed
    mla_.KeysValues(kernels_, c, w, xn_.data(), rows, k_.data(), v_.data(), pool);
    if (only_output_rows) gather(xn_, d);
    mla_.Queries(kernels_, c, w, xn_.data(), out_rows, q_.data(), pool);
  } else if (!only_output_rows) {
    const WeightMatrix qkv[] = {w.wq, w.wk, w.wv};
    float* const outs[] = {q_out, k_.data(), v_.data()};
    MatMulShared(kernels_.matmul, std::span(qkv, size_t(1 + n_kv_weights)), xn_.data(), rows,
                 std::span(outs, size_t(1 + n_kv_weights)), pool);
    lora_.Apply(layer, LoraTarget::kQ, xn_.data(), rows, nullptr, q_out, kernels_.matmul, pool);
  } else if (n_kv_weights > 0) {
    const WeightMatrix kv_weights[] = {w.wk, w.wv};
    float* const outs[] = {k_.data(), v_.data()};
    MatMulShared(kernels_.matmul, std::span(kv_weights, size_t(n_kv_weights)), xn_.data(), rows,
                 std::span(outs, size_t(n_kv_weights)), pool);
  }
  if (stores_kv) {
    lora_.Apply(layer, LoraTarget::kK, xn_.data(), rows, nullptr, k_.data(), kernels_.matmul, pool);
    if (value_is_key) std::memcpy(v_.data(), k_.data(), sizeof(float) * size_t(rows * kv_dim));
    lora_.Apply(layer, LoraTarget::kV, xn_.data(), rows, nullptr, v_.data(), kernels_.matmul, pool);
  }
  if (only_output_rows && !latent) {
    gather(xn_, d);
    MatMul(kernels_.matmul, w.wq, xn_.data(), out_rows, q_out, pool);
    lora_.Apply(layer, LoraTarget::kQ, xn_.data(), out_rows, output_rows_.data(), q_out, kernels_.matmul,
                pool);
  }

  // Bias, Q/K head norms, RoPE, then K/V into the row's own sequence blocks. Query row j belongs to batch
  // row `r`.
  const Rope& rope = c.layers[size_t(layer)].local_rope ? local_rope_ : rope_;
  const bool rotate = c.layers[size_t(layer)].rope;  // false on SmolLM3's NoPE layers
  auto norm_heads =
      [&](float* x, int64_t heads,
          const std::vector<float>& norm) {  // qk_norm (Qwen3, Gemma 3; OLMo 2: all heads as one)
        if (c.qk_norm_whole) {
          kernels_.elementwise.rms_norm(x, norm.data(), heads * head_dim, c.rms_eps, x);
          return;
        }
        for (int64_t h = 0; h < heads; ++h) {
          kernels_.elementwise.rms_norm(x + h * head_dim, norm.data(), head_dim, c.rms_eps, x + h * head_dim);
        }
      };
  auto finish_query = [&](int64_t j, int64_t r) {
    float* q = q_.data() + j * q_dim;
    if (c.attn_output_gate) {
      const float* qg = qg_.data() + j * 2 * q_dim;
      for (int64_t h = 0; h < c.n_head; ++h) {
        std::memcpy(q + h * c.head_dim, qg + 2 * h * c.head_dim, sizeof(float) * c.head_dim);
        std::memcpy(q_gate_.data() + j * q_dim + h * c.head_dim, qg + (2 * h + 1) * c.head_dim,
                    sizeof(float) * c.head_dim);
      }
    }
    if (c.qkv_bias) {
      for (int64_t i = 0; i < q_dim; ++i) q[i] += w.bq[i];
    }
    if (c.qk_norm) norm_heads(q, c.n_head, w.q_norm);
    if (rotate && c.mla_latent_cache) {  // heads wider than rope's (the latent's): one at a time
      for (int64_t h = 0; h < c.n_head; ++h)
        rope.Apply(kernels_.elementwise, RowAngles(layer, r), q + h * head_dim, 1);
    } else if (rotate) {
      rope.Apply(kernels_.elementwise, RowAngles(layer, r), q, c.n_head);
    }
    if (c.attn_temperature_scale != 0) {  // mistral3: Llama 4's temperature, by position
      const float t = QueryTemperature(c, batch.rows[r].position);
      for (int64_t i = 0; i < q_dim; ++i) q[i] *= t;
    }
  };
  ForEachRow(
      pool, rows,
      [&](int64_t r, int) {
        if (!stores_kv) {
          if (!only_output_rows) finish_query(r, r);
          return;
        }
        float* k = k_.data() + r * kv_dim;
        float* v = v_.data() + r * v_dim;
        if (c.qkv_bias) {
          for (int64_t i = 0; i < kv_dim; ++i) k[i] += w.bk[i];
          for (int64_t i = 0; i < v_dim; ++i) v[i] += w.bv[i];
        }
        if (c.qk_norm) norm_heads(k, n_head_kv, w.k_norm);
        if (c.v_norm) norm_heads(v, n_head_kv, ones_);  // Gemma 4: no weight (times 1)
        if (rotate) rope.Apply(kernels_.elementwise, RowAngles(layer, r), k, n_head_kv);
        const BatchRow& row = batch.rows[r];
        WriteKv(layer_kv, *batch.sequences[row.sequence].blocks, 0, row.position, k, v);
        if (!only_output_rows) finish_query(r, r);
      },
      kParallelKvRows);
  if (only_output_rows) {
    ForEachRow(pool, out_rows, [&](int64_t j, int) { finish_query(j, output_rows_[j]); });
  }

  // Attention over row tiles: runs of adjacent rows of one sequence at consecutive positions (prefill chunks)
  // share each widened KV block; a decode row is a tile of its own. One task per (tile, KV head) with its
  // group of query heads (each KV block is widened once for the group), or per (tile, query head) only when
  // there are fewer (tile, KV head) pairs than workers. Tiles are visited in ZigZag order (pool shares mix
  // early and late positions). Every (row, head) is computed identically whatever the tiling and grouping.
  const std::vector<RowTile>& tiles = only_output_rows ? output_tiles_ : tiles_;
  const int64_t tile_count = int64_t(tiles.size());
  const int32_t group = int32_t(c.n_head / n_head_kv);
  const float scale = c.attention_scale;
  const AttentionRule rule{int32_t(c.layers[size_t(layer)].window), c.attn_softcap};
  // Fewer pairs than workers: the largest divisor of the group that makes a task per worker (multi-query
  // attention: deepseek2's latent; each task widens its KV head's blocks once for its heads), else 1.
  int64_t heads_per_task = group;
  if (tile_count * n_head_kv < pool.size()) {
    heads_per_task = 1;
    for (int64_t h = group; h > 1; --h) {
      if (group % h == 0 && tile_count * n_head_kv * (group / h) >= pool.size()) {
        heads_per_task = h;
        break;
      }
    }
  }
  // With few (tile, KV head) pairs for the workers (batch-1 decode of a model with few KV heads), a decode
  // row past one attention part is split into its parts, one task per (KV head, part), merged afterwards
  // (flash-decoding; the same bits as unsplit, model/attention.h): the threads share a long context's
  // attention instead of one waiting for another's heads.
  const bool split_long_rows = pool.size() > 1 && tile_count * n_head_kv < 2 * int64_t(pool.size()) &&
                               CanSplitRow(kernels_.attention, layer_kv, group, rule);
  attention_tasks_.clear();
  split_rows_.clear();
  size_t outputs = 0, stats = 0;
  for (int64_t i = 0; i < tile_count; ++i) {
    const int32_t t = int32_t(ZigZag(i, tile_count));
    const int32_t parts = AttentionParts(tiles[t].position);
    if (split_long_rows && tiles[t].rows == 1 && parts > 1) {
      const int32_t split = int32_t(split_rows_.size());
      split_rows_.push_back({t, outputs, stats});
      for (int32_t h = 0; h < c.n_head; h += group) {
        for (int32_t part = 0; part < parts; ++part) attention_tasks_.push_back({t, h, group, part, split});
      }
      outputs += size_t(c.n_head) * parts * nv;
      stats += size_t(c.n_head) * parts;
      continue;
    }
    for (int32_t h = 0; h < c.n_head; h += int32_t(heads_per_task)) {
      attention_tasks_.push_back({t, h, int32_t(heads_per_task)});
    }
  }
  GrowTo(part_outputs_, outputs);
  GrowTo(part_stats_, stats);
  const AttentionKernels& ak = kernels_.attention;
  auto attend = [&](int64_t index, int worker) {  // scratch: the worker's arena (worker 0's when inline)
    const AttentionTask& task = attention_tasks_[index];
    const RowTile& tile = tiles[task.tile];
    const std::vector<std::byte*>& blocks = *batch.sequences[tile.sequence].blocks;
    const int64_t r = tile.first_row;
    const float* q = q_.data() + r * q_dim + task.head * head_dim;
    AttentionRule task_rule = rule;
    if (!w.sinks.empty()) task_rule.sinks = w.sinks.data() + task.head;  // gpt-oss: the task's heads' sinks
    if (task.part < 0) {
      std::byte* scratch = pool.WorkerScratch(
          worker, AttendRowsScratchBytes(ak, layer_kv, tile.position, tile.rows, task.heads, task_rule));
      AttendRows(ak, layer_kv, blocks, 0, task.head / group, tile.position, tile.rows, q, size_t(q_dim),
                 task.heads, scale, att_.data() + r * att_dim + task.head * nv, size_t(att_dim), scratch,
                 task_rule);
      return;
    }
    const SplitRow& split = split_rows_[task.split];
    const size_t parts = size_t(AttentionParts(tile.position));
    AttendRowPart(ak, layer_kv, blocks, 0, task.head / group, tile.position, task.part, q, task.heads, scale,
                  part_outputs_.data() + split.outputs + task.head * parts * nv,
                  part_stats_.data() + split.stats + task.head * parts,
                  pool.WorkerScratch(worker, AttendRowPartScratchBytes(task.heads)));
  };
  // Short contexts: a pool round trip costs more than the work itself (same results either way).
  int64_t work = 0;
  for (const RowTile& tile : tiles) {
    const int64_t n = tile.rows;  // positions [0, position + i] for i < n
    work += (n * int64_t(tile.position) + n * (n + 1) / 2) * q_dim;
  }
  const int64_t task_count = int64_t(attention_tasks_.size());
  if (work < kInlineAttentionWork || pool.size() == 1) {
    for (int64_t task = 0; task < task_count; ++task) attend(task, 0);
  } else {
    RunTasks(pool, task_count, attend);
  }
  for (const SplitRow& split : split_rows_) {
    const RowTile& tile = tiles[split.tile];
    const size_t parts = size_t(AttentionParts(tile.position));
    for (int32_t h = 0; h < c.n_head; h += group) {
      MergeRowParts(ak, layer_kv, tile.position, group, part_outputs_.data() + split.outputs + h * parts * nv,
                    part_stats_.data() + split.stats + h * parts,
                    att_.data() + tile.first_row * att_dim + h * nv,
                    pool.WorkerScratch(0, MergeRowPartsScratchBytes(tile.position, group)),
                    w.sinks.empty() ? nullptr : w.sinks.data() + h);
    }
  }

  if (c.attn_output_gate) {  // qwen35: each output x sigmoid(its gate)
    ForEachRow(pool, out_rows, [&](int64_t j, int) {
      float* a = att_.data() + j * q_dim;
      const float* g = q_gate_.data() + j * q_dim;
      for (int64_t i = 0; i < q_dim; ++i) a[i] *= 1.0f / (1.0f + ExpPolynomial(-g[i]));
    });
  }
  if (only_output_rows) gather(x_, d);
  // The absorbed form's heads: W_vb_h times each head's attention over the latent (model/mla.h).
  const float* att_heads = latent && c.mla_latent_cache
                               ? mla_.AbsorbedOutputs(kernels_, c, w, att_.data(), out_rows, pool)
                               : att_.data();
  MatMul(kernels_.matmul, w.wo, att_heads, out_rows, proj_.data(), pool);
  lora_.Apply(layer, LoraTarget::kO, att_heads, out_rows, only_output_rows ? output_rows_.data() : nullptr,
              proj_.data(), kernels_.matmul, pool);
  ForEachRow(pool, out_rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    float* p = proj_.data() + r * d;
    if (c.attn_output_bias) {
      for (int64_t i = 0; i < d; ++i) p[i] += w.bo[i];  // gpt-oss
    }
    if (c.post_norms)
      kernels_.elementwise.rms_norm(p, w.post_attn_norm.data(), d, c.rms_eps,
                                    p);                                  // Gemma's post_attention_norm
    if (c.residual_multiplier != 0) Scale(p, d, c.residual_multiplier);  // Granite
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::RecurrentBlock(const Batch& batch, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t d = c.n_embd;
  ForEachRow(pool, rows, [&](int64_t r, int) {
    kernels_.elementwise.rms_norm(x_.data() + r * d, w.attn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
  });
  delta_net_.Forward(kernels_, w, recurrent_index_[size_t(layer)], batch, xn_.data(), proj_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    const float* p = proj_.data() + r * d;
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::GatedFeedForward(int64_t rows, int32_t layer, int64_t ff, float* out, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const WeightMatrix gate_up[] = {w.w_gate, w.w_up};
  float* const outs[] = {gate_.data(), up_.data()};
  MatMulShared(kernels_.matmul, gate_up, xn_.data(), rows, outs, pool);
  // Fewer rows than the batch's: the output rows, gathered (the last layer's skip).
  const int64_t* lora_rows = rows < lora_.batch_rows() ? output_rows_.data() : nullptr;
  lora_.Apply(layer, LoraTarget::kGate, xn_.data(), rows, lora_rows, gate_.data(), kernels_.matmul, pool);
  lora_.Apply(layer, LoraTarget::kUp, xn_.data(), rows, lora_rows, up_.data(), kernels_.matmul, pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* g = gate_.data() + r * ff;
    const float* u = up_.data() + r * ff;
    if (c.ffn_activation == FfnActivation::kGeluTanh) {
      kernels_.elementwise.geglu(g, u, ff);  // Gemma's GeGLU
    } else if (c.ffn_activation == FfnActivation::kSwiGluOai) {
      kernels_.elementwise.swiglu_oai(g, u, ff, kSwiGluOaiAlpha, kSwiGluOaiLimit);  // gpt-oss
    } else {
      kernels_.elementwise.swiglu(g, u, ff);
    }
  });
  MatMul(kernels_.matmul, w.w_down, gate_.data(), rows, out, pool);
  lora_.Apply(layer, LoraTarget::kDown, gate_.data(), rows, lora_rows, out, kernels_.matmul, pool);
}

void Transformer::FeedForwardBlock(int64_t rows, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t d = c.n_embd;
  ForEachRow(pool, rows, [&](int64_t r, int) {
    if (c.pre_norms) {
      kernels_.elementwise.rms_norm(x_.data() + r * d, w.ffn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
    } else {
      std::memcpy(xn_.data() + r * d, x_.data() + r * d, sizeof(float) * d);  // OLMo 2
    }
  });
  if (!c.FeedForwardExperts(layer)) {
    GatedFeedForward(rows, layer, c.LayerFf(layer), proj_.data(), pool);
  } else {
    moe_.Forward(kernels_, c, w, xn_.data(), rows, proj_.data(), pool);
    if (c.n_ff_shared > 0 && !c.shared_expert_gate) {
      // deepseek2: + the shared experts' output as it is (a separate sum, then one add per element, as
      // ik_llama.cpp adds its two outputs).
      GatedFeedForward(rows, layer, c.n_ff_shared, shared_.data(), pool);
      ForEachRow(pool, rows, [&](int64_t r, int) {
        float* p = proj_.data() + r * d;
        const float* s = shared_.data() + r * d;
        for (int64_t i = 0; i < d; ++i) p[i] += s[i];
      });
    } else if (c.n_ff_shared > 0) {
      // qwen2moe: + the shared expert's output x sigmoid(ffn_gate_inp_shexp . xn) (one fused multiply-add
      // per element: the same bits on every CPU).
      GatedFeedForward(rows, layer, c.n_ff_shared, shared_.data(), pool);
      MatMul(kernels_.matmul, w.shared_gate, xn_.data(), rows, shared_gate_.data(), pool);
      ForEachRow(pool, rows, [&](int64_t r, int) {
        const float gate = 1.0f / (1.0f + ExpPolynomial(-shared_gate_[size_t(r)]));
        float* p = proj_.data() + r * d;
        const float* s = shared_.data() + r * d;
        for (int64_t i = 0; i < d; ++i) p[i] = std::fma(s[i], gate, p[i]);
      });
    }
  }
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    float* p = proj_.data() + r * d;
    if (c.post_norms)
      kernels_.elementwise.rms_norm(p, w.post_ffn_norm.data(), d, c.rms_eps, p);  // Gemma's post_ffw_norm
    if (c.residual_multiplier != 0) Scale(p, d, c.residual_multiplier);           // Granite
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
  // Gemma 4: the per-layer token inputs, then the layer's output scale. Fewer rows than the batch's: the
  // output rows, gathered (the last layer's skip).
  if (c.n_embd_per_layer > 0) {
    const int64_t* rows_of = rows < int64_t(lora_.batch_rows()) ? output_rows_.data() : nullptr;
    per_layer_inputs_.Apply(kernels_, c, w, layer, x_.data(), rows, rows_of, pool);
  }
  if (!w.out_scale.empty()) {
    ForEachRow(pool, rows, [&](int64_t r, int) { Scale(x_.data() + r * d, d, w.out_scale[0]); });
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
      kernels_.elementwise.rms_norm(x, weights_.output_norm.data(), d, config_.rms_eps,
                                    outputs.embeddings.data() + embedded * d);
      ++embedded;
    }
    if (!row.wants_logits) continue;
    kernels_.elementwise.rms_norm(x, weights_.output_norm.data(), d, config_.rms_eps, xn_.data() + n * d);
    ++n;
  }
  std::span<float> logits = outputs.logits;
  if (n > 0) MatMul(kernels_.matmul, weights_.output, xn_.data(), n, logits.data(), pool);
  lora_.Apply(0, LoraTarget::kOutput, xn_.data(), n, nullptr, logits.data(), kernels_.matmul, pool);
  if (config_.logit_divisor != 0) {  // Granite: times 1 / logit_scale, as llama.cpp
    ForEachRow(pool, n, [&](int64_t r, int) {
      Scale(logits.data() + size_t(r) * config_.n_vocab, config_.n_vocab, 1.0f / config_.logit_divisor);
    });
  }
  if (config_.final_softcap > 0) {  // Gemma 2's final logit soft-capping
    ForEachRow(pool, n, [&](int64_t r, int) {
      SoftCap(logits.data() + size_t(r) * config_.n_vocab, config_.n_vocab, config_.final_softcap);
    });
  }
}

}  // namespace lockstep
