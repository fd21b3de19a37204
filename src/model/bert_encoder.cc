#include "model/bert_encoder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/batch_checks.h"
#include "tensor/dequantize.h"
#include "tensor/float16.h"
#include "tensor/matmul.h"
#include "tensor/norms.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// GELU's tanh form in f32, as llama.cpp's CPU backend tabulates it.
float GeluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

void AddBias(float* x, int64_t rows, const std::vector<float>& bias) {
  const int64_t n = int64_t(bias.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) x[r * n + i] += bias[size_t(i)];
  }
}

// x[r] <- LayerNorm(x[r] + y[r]) for every row, in parallel.
void AddAndNorm(float* x, const float* y, int64_t rows, int64_t d, const std::vector<float>& w,
                const std::vector<float>& b, float eps, ThreadPool& pool) {
  pool.Run(rows, [&](int64_t r, int) {
    float* xr = x + r * d;
    for (int64_t i = 0; i < d; ++i) xr[i] = y[r * d + i] + xr[i];
    LayerNorm(xr, w.data(), b.data(), d, eps, xr);
  });
}

}  // namespace

BertEncoder::BertEncoder(std::shared_ptr<const GgufFile> file, ModelConfig config, ModelWeights weights,
                         const Kernels& kernels)
    : Model(std::move(file)),
      config_(std::move(config)),
      weights_(std::move(weights)),
      kernels_(kernels),
      rope_(config_),
      alibi_slopes_(config_.AlibiSlopes()) {
  gelu_f16_.resize(size_t{1} << 16);
  for (size_t h = 0; h < gelu_f16_.size(); ++h) {
    gelu_f16_[h] = F16ToF32(F32ToF16(GeluTanh(F16ToF32(uint16_t(h)))));
  }
}

Status BertEncoder::Plan(const Batch& batch, const ForwardOutputs& outputs) {
  if (batch.LogitRows() > 0) {
    return InvalidArgument("bert is an encoder: it gives embeddings, not logits (no row may want logits)");
  }
  LOCKSTEP_RETURN_IF_ERROR(
      CheckOutputBuffer("embeddings", outputs.embeddings, batch.EmbeddingRows(), config_.n_embd));
  sequences_.assign(batch.sequences.size(), {});
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& row = batch.rows[i];
    auto where = [i] { return BatchRowWhere(i); };  // built only on error
    LOCKSTEP_RETURN_IF_ERROR(CheckRowToken(row, i, config_.n_vocab));
    if (row.sequence < 0 || size_t(row.sequence) >= batch.sequences.size()) {
      return InvalidArgument(where() + "sequence " + std::to_string(row.sequence) + " is not in the batch");
    }
    LOCKSTEP_RETURN_IF_ERROR(CheckRowPositionEmbedding(row, i, config_.n_ctx_train));
    std::vector<int64_t>& rows = sequences_[size_t(row.sequence)];
    if (row.position != int64_t(rows.size())) {
      return InvalidArgument(where() + "sequence " + std::to_string(row.sequence) + " has position " +
                             std::to_string(row.position) + " where " + std::to_string(rows.size()) +
                             " was due: a bidirectional model (bert) needs every sequence whole, positions "
                             "0..n-1, in one forward pass");
    }
    rows.push_back(int64_t(i));
  }
  rows_ = int64_t(batch.rows.size());
  const size_t d = size_t(config_.n_embd);
  for (std::vector<float>* v : {&x_, &q_, &att_, &proj_}) v->resize(size_t(rows_) * d);
  k_.resize(size_t(rows_) * size_t(config_.kv_dim()));
  v_.resize(size_t(rows_) * size_t(config_.kv_dim()));
  up_.resize(size_t(rows_) * size_t(config_.n_ff));
  if (!config_.ungated_ffn) gate_.resize(size_t(rows_) * size_t(config_.n_ff));
  if (Rotates()) cos_sin_.resize(size_t(rows_) * 2 * size_t(rope_.pairs()));
  return Status::Ok();
}

void BertEncoder::Embed(const Batch& batch, ThreadPool& pool) {
  const GgufTensorInfo& embd = *weights_.token_embd;
  const int64_t d = config_.n_embd;
  const size_t row_bytes = RowBytes(embd.type, d);
  pool.Run(rows_, [&](int64_t r, int) {
    const BatchRow& row = batch.rows[size_t(r)];
    float* x = x_.data() + r * d;
    DequantizeRow(embd.type, embd.data + size_t(row.token) * row_bytes, x, d);
    if (config_.learned_positions) {
      const float* pos = weights_.position_embd.data() + int64_t(row.position) * d;
      for (int64_t i = 0; i < d; ++i) x[i] = (x[i] + weights_.token_type0[size_t(i)]) + pos[i];
    } else {
      for (int64_t i = 0; i < d; ++i) x[i] += weights_.token_type0[size_t(i)];
    }
    LayerNorm(x, weights_.embd_norm.data(), weights_.embd_norm_b.data(), d, config_.rms_eps, x);
    if (Rotates()) rope_.Angles(row.position, cos_sin_.data() + size_t(r) * 2 * size_t(rope_.pairs()));
  });
}

// Per (sequence, head) task, with the attention kernels of the table (tensor/attention_kernels.h): the head's
// keys of the sequence widened transposed and its values gathered ([n][head_dim]) into per-worker scratch,
// then per tile of up to kBertQueryTile query rows: their scores over all n keys (DotKeys), one softmax per
// row (Softmax) and the weighted sum of values in key order (AccumulateValues). Each query's result is that
// of a call with it alone, so tiling never changes it.
void BertEncoder::Attention(int64_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[size_t(layer)];
  const int64_t d = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const int hd = int(c.head_dim);
  const WeightMatrix qkv[] = {w.wq, w.wk, w.wv};
  float* const outs[] = {q_.data(), k_.data(), v_.data()};
  MatMulShared(kernels_.matmul, qkv, x_.data(), rows_, outs, pool);
  AddBias(q_.data(), rows_, w.bq);
  AddBias(k_.data(), rows_, w.bk);
  AddBias(v_.data(), rows_, w.bv);
  if (Rotates()) {
    pool.Run(rows_, [&](int64_t r, int) {
      const float* angles = cos_sin_.data() + size_t(r) * 2 * size_t(rope_.pairs());
      rope_.Apply(kernels_.elementwise, angles, q_.data() + r * q_dim, c.n_head);
      rope_.Apply(kernels_.elementwise, angles, k_.data() + r * kv_dim, c.n_head_kv);
    });
  }
  const int64_t heads = c.n_head, group = c.n_head / c.n_head_kv;
  const int64_t n_seq = int64_t(sequences_.size());
  const AttentionKernels& kernels = kernels_.attention;
  constexpr int kBertQueryTile = 8;
  const auto round16 = [](size_t floats) { return (floats + 15) / 16 * 16; };
  pool.Run(n_seq * heads, [&](int64_t task, int worker) {
    const std::vector<int64_t>& rows = sequences_[size_t(task / heads)];
    const int64_t head = task % heads, kv_head = head / group;
    const int32_t n = int32_t(rows.size());
    if (n == 0) return;
    const size_t stride = round16(size_t(n));  // scores per query, room for the softmax's padding
    const size_t key_floats = attention::TransposedKeyFloats(n, hd), value_floats = round16(size_t(n) * hd);
    const size_t tile_floats = round16(size_t(kBertQueryTile) * hd);
    float* keys = reinterpret_cast<float*>(pool.WorkerScratch(
        worker, (key_floats + value_floats + 2 * tile_floats + kBertQueryTile * stride) * sizeof(float)));
    float* values = keys + key_floats;
    float* queries = values + value_floats;
    float* out = queries + tile_floats;
    float* scores = out + tile_floats;
    std::fill(keys, keys + key_floats, 0.0f);
    for (int32_t j = 0; j < n; ++j) {
      const float* k = k_.data() + rows[size_t(j)] * kv_dim + kv_head * hd;
      float* lane =
          keys + size_t(j / attention::kKeyLanes) * attention::kKeyLanes * hd + j % attention::kKeyLanes;
      for (int e = 0; e < hd; ++e) lane[size_t(e) * attention::kKeyLanes] = k[e];
      const float* v = v_.data() + rows[size_t(j)] * kv_dim + kv_head * hd;
      std::copy(v, v + hd, values + size_t(j) * hd);
    }
    for (int32_t i0 = 0; i0 < n; i0 += kBertQueryTile) {
      const int tile = std::min(kBertQueryTile, n - i0);
      for (int t = 0; t < tile; ++t) {
        const float* q = q_.data() + rows[size_t(i0 + t)] * q_dim + head * hd;
        std::copy(q, q + hd, queries + size_t(t) * hd);
      }
      kernels.dot_keys(queries, size_t(hd), tile, keys, n, hd, c.attention_scale, scores, stride);
      if (!alibi_slopes_.empty()) {  // jina-bert-v2: + slope * -|i - j|, after the scale (llama.cpp's mask)
        const float slope = alibi_slopes_[size_t(head)];
        for (int t = 0; t < tile; ++t) {
          float* s = scores + size_t(t) * stride;
          for (int32_t j = 0; j < n; ++j) s[j] = std::fma(slope, -float(std::abs(i0 + t - j)), s[j]);
        }
      }
      for (int t = 0; t < tile; ++t) kernels.softmax(scores + size_t(t) * stride, n);
      std::fill(out, out + size_t(tile) * hd, 0.0f);
      kernels.accumulate_values(scores, stride, tile, values, n, hd, out, size_t(hd));
      for (int t = 0; t < tile; ++t) {
        std::copy(out + size_t(t) * hd, out + size_t(t + 1) * hd,
                  att_.data() + rows[size_t(i0 + t)] * q_dim + head * hd);
      }
    }
  });
  MatMul(kernels_.matmul, w.wo, att_.data(), rows_, proj_.data(), pool);
  AddBias(proj_.data(), rows_, w.bo);
  AddAndNorm(x_.data(), proj_.data(), rows_, d, w.post_attn_norm, w.post_attn_norm_b, c.rms_eps, pool);
}

void BertEncoder::FeedForward(int64_t layer, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[size_t(layer)];
  const int64_t ff = c.n_ff;
  if (!c.ungated_ffn) {  // nomic-bert: SwiGLU(gate, up); jina-bert-v2: GELU(gate) * up
    const WeightMatrix gate_up[] = {w.w_gate, w.w_up};
    float* const outs[] = {gate_.data(), up_.data()};
    MatMulShared(kernels_.matmul, gate_up, x_.data(), rows_, outs, pool);
    pool.Run(rows_, [&](int64_t r, int) {
      float* g = gate_.data() + r * ff;
      const float* u = up_.data() + r * ff;
      if (c.ffn_activation == FfnActivation::kGeluTanh) {
        for (int64_t i = 0; i < ff; ++i) g[i] = Gelu(g[i]) * u[i];
      } else {
        kernels_.elementwise.swiglu(g, u, ff);
      }
    });
    MatMul(kernels_.matmul, w.w_down, gate_.data(), rows_, proj_.data(), pool);
  } else {
    MatMul(kernels_.matmul, w.w_up, x_.data(), rows_, up_.data(), pool);
    pool.Run(rows_, [&](int64_t r, int) {
      float* u = up_.data() + r * ff;
      for (int64_t i = 0; i < ff; ++i) u[i] = Gelu(u[i] + w.b_up[size_t(i)]);
    });
    MatMul(kernels_.matmul, w.w_down, up_.data(), rows_, proj_.data(), pool);
  }
  AddBias(proj_.data(), rows_, w.b_down);
  AddAndNorm(x_.data(), proj_.data(), rows_, c.n_embd, w.post_ffn_norm, w.post_ffn_norm_b, c.rms_eps, pool);
}

Status BertEncoder::Forward(const Batch& batch, const KvLayout& /*kv*/, const ForwardOutputs& outputs,
                            ThreadPool& pool) {
  LOCKSTEP_RETURN_IF_ERROR(Plan(batch, outputs));
  if (rows_ == 0) return Status::Ok();
  Embed(batch, pool);
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    Attention(l, pool);
    FeedForward(l, pool);
  }
  const int64_t d = config_.n_embd;
  int64_t out = 0;
  for (int64_t r = 0; r < rows_; ++r) {
    if (!batch.rows[size_t(r)].wants_embedding) continue;
    std::copy(x_.data() + r * d, x_.data() + (r + 1) * d, outputs.embeddings.data() + out * d);
    ++out;
  }
  return Status::Ok();
}

}  // namespace lockstep
