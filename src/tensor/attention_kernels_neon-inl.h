// The NEON (aarch64) attention kernels of tensor/attention_kernels.cc, the same bits as its scalar reference.
// Included once, inside that file's anonymous namespace, after the scalar reference. No include guard.

// ---- NEON (aarch64): the scalar reference's fused multiply-adds, 16 lanes (four registers) at a time. ----
using Lanes = NeonLanes16;

// Scores of kQueries queries against the (up to) 16 positions of one transposed key group, n of them stored;
// each key vector loaded once for all of them.
template <int kQueries>
void DotGroupNeon(const float* q, size_t q_stride, const float* group, int head_dim, int n, float scale,
                  float* scores, size_t scores_stride) {
  Lanes::F acc[kQueries];
  for (int j = 0; j < kQueries; ++j) acc[j] = Lanes::Zero();
  for (int d = 0; d < head_dim; ++d) {
    const Lanes::F k = Lanes::Load(group + size_t(d) * kKeyLanes);
    for (int j = 0; j < kQueries; ++j) acc[j] = Lanes::Fma(Lanes::Set1(q[j * q_stride + d]), k, acc[j]);
  }
  const Lanes::F sv = Lanes::Set1(scale);
  for (int j = 0; j < kQueries; ++j) Lanes::StoreFirst(scores + j * scores_stride, Lanes::Mul(acc[j], sv), n);
}

void DotKeysNeon(const float* q, size_t q_stride, int queries, const float* keys, int32_t count, int head_dim,
                 float scale, float* scores, size_t scores_stride) {
  for (int32_t s0 = 0; s0 < count; s0 += kKeyLanes) {
    const float* group = keys + size_t(s0) * head_dim;
    const int n = std::min<int32_t>(kKeyLanes, count - s0);
    for (int j = 0; j < queries; j += 4) {  // 4 queries: 16 accumulator registers
      WithCount<4>(std::min(4, queries - j), [&](auto k) {
        DotGroupNeon<k>(q + j * q_stride, q_stride, group, head_dim, n, scale,
                        scores + j * scores_stride + s0, scores_stride);
      });
    }
  }
}

// Dims [d0, d0 + 16) of kQueries outputs; each value vector loaded once for all of them.
template <int kQueries>
void AccumulateChunkNeon(const float* w, size_t w_stride, const float* values, int32_t count, int head_dim,
                         int d0, float* out, size_t out_stride) {
  Lanes::F acc[kQueries];
  for (int j = 0; j < kQueries; ++j) acc[j] = Lanes::Load(out + j * out_stride + d0);
  for (int32_t s = 0; s < count; ++s) {
    const Lanes::F v = Lanes::Load(values + size_t(s) * head_dim + d0);
    for (int j = 0; j < kQueries; ++j) acc[j] = Lanes::Fma(Lanes::Set1(w[j * w_stride + s]), v, acc[j]);
  }
  for (int j = 0; j < kQueries; ++j) Lanes::Store(out + j * out_stride + d0, acc[j]);
}

void AccumulateValuesNeon(const float* w, size_t w_stride, int queries, const float* values, int32_t count,
                          int head_dim, float* out, size_t out_stride) {
  for (int j = 0; j < queries; j += 4) {
    const int k = std::min(4, queries - j);
    const float* wj = w + j * w_stride;
    float* oj = out + j * out_stride;
    int d = 0;
    for (; d + kKeyLanes <= head_dim; d += kKeyLanes) {
      WithCount<4>(k, [&](auto c) {
        AccumulateChunkNeon<c>(wj, w_stride, values, count, head_dim, d, oj, out_stride);
      });
    }
    if (d < head_dim) {  // up to 15 dims: the reference, lane by lane
      for (int i = 0; i < k; ++i) {
        AccumulateValuesScalar(wj + i * w_stride, values, count, head_dim, oj + i * out_stride, d);
      }
    }
  }
}
