// Q3_K and Q2_K quantization as ggml's quantize_row_q3_K_ref / quantize_row_q2_K_ref with no importance
// weights. Q3_K: per 16-element sub-block a scale fit weighted by x^2 (a start at -4 / max, then up to 5
// passes moving single quants while the weighted error drops), the 16 scales quantized to 6 bits against one
// f16 super-scale, and the quants chosen again for the quantized scales. Q2_K: per sub-block a scale and min
// fit weighted by |x| (16 trial ranges, least squares, mean absolute error), scales and mins quantized to 4
// bits against f16 d and dmin, the quants chosen again. The same float operations in the same order, each
// product rounded on its own (ggml's quantizer is built without FMA), so the bytes equal llama-quantize's.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace lockstep {
namespace {

// ggml's make_q3_quants(16, 4, x, L, true): the best scale of a 16-element sub-block and its quants
// L[i] + 4 in [0, 8) (0 for a sub-block of max |x| below kTinyBlock).
float SubBlockScale(const float* x, int8_t L[16]) {
  constexpr int kMax = 4;
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < 16; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kTinyBlock) {
    std::fill(L, L + 16, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-kMax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < 16; ++i) {
    const int l = std::clamp(NearestInt(iscale * x[i]), -kMax, kMax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += Unfused(Unfused(w * x[i]) * static_cast<float>(l));
    suml2 += Unfused(Unfused(w * static_cast<float>(l)) * static_cast<float>(l));
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < 16; ++i) {
      const float w = x[i] * x[i], li = static_cast<float>(L[i]);
      float slx = sumlx - Unfused(Unfused(w * x[i]) * li);
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - Unfused(Unfused(w * li) * li);
      const int new_l = std::clamp(NearestInt(Unfused(x[i] * sl2) / slx), -kMax, kMax - 1);
      if (new_l == L[i]) continue;
      const float nl = static_cast<float>(new_l);
      slx += Unfused(Unfused(w * x[i]) * nl);
      sl2 += Unfused(Unfused(w * nl) * nl);
      if (sl2 > 0.0f && Unfused(slx * slx) * suml2 > Unfused(sumlx * sumlx) * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < 16; ++i) L[i] = static_cast<int8_t>(L[i] + kMax);
  return sumlx / suml2;
}

// ggml's make_qkx2_quants(16, 3, x, |x|, L, &min, Laux, -0.5, 0.1, 15, true): a sub-block's scale, *neg_min
// (minus its min, >= 0) and quants L[i] in [0, 3].
float SubBlockScaleMin(const float* x, uint8_t L[16], float* neg_min) {
  constexpr int kMax = 3, kSteps = 15;
  constexpr float kRmin = -0.5f, kRdelta = 0.1f;
  float w[16];
  for (int i = 0; i < 16; ++i) w[i] = std::fabs(x[i]);
  float min = x[0], max = x[0], sum_w = w[0], sum_x = Unfused(w[0] * x[0]);
  for (int i = 1; i < 16; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += Unfused(w[i] * x[i]);
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(L, L + 16, uint8_t{0});
    *neg_min = -min;
    return 0.0f;
  }
  // sum of w |scale * l + min - x| over the sub-block
  const auto mad_of = [&](float scale, float m, const uint8_t* l) {
    float mad = 0.0f;
    for (int i = 0; i < 16; ++i) {
      const float diff = (Unfused(scale * static_cast<float>(l[i])) + m) - x[i];
      mad += Unfused(w[i] * std::fabs(diff));
    }
    return mad;
  };
  float iscale = static_cast<float>(kMax) / (max - min), scale = 1.0f / iscale;
  for (int i = 0; i < 16; ++i)
    L[i] = static_cast<uint8_t>(std::clamp(NearestInt(iscale * (x[i] - min)), 0, kMax));
  float best_mad = mad_of(scale, min, L);
  for (int step = 0; step <= kSteps; ++step) {
    iscale = ((kRmin + Unfused(kRdelta * static_cast<float>(step))) + static_cast<float>(kMax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    uint8_t aux[16];
    for (int i = 0; i < 16; ++i) {
      const int l = std::clamp(NearestInt(iscale * (x[i] - min)), 0, kMax);
      aux[i] = static_cast<uint8_t>(l);
      const float wl = Unfused(w[i] * static_cast<float>(l));
      sum_l += wl;
      sum_l2 += Unfused(wl * static_cast<float>(l));
      sum_xl += Unfused(wl * x[i]);
    }
    const float det = Unfused(sum_w * sum_l2) - Unfused(sum_l * sum_l);
    if (!(det > 0.0f)) continue;
    float this_scale = (Unfused(sum_w * sum_xl) - Unfused(sum_x * sum_l)) / det;
    float this_min = (Unfused(sum_l2 * sum_x) - Unfused(sum_l * sum_xl)) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    const float mad = mad_of(this_scale, this_min, aux);
    if (mad < best_mad) {
      std::copy(aux, aux + 16, L);
      best_mad = mad;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

// qs bytes of Q2_K / Q3_K from 2-bit quants L[256]: qs[32n + l] holds element 128n + 32k + l at bits
// 2k..2k+1.
template <typename T>
void PackTwoBitQuants(const T* L, uint8_t qs[64]) {
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      const T* q = L + 128 * n + l;
      qs[32 * n + l] = static_cast<uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
    }
  }
}

}  // namespace

void QuantizeQ3_K(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = src + b * kSuperBlock;
    int8_t L[kSuperBlock];
    float scales[16], max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = SubBlockScale(x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ3_K block;
    std::memset(&block, 0, sizeof(block));
    if (max_scale != 0.0f) {  // a NaN max_scale too, as ggml's `if (max_scale)`
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml stores nearest_int in an int8_t before clamping.
        const int l = std::clamp<int>(static_cast<int8_t>(NearestInt(iscale * scales[j])), -32, 31) + 32;
        block.scales[j % 8] = static_cast<uint8_t>(block.scales[j % 8] | ((l & 0xf) << (4 * (j / 8))));
        block.scales[8 + j % 4] = static_cast<uint8_t>(block.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      block.d = F32ToF16(1.0f / iscale);
    }
    const float d_all = F16ToF32(block.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(Q3KScale(block.scales, j));
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<int8_t>(std::clamp(NearestInt(x[16 * j + i] / d), -4, 3) + 4);
      }
    }
    for (int e = 0; e < kSuperBlock; ++e) {
      if (L[e] > 3) {
        block.hmask[e % 32] = static_cast<uint8_t>(block.hmask[e % 32] | (1 << (e / 32)));
        L[e] = static_cast<int8_t>(L[e] - 4);
      }
    }
    PackTwoBitQuants(L, block.qs);
    std::memcpy(dst + b * sizeof(BlockQ3_K), &block, sizeof(block));
  }
}

void QuantizeQ2_K(const float* src, std::byte* dst, int64_t n) {
  constexpr float kLevels = 15.0f;  // 4-bit scales and mins
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = src + b * kSuperBlock;
    uint8_t L[kSuperBlock];
    float scales[16], mins[16], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = SubBlockScaleMin(x + 16 * j, L + 16 * j, &mins[j]);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    BlockQ2_K block;
    std::memset(&block, 0, sizeof(block));
    if (max_scale > 0.0f) {
      const float iscale = kLevels / max_scale;
      for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(NearestInt(iscale * scales[j]));
      block.d = F32ToF16(max_scale / kLevels);
    }
    if (max_min > 0.0f) {
      const float iscale = kLevels / max_min;
      for (int j = 0; j < 16; ++j) {
        block.scales[j] = static_cast<uint8_t>(block.scales[j] | (NearestInt(iscale * mins[j]) << 4));
      }
      block.dmin = F32ToF16(max_min / kLevels);
    }
    const float d_all = F16ToF32(block.d), dmin_all = F16ToF32(block.dmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(block.scales[j] & 0xf);
      if (d == 0.0f) continue;
      const float dm = dmin_all * static_cast<float>(block.scales[j] >> 4);
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<uint8_t>(std::clamp(NearestInt((x[16 * j + i] + dm) / d), 0, 3));
      }
    }
    PackTwoBitQuants(L, block.qs);
    std::memcpy(dst + b * sizeof(BlockQ2_K), &block, sizeof(block));
  }
}

}  // namespace lockstep
