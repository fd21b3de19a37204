#include "model/per_layer_inputs.h"

#include <cmath>

#include "model/architecture_ops.h"
#include "tensor/dequantize.h"
#include "tensor/matmul.h"

namespace lockstep {

void PerLayerInputs::Compute(const Kernels& k, const ModelConfig& c, const ModelWeights& w,
                             const Batch& batch, const float* x, ThreadPool& pool) {
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t n = c.n_embd_per_layer;
  const int64_t width = n * c.n_layer;
  if (inputs_.size() < size_t(rows * width)) inputs_.resize(size_t(rows * width));
  raw_.resize(size_t(width));
  MatMul(k.matmul, w.per_layer_model_proj, x, rows, inputs_.data(), pool);
  const GgufTensorInfo& table = *w.per_layer_embd;
  const size_t row_bytes = RowBytes(table.type, width);
  const float norm_eps = float(c.n_embd) * c.rms_eps;
  const float raw_scale = std::sqrt(float(n));
  const float mix_scale = 1.0f / std::sqrt(2.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* in = inputs_.data() + r * width;
    DequantizeRow(table.type, table.data + size_t(batch.rows[size_t(r)].token) * row_bytes, raw_.data(),
                  width);
    for (int64_t l = 0; l < c.n_layer; ++l) {
      k.elementwise.rms_norm(in + l * n, w.per_layer_proj_norm.data(), n, norm_eps, in + l * n);
    }
    for (int64_t i = 0; i < width; ++i) in[i] = (in[i] + raw_[size_t(i)] * raw_scale) * mix_scale;
  }
}

void PerLayerInputs::Apply(const Kernels& k, const ModelConfig& c, const LayerWeights& lw, int32_t layer,
                           float* x, int64_t rows, const int64_t* rows_of, ThreadPool& pool) {
  const int64_t n = c.n_embd_per_layer;
  const int64_t d = c.n_embd;
  if (gate_.size() < size_t(rows * n)) gate_.resize(size_t(rows * n));
  if (proj_.size() < size_t(rows * d)) proj_.resize(size_t(rows * d));
  MatMul(k.matmul, lw.pl_gate, x, rows, gate_.data(), pool);
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t r = rows_of != nullptr ? rows_of[j] : j;
    k.elementwise.geglu(gate_.data() + j * n, inputs_.data() + (r * c.n_layer + layer) * n, n);
  }
  MatMul(k.matmul, lw.pl_proj, gate_.data(), rows, proj_.data(), pool);
  for (int64_t j = 0; j < rows; ++j) {
    float* p = proj_.data() + j * d;
    k.elementwise.rms_norm(p, lw.pl_post_norm.data(), d, c.rms_eps, p);
    for (int64_t i = 0; i < d; ++i) x[j * d + i] += p[i];
  }
}

}  // namespace lockstep
