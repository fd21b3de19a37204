// IQ4_NL / IQ4_XS quantization as ggml's quantize_row_iq4_nl_impl with no importance weights: per 32-element
// block a scale search over 15 trial scales weighted by x^2, then (IQ4_XS) the 8 block scales quantized to 6
// bits against one f16 super-scale and the indices chosen again for the quantized scale. The same float
// operations in the same order, each product rounded on its own (ggml's quantizer is built without FMA).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace lockstep {
namespace {

// The index of the table value nearest x (a bisection; at an exact midpoint the upper one), as ggml's
// best_index_int8.
int NearestIndex(float x) {
  if (x <= kIQ4Values[0]) return 0;
  if (x >= kIQ4Values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kIQ4Values[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - static_cast<float>(kIQ4Values[hi - 1]) < static_cast<float>(kIQ4Values[hi]) - x ? hi - 1 : hi;
}

inline constexpr int kTries = 7;  // trial scales -127 +- 7 (ntry)

// sum w q x and sum w q^2 over a block for the indices of x * id, w = x^2 (and the indices into L if given).
void WeightedSums(const float* x, float id, uint8_t* L, float* sumqx, float* sumq2) {
  *sumqx = *sumq2 = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const int l = NearestIndex(id * x[j]);
    if (L != nullptr) L[j] = static_cast<uint8_t>(l);
    const float q = kIQ4Values[l], w = x[j] * x[j];
    *sumqx += Unfused(Unfused(w * q) * x[j]);
    *sumq2 += Unfused(Unfused(w * q) * q);
  }
}

// The best scale of a 32-element block (0 for a block of max |x| below kTinyBlock).
float BlockScale(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kTinyBlock) return 0.0f;
  float sumqx, sumq2;
  WeightedSums(x, 1.0f / (-max / static_cast<float>(kIQ4Values[0])), nullptr, &sumqx, &sumq2);
  float d = sumqx / sumq2, best = d * sumqx;
  for (int t = -kTries; t <= kTries; ++t) {
    WeightedSums(x, static_cast<float>(t + kIQ4Values[0]) / max, nullptr, &sumqx, &sumq2);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// The 16 qs bytes of a block from the indices of x * id.
void PackIndices(const float* x, float id, uint8_t qs[16]) {
  uint8_t L[32];
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(NearestIndex(id * x[j]));
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

}  // namespace

void QuantizeIQ4_NL(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kIQ4Block; ++b) {
    const float* x = src + b * kIQ4Block;
    const float d = BlockScale(x);
    BlockIQ4_NL block;
    block.d = F32ToF16(d);
    PackIndices(x, d != 0.0f ? 1.0f / d : 0.0f, block.qs);
    std::memcpy(dst + b * sizeof(BlockIQ4_NL), &block, sizeof(block));
  }
}

void QuantizeIQ4_XS(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = src + b * kSuperBlock;
    float scales[8], max_scale = 0.0f, amax_scale = 0.0f;
    for (int j = 0; j < 8; ++j) {
      scales[j] = BlockScale(x + 32 * j);
      if (std::fabs(scales[j]) > amax_scale) {
        amax_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockIQ4_XS block;
    const float d = -max_scale / 32.0f;
    block.d = F32ToF16(d);
    block.scales_h = 0;
    std::memset(block.scales_l, 0, sizeof(block.scales_l));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const int l = std::clamp(NearestInt(id * scales[j]), -32, 31);
      const float dl = d * static_cast<float>(l);
      PackIndices(x + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, block.qs + 16 * j);
      const int ls = l + 32;
      block.scales_l[j / 2] = static_cast<uint8_t>(block.scales_l[j / 2] | ((ls & 0xf) << (4 * (j % 2))));
      block.scales_h = static_cast<uint16_t>(block.scales_h | ((ls >> 4) << (2 * j)));
    }
    std::memcpy(dst + b * sizeof(BlockIQ4_XS), &block, sizeof(block));
  }
}

}  // namespace lockstep
