// Transformer::AttentionBlock: one attention layer over the batch (projections, RoPE, K/V writes, attention
// tiles and split decode rows, output projection); model/transformer.h has the data flow.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/architecture_ops.h"
#include "model/attention.h"
#include "model/row_tasks.h"
#include "model/transformer.h"
#include "tensor/activations.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// RoPE and KV writes run on the pool from this many rows: a key is stored dim-major (tensor/kv_storage.h),
// so writing one touches a line per dim, mostly missing the caches (~1 us a decode row).
constexpr int64_t kParallelKvRows = 2;
// Below this many (position x query dim) products, attention runs on the calling thread.
constexpr int64_t kInlineAttentionWork = 1 << 15;

// A permutation of [0, n): 0, n-1, 1, n-2, ... Attention tasks visit rows in this order so that the pool's
// contiguous shares mix early and late positions of a causal prefill (a row's cost grows with its position).
inline int64_t ZigZag(int64_t i, int64_t n) { return i % 2 == 0 ? i / 2 : n - 1 - i / 2; }

// x[i] <- min(max(x[i], -limit), limit), as ggml_clamp (olmo's clamp_kqv).
inline void Clamp(float* x, int64_t n, float limit) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::fmin(std::fmax(x[i], -limit), limit);
}

}  // namespace

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
      Norm(x_.data() + r * d, w.attn_norm.data(), w.attn_norm_b, d, xn_.data() + r * d);
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
        for (int64_t h = 0; h < heads; ++h) {  // Command R+: each head its own weights
          Norm(x + h * head_dim, norm.data() + (c.qk_norm_per_head ? h * head_dim : 0), {}, head_dim,
               x + h * head_dim);
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
    if (c.clamp_kqv > 0) Clamp(q, q_dim, c.clamp_kqv);  // olmo (OLMo-7B-0424)
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
        if (c.clamp_kqv > 0) {
          Clamp(k, kv_dim, c.clamp_kqv);
          Clamp(v, v_dim, c.clamp_kqv);
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
  AttentionRule rule{int32_t(c.layers[size_t(layer)].window), c.attn_softcap};
  if (!alibi_slopes_.empty()) rule.alibi_slopes = alibi_slopes_.data();  // bloom; each task its heads' slopes
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
    if (rule.alibi_slopes != nullptr) task_rule.alibi_slopes = rule.alibi_slopes + task.head;
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
    // GPT-NeoX's and Falcon-40B's parallel FFN: its own norm of the layer's input, before the attention joins
    // it.
    if (c.parallel_ffn_norm) Norm(x, w.ffn_norm.data(), w.ffn_norm_b, d, xn_.data() + r * d);
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::LinearAttentionBlock(int64_t rows, int32_t layer, ThreadPool& pool) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t d = config_.n_embd;
  ForEachRow(pool, rows, [&](int64_t r, int) {
    Norm(x_.data() + r * d, w.attn_norm.data(), w.attn_norm_b, d, xn_.data() + r * d);
  });
  MatMul(kernels_.matmul, w.wo, xn_.data(), rows, proj_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {  // (no LoRA adapters: model/model.cc refuses them for deci)
    float* x = x_.data() + r * d;
    const float* p = proj_.data() + r * d;
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

}  // namespace lockstep
