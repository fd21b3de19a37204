#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "model/attention.h"
#include "model/vec_math.h"
#include "tensor/dequantize.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Below this many rows, per-row element-wise work runs on the calling thread (a pool round trip costs more).
constexpr int64_t kParallelRows = 8;
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
void ForEachRow(ThreadPool& pool, int64_t rows, const Fn& fn) {
  if (rows < kParallelRows || pool.size() == 1) {
    for (int64_t r = 0; r < rows; ++r) fn(r, 0);
    return;
  }
  RunTasks(pool, rows, fn);
}

// Sum of x[i]^2 in double: element i goes to partial sum i % 16 (in index order), the 16 partial sums are
// then added pairwise (j + 8 into j, then j + 4, ...). A fixed order, so the same row always gives the same
// bits; the independent partial sums let the compiler vectorise the loop (one chain over all n was ~8x
// slower).
double SumOfSquares(const float* x, int64_t n) {
  constexpr int kPartials = 16;
  double partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= n; i += kPartials) {
    for (int j = 0; j < kPartials; ++j) partial[j] += double(x[i + j]) * double(x[i + j]);
  }
  for (int j = 0; i + j < n; ++j) partial[j] += double(x[i + j]) * double(x[i + j]);
  for (int width = kPartials / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) partial[j] += partial[j + width];
  }
  return partial[0];
}

// out = x / sqrt(mean(x^2) + eps) * w.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(SumOfSquares(x, n) / double(n)) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

// A permutation of [0, n): 0, n-1, 1, n-2, ... Attention tasks visit rows in this order so that the pool's
// contiguous shares mix early and late positions of a causal prefill (a row's cost grows with its position).
inline int64_t ZigZag(int64_t i, int64_t n) { return i % 2 == 0 ? i / 2 : n - 1 - i / 2; }

template <typename T>
void GrowTo(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

Transformer::Transformer(std::shared_ptr<const GgufFile> file, ModelConfig config, ModelWeights weights)
    : Model(std::move(file)), config_(std::move(config)), weights_(std::move(weights)), rope_(config_) {}

Status Transformer::Validate(const Batch& batch, const KvLayout& kv, std::span<float> logits) const {
  if (kv.n_layer != config_.n_layer || kv.n_kv_head != config_.n_head_kv || kv.head_dim != config_.head_dim ||
      kv.block_tokens <= 0) {
    return InvalidArgument("KV layout (layers " + std::to_string(kv.n_layer) + ", kv heads " +
                           std::to_string(kv.n_kv_head) + ", head dim " + std::to_string(kv.head_dim) +
                           ", block tokens " + std::to_string(kv.block_tokens) +
                           ") does not match the model");
  }
  const size_t needed = size_t(batch.LogitRows()) * size_t(config_.n_vocab);
  if (logits.size() < needed) {
    return InvalidArgument("logits buffer holds " + std::to_string(logits.size()) +
                           " floats, the batch needs " + std::to_string(needed));
  }
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
    const std::vector<std::byte*>& blocks = *batch.sequences[row.sequence].blocks;
    if (row.position < 0 || int64_t(row.position) >= int64_t(blocks.size()) * kv.block_tokens) {
      return OutOfRange(where() + "position " + std::to_string(row.position) + " is not covered by its " +
                        std::to_string(blocks.size()) + " KV blocks");
    }
    for (int64_t b = 0; b <= row.position / kv.block_tokens; ++b) {
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
  GrowTo(q_, r * c.q_dim());
  GrowTo(att_, r * c.q_dim());
  GrowTo(k_, r * c.kv_dim());
  GrowTo(v_, r * c.kv_dim());
  GrowTo(gate_, r * c.n_ff);
  GrowTo(up_, r * c.n_ff);
  GrowTo(row_cos_sin_, r * 2 * rope_.pairs());
}

Status Transformer::Forward(const Batch& batch, const KvLayout& kv, std::span<float> logits,
                            ThreadPool& pool) {
  LOCKSTEP_RETURN_IF_ERROR(Validate(batch, kv, logits));
  const int64_t rows = static_cast<int64_t>(batch.rows.size());
  if (rows == 0) return Status::Ok();
  EnsureScratch(rows);

  Embed(batch, pool);
  // RoPE angles and attention row tiles depend only on the batch: once for all layers.
  ForEachRow(pool, rows, [&](int64_t r, int) {
    rope_.Angles(batch.rows[r].position, row_cos_sin_.data() + size_t(r) * 2 * rope_.pairs());
  });
  tiles_.clear();
  for (int64_t r = 0; r < rows;) {
    int64_t end = r + 1;
    while (end < rows && end - r < kTileRows && batch.rows[end].sequence == batch.rows[r].sequence &&
           batch.rows[end].position == batch.rows[end - 1].position + 1) {
      ++end;
    }
    tiles_.push_back({r, int32_t(end - r)});
    r = end;
  }
  for (int32_t layer = 0; layer < config_.n_layer; ++layer) {
    AttentionBlock(batch, kv, layer, pool);
    FeedForwardBlock(rows, layer, pool);
  }
  Logits(batch, logits, pool);
  return Status::Ok();
}

void Transformer::Embed(const Batch& batch, ThreadPool& pool) {
  const GgufTensorInfo& embd = *weights_.token_embd;
  const int64_t d = config_.n_embd;
  const size_t row_bytes = RowBytes(embd.type, d);
  ForEachRow(pool, int64_t(batch.rows.size()), [&](int64_t r, int) {
    DequantizeRow(embd.type, embd.data + size_t(batch.rows[r].token) * row_bytes, x_.data() + r * d, d);
  });
}

void Transformer::AttentionBlock(const Batch& batch, const KvLayout& kv, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t d = c.n_embd;
  const int64_t q_dim = c.q_dim();
  const int64_t kv_dim = c.kv_dim();

  ForEachRow(pool, rows, [&](int64_t r, int) {
    RmsNorm(x_.data() + r * d, w.attn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
  });
  {
    const WeightMatrix qkv[] = {w.wq, w.wk, w.wv};
    float* const outs[] = {q_.data(), k_.data(), v_.data()};
    MatMulShared(qkv, xn_.data(), rows, outs, pool);
  }

  // Bias, RoPE, then K/V into the row's own sequence blocks.
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* q = q_.data() + r * q_dim;
    float* k = k_.data() + r * kv_dim;
    float* v = v_.data() + r * kv_dim;
    if (c.qkv_bias) {
      for (int64_t i = 0; i < q_dim; ++i) q[i] += w.bq[i];
      for (int64_t i = 0; i < kv_dim; ++i) k[i] += w.bk[i];
      for (int64_t i = 0; i < kv_dim; ++i) v[i] += w.bv[i];
    }
    const float* cos_sin = row_cos_sin_.data() + size_t(r) * 2 * rope_.pairs();
    const BatchRow& row = batch.rows[r];
    rope_.Apply(cos_sin, q, c.n_head);
    rope_.Apply(cos_sin, k, c.n_head_kv);
    WriteKv(kv, *batch.sequences[row.sequence].blocks, layer, row.position, k, v);
  });

  // Attention over row tiles: runs of adjacent rows of one sequence at consecutive positions (prefill chunks)
  // share each widened KV block; a decode row is a tile of its own. One task per (tile, KV head) with its
  // group of query heads (each KV block is widened once for the group), or per (tile, query head) only when
  // there are fewer (tile, KV head) pairs than workers. Every (row, head) is computed identically whatever
  // the tiling and grouping.
  const int64_t tiles = int64_t(tiles_.size());
  const int64_t group = c.n_head / c.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t heads_per_task = tiles * c.n_head_kv >= pool.size() ? group : 1;
  const int64_t tasks_per_tile = c.n_head / heads_per_task;
  auto attend = [&](int64_t task, int) {
    const RowTile& tile = tiles_[ZigZag(task / tasks_per_tile, tiles)];
    const int64_t r = tile.first_row;
    const int64_t h = task % tasks_per_tile * heads_per_task;  // first query head
    const BatchRow& row = batch.rows[r];
    AttendRows(kv, *batch.sequences[row.sequence].blocks, layer, int32_t(h / group), row.position, tile.rows,
               q_.data() + r * q_dim + h * c.head_dim, size_t(q_dim), int32_t(heads_per_task), scale,
               att_.data() + r * q_dim + h * c.head_dim, size_t(q_dim));
  };
  // Short contexts: a pool round trip costs more than the work itself (same results either way).
  int64_t work = 0;
  for (const BatchRow& row : batch.rows) work += int64_t(row.position + 1) * q_dim;
  if (work < kInlineAttentionWork || pool.size() == 1) {
    for (int64_t task = 0; task < tiles * tasks_per_tile; ++task) attend(task, 0);
  } else {
    RunTasks(pool, tiles * tasks_per_tile, attend);
  }

  MatMul(w.wo, att_.data(), rows, proj_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    const float* p = proj_.data() + r * d;
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::FeedForwardBlock(int64_t rows, int32_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t d = c.n_embd;
  const int64_t ff = c.n_ff;
  ForEachRow(pool, rows, [&](int64_t r, int) {
    RmsNorm(x_.data() + r * d, w.ffn_norm.data(), d, c.rms_eps, xn_.data() + r * d);
  });
  {
    const WeightMatrix gate_up[] = {w.w_gate, w.w_up};
    float* const outs[] = {gate_.data(), up_.data()};
    MatMulShared(gate_up, xn_.data(), rows, outs, pool);
  }
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* g = gate_.data() + r * ff;
    const float* u = up_.data() + r * ff;
    SwiGlu(g, u, ff);
  });
  MatMul(w.w_down, gate_.data(), rows, proj_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r, int) {
    float* x = x_.data() + r * d;
    const float* p = proj_.data() + r * d;
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
  });
}

void Transformer::Logits(const Batch& batch, std::span<float> logits, ThreadPool& pool) {
  const int64_t d = config_.n_embd;
  int64_t n = 0;
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    if (!batch.rows[r].wants_logits) continue;
    RmsNorm(x_.data() + r * d, weights_.output_norm.data(), d, config_.rms_eps, xn_.data() + n * d);
    ++n;
  }
  if (n > 0) MatMul(weights_.output, xn_.data(), n, logits.data(), pool);
}

}  // namespace lockstep
