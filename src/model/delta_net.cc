#include "model/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/row_tasks.h"
#include "tensor/activations.h"
#include "tensor/matmul.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Channels of one convolution task.
constexpr int64_t kConvChannelsPerTask = 256;

float Sigmoid(float x) { return 1.0f / (1.0f + ExpPolynomial(-x)); }
float Silu(float x) { return x * Sigmoid(x); }
// ggml's softplus: x past 20 is its own softplus in f32.
float Softplus(float x) { return x > 20.0f ? x : std::log1p(ExpPolynomial(x)); }

// x / max(|x|, eps), as ggml_l2_norm (the sum of squares in order).
void L2Normalize(float* x, int64_t n, float eps, float extra_scale) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float scale = extra_scale / std::max(std::sqrt(sum), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace

void DeltaNet::Begin(const Batch& batch) {
  const int32_t n_seq = int32_t(batch.sequences.size());
  std::vector<int32_t> count(size_t(n_seq), 0);
  for (const BatchRow& row : batch.rows) ++count[size_t(row.sequence)];
  seq_ids_.clear();
  seq_begin_.assign(1, 0);
  std::vector<int32_t> slot(size_t(n_seq), -1);
  for (int32_t s = 0; s < n_seq; ++s) {
    if (count[size_t(s)] == 0) continue;
    slot[size_t(s)] = int32_t(seq_ids_.size());
    seq_ids_.push_back(s);
    seq_begin_.push_back(seq_begin_.back() + count[size_t(s)]);
  }
  seq_rows_.assign(batch.rows.size(), 0);
  std::vector<int32_t> filled(seq_ids_.size(), 0);
  for (int32_t r = 0; r < int32_t(batch.rows.size()); ++r) {
    const int32_t i = slot[size_t(batch.rows[size_t(r)].sequence)];
    seq_rows_[size_t(seq_begin_[size_t(i)] + filled[size_t(i)]++)] = r;  // rows keep their batch order
  }
  const size_t floats = size_t(config_.RecurrentStateFloats());
  for (size_t i = 0; i < seq_ids_.size(); ++i) {
    const BatchRow& first = batch.rows[size_t(seq_rows_[size_t(seq_begin_[i])])];
    if (first.position == 0) {
      std::memset(batch.sequences[size_t(seq_ids_[i])].recurrent_state, 0, floats * sizeof(float));
    }
  }
}

void DeltaNet::Forward(const Kernels& kernels, const LayerWeights& w, int64_t index, const Batch& batch,
                       const float* xn, float* out, ThreadPool& pool) {
  const DeltaNetConfig& dn = config_.delta_net;
  const int64_t rows = int64_t(batch.rows.size());
  const int64_t channels = dn.ConvChannels();
  const int64_t kernel = dn.conv_kernel;
  const int64_t value_dim = dn.value_dim();
  const int64_t hv = dn.v_heads;
  GrowTo(qkv_, size_t(rows * channels));
  GrowTo(conv_, size_t(rows * channels));
  GrowTo(z_, size_t(rows * value_dim));
  GrowTo(beta_, size_t(rows * hv));
  GrowTo(alpha_, size_t(rows * hv));
  GrowTo(core_, size_t(rows * value_dim));

  if (dn.fused_projections) {
    FusedProjections(kernels, w, xn, rows, pool);
  } else {
    const WeightMatrix projections[] = {w.dn_qkv, w.dn_z, w.dn_beta, w.dn_alpha};
    float* const outs[] = {qkv_.data(), z_.data(), beta_.data(), alpha_.data()};
    MatMulShared(kernels.matmul, projections, xn, rows, outs, pool);
  }

  const int64_t layer_offset = index * dn.LayerStateFloats();
  auto state_of = [&](size_t i) {
    return batch.sequences[size_t(seq_ids_[i])].recurrent_state + layer_offset;
  };

  // The short convolution, per (sequence, channel range), token by token; then SiLU.
  const int64_t ranges = (channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  const int64_t n_seq = int64_t(seq_ids_.size());
  pool.Run(n_seq * ranges, [&](int64_t task, int) {
    const size_t i = size_t(task / ranges);
    const int64_t c0 = (task % ranges) * kConvChannelsPerTask;
    const int64_t c1 = std::min(channels, c0 + kConvChannelsPerTask);
    float* window = state_of(i);  // [kernel - 1][channels], oldest first
    for (int32_t n = seq_begin_[i]; n < seq_begin_[i + 1]; ++n) {
      const int64_t r = seq_rows_[size_t(n)];
      const float* x = qkv_.data() + r * channels;
      float* y = conv_.data() + r * channels;
      for (int64_t c = c0; c < c1; ++c) {
        const float* taps = w.dn_conv.data() + c * kernel;
        float sum = 0;
        for (int64_t t = 0; t + 1 < kernel; ++t) sum += window[t * channels + c] * taps[t];
        sum += x[c] * taps[kernel - 1];
        for (int64_t t = 0; t + 2 < kernel; ++t) window[t * channels + c] = window[(t + 1) * channels + c];
        window[(kernel - 2) * channels + c] = x[c];
        y[c] = Silu(sum);
      }
    }
  });

  // Per row: q and k normalised, beta and the decay of each value head.
  const float q_scale = 1.0f / std::sqrt(float(dn.head_k_dim));
  pool.Run(rows, [&](int64_t r, int) {
    float* y = conv_.data() + r * channels;
    for (int64_t h = 0; h < dn.k_heads; ++h) {
      L2Normalize(y + h * dn.head_k_dim, dn.head_k_dim, config_.rms_eps, q_scale);
      L2Normalize(y + dn.key_dim() + h * dn.head_k_dim, dn.head_k_dim, config_.rms_eps, 1.0f);
    }
    for (int64_t h = 0; h < hv; ++h) {
      float& b = beta_[size_t(r * hv + h)];
      b = Sigmoid(b);
      float& a = alpha_[size_t(r * hv + h)];
      a = ExpPolynomial(Softplus(a + w.dn_dt_bias[size_t(h)]) * w.dn_a[size_t(h)]);  // the decay
    }
  });

  // The delta rule, per (sequence, value head), token by token.
  const int64_t group = dn.v_heads / dn.k_heads;
  pool.Run(n_seq * hv, [&](int64_t task, int) {
    const size_t i = size_t(task / hv);
    const int64_t h = task % hv;
    const int64_t kh = dn.tiled_heads ? h % dn.k_heads : h / group;
    float* state = state_of(i) + dn.ConvFloats() + h * dn.head_v_dim * dn.head_k_dim;
    for (int32_t n = seq_begin_[i]; n < seq_begin_[i + 1]; ++n) {
      const int64_t r = seq_rows_[size_t(n)];
      const float* y = conv_.data() + r * channels;
      kernels.recurrent.delta_rule(
          state, dn.head_v_dim, dn.head_k_dim, y + kh * dn.head_k_dim, y + dn.key_dim() + kh * dn.head_k_dim,
          y + 2 * dn.key_dim() + h * dn.head_v_dim, beta_[size_t(r * hv + h)], alpha_[size_t(r * hv + h)],
          core_.data() + r * value_dim + h * dn.head_v_dim);
    }
  });

  // Per row and value head: RMSNorm x SiLU(z), then the output projection.
  pool.Run(rows, [&](int64_t r, int) {
    for (int64_t h = 0; h < hv; ++h) {
      float* o = core_.data() + r * value_dim + h * dn.head_v_dim;
      float* z = z_.data() + r * value_dim + h * dn.head_v_dim;
      kernels.elementwise.rms_norm(o, w.dn_norm.data(), dn.head_v_dim, config_.rms_eps, o);
      kernels.elementwise.swiglu(z, o, dn.head_v_dim);  // z = SiLU(z) o
    }
  });
  MatMul(kernels.matmul, w.dn_out, z_.data(), rows, out, pool);
}

void DeltaNet::FusedProjections(const Kernels& kernels, const LayerWeights& w, const float* xn, int64_t rows,
                                ThreadPool& pool) {
  const DeltaNetConfig& dn = config_.delta_net;
  const int64_t group = dn.v_heads / dn.k_heads;               // value heads per key head
  const int64_t v_width = group * dn.head_v_dim;               // a key head's v (and z) in ssm_in's rows
  const int64_t qkvz_width = 2 * dn.head_k_dim + 2 * v_width;  // a key head's rows of ssm_in
  const int64_t channels = dn.ConvChannels(), value_dim = dn.value_dim(), hv = dn.v_heads;
  GrowTo(fused_qkvz_, size_t(rows * dn.k_heads * qkvz_width));
  GrowTo(fused_ba_, size_t(rows * 2 * hv));
  const WeightMatrix projections[] = {w.dn_qkvz, w.dn_ba};
  float* const outs[] = {fused_qkvz_.data(), fused_ba_.data()};
  MatMulShared(kernels.matmul, projections, xn, rows, outs, pool);
  // Key head h's [q | k | v | z] to q, k and v at their places in [q | k | v] (channels) and z in z_; its
  // [beta | alpha] to value heads h * group ... (h + 1) * group - 1 of beta_ and alpha_.
  pool.Run(rows, [&](int64_t r, int) {
    const float* in = fused_qkvz_.data() + r * dn.k_heads * qkvz_width;
    float* qkv = qkv_.data() + r * channels;
    float* z = z_.data() + r * value_dim;
    const float* ba = fused_ba_.data() + r * 2 * hv;
    for (int64_t h = 0; h < dn.k_heads; ++h, in += qkvz_width, ba += 2 * group) {
      const size_t k_bytes = size_t(dn.head_k_dim) * sizeof(float), v_bytes = size_t(v_width) * sizeof(float);
      std::memcpy(qkv + h * dn.head_k_dim, in, k_bytes);
      std::memcpy(qkv + dn.key_dim() + h * dn.head_k_dim, in + dn.head_k_dim, k_bytes);
      std::memcpy(qkv + 2 * dn.key_dim() + h * v_width, in + 2 * dn.head_k_dim, v_bytes);
      std::memcpy(z + h * v_width, in + 2 * dn.head_k_dim + v_width, v_bytes);
      std::memcpy(beta_.data() + r * hv + h * group, ba, size_t(group) * sizeof(float));
      std::memcpy(alpha_.data() + r * hv + h * group, ba + group, size_t(group) * sizeof(float));
    }
  });
}

}  // namespace lockstep
