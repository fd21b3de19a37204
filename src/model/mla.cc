#include "model/mla.h"

#include <cstring>

#include "model/row_tasks.h"
#include "tensor/matmul.h"
#include "tensor/matmul_grouped.h"
#include "tensor/thread_pool.h"

namespace lockstep {

void LatentAttention::ProjectQueries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                                     const float* xn, int64_t rows, ThreadPool& pool) {
  GrowTo(wide_, size_t(rows * c.q_dim()));
  if (c.q_lora_rank > 0) {
    const int64_t n = c.q_lora_rank;
    GrowTo(compressed_, size_t(rows * n));
    MatMul(kernels.matmul, w.wq_a, xn, rows, compressed_.data(), pool);
    ForEachRow(pool, rows, [&](int64_t r) {
      float* x = compressed_.data() + r * n;
      kernels.elementwise.rms_norm(x, w.q_a_norm.data(), n, c.rms_eps, x);
    });
    MatMul(kernels.matmul, w.wq_b, compressed_.data(), rows, wide_.data(), pool);
  } else {
    MatMul(kernels.matmul, w.wq, xn, rows, wide_.data(), pool);
  }
}

void LatentAttention::PerHead(const Kernels& kernels, const std::vector<WeightMatrix>& ws, const float* x,
                              int64_t x_row, int64_t x_head, int64_t rows, float* y, int64_t y_row,
                              int64_t y_head, ThreadPool& pool) {
  const int64_t heads = int64_t(ws.size()), in = ws[0].in, out = ws[0].out;
  GrowTo(heads_in_, size_t(heads * rows * in));
  GrowTo(heads_out_, size_t(heads * rows * out));
  ForEachRow(pool, rows, [&](int64_t r) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(heads_in_.data() + (h * rows + r) * in, x + r * x_row + h * x_head, sizeof(float) * in);
    }
  });
  groups_.resize(size_t(heads));
  ys_.resize(size_t(heads));
  for (int64_t h = 0; h < heads; ++h) {
    ys_[size_t(h)] = heads_out_.data() + h * rows * out;
    groups_[size_t(h)] = MatMulGroup{std::span(&ws[size_t(h)], 1), heads_in_.data() + h * rows * in, rows,
                                     std::span(&ys_[size_t(h)], 1)};
  }
  MatMulGrouped(kernels.matmul, groups_, pool);
  ForEachRow(pool, rows, [&](int64_t r) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(y + r * y_row + h * y_head, heads_out_.data() + (h * rows + r) * out, sizeof(float) * out);
    }
  });
}

void LatentAttention::AbsorbedQueries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                                      const float* xn, int64_t rows, float* q, ThreadPool& pool) {
  const int64_t rope = c.rope_dim, nope = c.head_dim - c.rope_dim, width = rope + c.kv_lora_rank;
  ProjectQueries(kernels, c, w, xn, rows, pool);
  // Each head's W_kb_h^T q_nope_h after its rope dims, then the rope dims themselves.
  PerHead(kernels, w.k_b_heads, wide_.data(), c.q_dim(), c.head_dim, rows, q + rope, c.n_head * width, width,
          pool);
  ForEachRow(pool, rows, [&](int64_t r) {
    for (int64_t h = 0; h < c.n_head; ++h) {
      std::memcpy(q + (r * c.n_head + h) * width, wide_.data() + r * c.q_dim() + h * c.head_dim + nope,
                  sizeof(float) * rope);
    }
  });
}

void LatentAttention::LatentKeysValues(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                                       const float* xn, int64_t rows, float* k, float* v, ThreadPool& pool) {
  const int64_t rank = c.kv_lora_rank, rope = c.rope_dim, compressed = rank + rope;
  GrowTo(compressed_, size_t(rows * compressed));
  MatMul(kernels.matmul, w.wkv_a, xn, rows, compressed_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r) {
    const float* from = compressed_.data() + r * compressed;
    float* key = k + r * compressed;
    std::memcpy(key, from + rank, sizeof(float) * rope);
    kernels.elementwise.rms_norm(from, w.kv_a_norm.data(), rank, c.rms_eps, key + rope);
    std::memcpy(v + r * rank, key + rope, sizeof(float) * rank);
  });
}

const float* LatentAttention::AbsorbedOutputs(const Kernels& kernels, const ModelConfig& c,
                                              const LayerWeights& w, const float* att, int64_t rows,
                                              ThreadPool& pool) {
  GrowTo(wide_, size_t(rows * c.att_dim()));
  PerHead(kernels, w.v_b_heads, att, c.n_head * c.kv_lora_rank, c.kv_lora_rank, rows, wide_.data(),
          c.att_dim(), c.value_dim, pool);
  return wide_.data();
}

void LatentAttention::Queries(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                              const float* xn, int64_t rows, float* q, ThreadPool& pool) {
  const int64_t q_dim = c.q_dim(), rope = c.rope_dim, nope = c.head_dim - c.rope_dim;
  ProjectQueries(kernels, c, w, xn, rows, pool);
  ForEachRow(pool, rows, [&](int64_t r) {  // [nope | rope] -> [rope | nope] per head
    for (int64_t h = 0; h < c.n_head; ++h) {
      const float* from = wide_.data() + r * q_dim + h * c.head_dim;
      float* to = q + r * q_dim + h * c.head_dim;
      std::memcpy(to, from + nope, sizeof(float) * rope);
      std::memcpy(to + rope, from, sizeof(float) * nope);
    }
  });
}

void LatentAttention::KeysValues(const Kernels& kernels, const ModelConfig& c, const LayerWeights& w,
                                 const float* xn, int64_t rows, float* k, float* v, ThreadPool& pool) {
  const int64_t rank = c.kv_lora_rank, rope = c.rope_dim, nope = c.head_dim - c.rope_dim;
  const int64_t compressed = rank + rope;
  // Each head's k_nope in wide_, every per_head floats: after it its value (attn_kv_b), or the next head's
  // k_nope (kv_b_split: the values go to v directly).
  const int64_t per_head = c.kv_b_split ? nope : nope + c.value_dim;
  GrowTo(compressed_, size_t(rows * compressed));
  GrowTo(latent_, size_t(rows * rank));
  GrowTo(wide_, size_t(rows * c.n_head * per_head));
  MatMul(kernels.matmul, w.wkv_a, xn, rows, compressed_.data(), pool);
  ForEachRow(pool, rows, [&](int64_t r) {
    kernels.elementwise.rms_norm(compressed_.data() + r * compressed, w.kv_a_norm.data(), rank, c.rms_eps,
                                 latent_.data() + r * rank);
  });
  if (c.kv_b_split) {
    MatMul(kernels.matmul, w.wk_b, latent_.data(), rows, wide_.data(), pool);
    MatMul(kernels.matmul, w.wv_b, latent_.data(), rows, v, pool);
  } else {
    MatMul(kernels.matmul, w.wkv_b, latent_.data(), rows, wide_.data(), pool);
  }
  ForEachRow(pool, rows, [&](int64_t r) {
    const float* k_rope = compressed_.data() + r * compressed + rank;
    for (int64_t h = 0; h < c.n_head; ++h) {
      const float* kv = wide_.data() + (r * c.n_head + h) * per_head;
      float* key = k + r * c.kv_dim() + h * c.head_dim;
      std::memcpy(key, k_rope, sizeof(float) * rope);
      std::memcpy(key + rope, kv, sizeof(float) * nope);
      if (!c.kv_b_split) {
        std::memcpy(v + r * c.v_dim() + h * c.value_dim, kv + nope, sizeof(float) * c.value_dim);
      }
    }
  });
}

}  // namespace lockstep
