// Scalar reference of MatMul's canonical computation (see tensor/matmul_internal.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "tensor/float16.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/quant_blocks.h"

namespace lockstep {

void QuantizeActivationBlock(const float* x, int8_t* q, float* d, int32_t sum16[2]) {
  float amax = 0.0f;
  for (int i = 0; i < kActBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  float id;  // 2^-e
  *d = ActivationScale(amax, &id);
  sum16[0] = sum16[1] = 0;
  for (int i = 0; i < kActBlock; ++i) {
    // A tiny or non-finite block (id = 0) is all zeros: not inf * 0 = NaN, whose conversion is undefined.
    q[i] = id == 0.0f ? int8_t{0} : static_cast<int8_t>(std::nearbyint(x[i] * id));
    sum16[i / 16] += q[i];
  }
}

bool IsQuantizedMatMulType(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ5_0 ||
         type == TensorType::kQ5_1 || type == TensorType::kQ4_K || type == TensorType::kQ5_K ||
         type == TensorType::kQ6_K || type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS ||
         type == TensorType::kQ3_K || type == TensorType::kQ2_K || type == TensorType::kMXFP4;
}

void GetWeightBlock(TensorType type, const std::byte* row, int64_t b, WeightBlockView* view) {
  float lane_scale[2], lane_min[2] = {0.0f, 0.0f};
  switch (type) {
    case TensorType::kQ8_0: {
      BlockQ8_0 block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      std::memcpy(view->w, block.qs, 32);
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d);
      break;
    }
    case TensorType::kQ4_0: {
      BlockQ4_0 block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      for (int j = 0; j < 16; ++j) {
        view->w[j] = static_cast<int8_t>((block.qs[j] & 0xf) - 8);
        view->w[j + 16] = static_cast<int8_t>((block.qs[j] >> 4) - 8);
      }
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d);
      break;
    }
    case TensorType::kQ5_0: {
      BlockQ5_0 block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      for (int e = 0; e < 32; ++e) view->w[e] = static_cast<int8_t>(Q5Quant(block.qh, block.qs, e) - 16);
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d);
      break;
    }
    case TensorType::kQ5_1: {
      BlockQ5_1 block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      for (int e = 0; e < 32; ++e) view->w[e] = static_cast<int8_t>(Q5Quant(block.qh, block.qs, e));
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d);
      lane_min[0] = lane_min[1] = F16ToF32(block.m);
      break;
    }
    case TensorType::kIQ4_NL: {
      BlockIQ4_NL block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      for (int e = 0; e < 32; ++e) view->w[e] = kIQ4Values[IQ4Index(block.qs, e)];
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d);
      break;
    }
    case TensorType::kMXFP4: {
      BlockMXFP4 block;
      std::memcpy(&block, row + b * sizeof(block), sizeof(block));
      for (int e = 0; e < 32; ++e) view->w[e] = kMXFP4Values[IQ4Index(block.qs, e)];
      lane_scale[0] = lane_scale[1] = E8M0Half(block.e);
      break;
    }
    case TensorType::kIQ4_XS: {
      BlockIQ4_XS block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      for (int e = 0; e < 32; ++e) view->w[e] = kIQ4Values[IQ4Index(block.qs + 16 * j, e)];
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d) * static_cast<float>(IQ4XSScale(block, j));
      break;
    }
    case TensorType::kQ4_K: {
      BlockQ4_K block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      uint8_t sc, m;
      DecodeQ4KScaleMin(block.scales, j, &sc, &m);
      const uint8_t* q = block.qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l)
        view->w[l] = static_cast<int8_t>((j % 2 == 0) ? (q[l] & 0xf) : (q[l] >> 4));
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d) * static_cast<float>(sc);
      lane_min[0] = lane_min[1] = -(F16ToF32(block.dmin) * static_cast<float>(m));
      break;
    }
    case TensorType::kQ5_K: {
      BlockQ5_K block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      uint8_t sc, m;
      DecodeQ4KScaleMin(block.scales, j, &sc, &m);
      for (int l = 0; l < 32; ++l) view->w[l] = static_cast<int8_t>(Q5KQuant(block, 32 * j + l));
      lane_scale[0] = lane_scale[1] = F16ToF32(block.d) * static_cast<float>(sc);
      lane_min[0] = lane_min[1] = -(F16ToF32(block.dmin) * static_cast<float>(m));
      break;
    }
    case TensorType::kQ6_K: {
      BlockQ6_K block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      for (int l = 0; l < 32; ++l) view->w[l] = static_cast<int8_t>(Q6KQuant(block, 32 * j + l) - 32);
      const float d = F16ToF32(block.d);
      lane_scale[0] = d * static_cast<float>(block.scales[2 * j]);
      lane_scale[1] = d * static_cast<float>(block.scales[2 * j + 1]);
      break;
    }
    case TensorType::kQ2_K: {
      BlockQ2_K block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      for (int l = 0; l < 32; ++l) view->w[l] = static_cast<int8_t>(Q2KQuant(block.qs, 32 * j + l));
      const float d = F16ToF32(block.d), dmin = F16ToF32(block.dmin);
      for (int h = 0; h < 2; ++h) {
        const uint8_t sc = block.scales[2 * j + h];
        lane_scale[h] = d * static_cast<float>(sc & 0xf);
        lane_min[h] = -(dmin * static_cast<float>(sc >> 4));
      }
      break;
    }
    case TensorType::kQ3_K: {
      BlockQ3_K block;
      std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
      const int j = static_cast<int>(b % 8);
      for (int l = 0; l < 32; ++l) view->w[l] = static_cast<int8_t>(Q3KQuant(block, 32 * j + l));
      const float d = F16ToF32(block.d);
      lane_scale[0] = d * static_cast<float>(Q3KScale(block.scales, 2 * j));
      lane_scale[1] = d * static_cast<float>(Q3KScale(block.scales, 2 * j + 1));
      break;
    }
    default:
      LOCKSTEP_CHECK(false);
  }
  for (int l = 0; l < 8; ++l) {
    view->scale[l] = lane_scale[l / 4];
    view->min_scale[l] = lane_min[l / 4];
  }
}

namespace {

float WeightAt(TensorType type, const std::byte* row, int64_t i) {
  uint16_t h;
  switch (type) {
    case TensorType::kF32: {
      float f;
      std::memcpy(&f, row + 4 * i, 4);
      return f;
    }
    case TensorType::kF16:
      std::memcpy(&h, row + 2 * i, 2);
      return F16ToF32(h);
    case TensorType::kBF16:
      std::memcpy(&h, row + 2 * i, 2);
      return BF16ToF32(h);
    default:
      LOCKSTEP_CHECK(false);
      return 0.0f;
  }
}

// Q6_K / Q3_K block b's two integer sub-block scales (elements 0-15, 16-31) and the f16 d of its super-block.
void SixteenScales(TensorType type, const std::byte* row, int64_t b, int32_t sc[2], uint16_t* d) {
  const int j = static_cast<int>(b % 8);
  if (type == TensorType::kQ6_K) {
    BlockQ6_K block;
    std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
    sc[0] = block.scales[2 * j];
    sc[1] = block.scales[2 * j + 1];
    *d = block.d;
  } else {
    BlockQ3_K block;
    std::memcpy(&block, row + (b / 8) * sizeof(block), sizeof(block));
    sc[0] = Q3KScale(block.scales, 2 * j);
    sc[1] = Q3KScale(block.scales, 2 * j + 1);
    *d = block.d;
  }
}

}  // namespace

float FloatDotReference(TensorType type, const std::byte* row, const float* x, int64_t in) {
  float acc[kLanes] = {};
  for (int64_t i0 = 0; i0 < in; i0 += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const int64_t i = i0 + l;
      acc[l] = i < in ? std::fma(WeightAt(type, row, i), x[i], acc[l]) : std::fma(0.0f, 0.0f, acc[l]);
    }
  }
  return LaneSum(acc);
}

float QuantDotReference(TensorType type, const std::byte* row, const int8_t* q, const float* d,
                        int64_t blocks) {
  float acc[kLanes] = {};
  WeightBlockView view;
  for (int64_t b = 0; b < blocks; ++b) {
    GetWeightBlock(type, row, b, &view);
    for (int l = 0; l < kLanes; ++l) {
      int32_t dot = 0, sum = 0;
      for (int k = 0; k < 4; ++k) {
        dot += view.w[4 * l + k] * q[32 * b + 4 * l + k];
        sum += q[32 * b + 4 * l + k];
      }
      acc[l] = std::fma(static_cast<float>(dot), view.scale[l] * d[b], acc[l]);
      if (HasLaneMinTerm(type)) acc[l] = std::fma(static_cast<float>(sum), view.min_scale[l] * d[b], acc[l]);
    }
  }
  return LaneSum(acc);
}

float PackedDotReference(TensorType type, const std::byte* row, const int8_t* q, const float* d,
                         int64_t blocks) {
  float acc = 0.0f;
  WeightBlockView view;
  for (int64_t b = 0; b < blocks; ++b) {
    GetWeightBlock(type, row, b, &view);
    int32_t dot[2] = {0, 0}, sum = 0;
    for (int i = 0; i < 32; ++i) {
      dot[i / 16] += view.w[i] * q[32 * b + i];
      sum += q[32 * b + i];
    }
    if (type == TensorType::kQ6_K || type == TensorType::kQ3_K) {
      int32_t sc[2];
      uint16_t d16;
      SixteenScales(type, row, b, sc, &d16);
      const int32_t total = sc[0] * dot[0] + sc[1] * dot[1];
      acc = std::fma(static_cast<float>(total), F16ToF32(d16) * d[b], acc);
      continue;
    }
    acc = std::fma(static_cast<float>(dot[0] + dot[1]), view.scale[0] * d[b], acc);
    if (HasMinTerm(type)) acc = std::fma(static_cast<float>(sum), view.min_scale[0] * d[b], acc);
  }
  return acc;
}

void ScalarQuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                               const ActivationQuants& out) {
  const int64_t blocks = in / kActBlock;
  for (int64_t r = r_begin; r < r_end; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t i = r * blocks + b;
      int32_t* s16 = out.sums16 + 2 * i;
      QuantizeActivationBlock(x + r * in + kActBlock * b, out.q + r * out.q_stride + kActBlock * b, out.d + i,
                              s16);
      out.sums[i] = s16[0] + s16[1];
      out.q8_starts[i] = -128 * out.sums[i];
      out.q4_starts[i] = Q4StartOf(out.sums[i]);
      out.sum_d[i] = static_cast<float>(out.sums[i]) * out.d[i];
    }
  }
}

void ScalarFloatTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = FloatDotReference(a.type, a.weights + o * a.row_bytes, a.x + r * a.in, a.in);
    }
  }
}

void ScalarQuantTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = QuantDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                             a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
}

void ScalarPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < std::min(o_end, a.out); ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = PackedDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                              a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
}

void MatMulReference(const WeightMatrix& w, const float* x, int64_t rows, float* y) {
  const size_t row_bytes = RowBytes(w.type, w.in);
  if (!IsQuantizedMatMulType(w.type)) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < w.out; ++o)
        y[r * w.out + o] = FloatDotReference(w.type, w.data + o * row_bytes, x + r * w.in, w.in);
    }
    return;
  }
  const int64_t blocks = w.in / kActBlock;
  std::vector<int8_t> q(w.in);
  std::vector<float> d(blocks);
  int32_t sum16[2];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      QuantizeActivationBlock(x + r * w.in + 32 * b, q.data() + 32 * b, &d[b], sum16);
    }
    for (int64_t o = 0; o < w.out; ++o) {
      const std::byte* row = w.data + o * row_bytes;
      y[r * w.out + o] = w.packed != nullptr ? PackedDotReference(w.type, row, q.data(), d.data(), blocks)
                                             : QuantDotReference(w.type, row, q.data(), d.data(), blocks);
    }
  }
}

}  // namespace lockstep
