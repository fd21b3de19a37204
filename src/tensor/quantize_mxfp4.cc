// MXFP4 quantization as ggml's quantize_row_mxfp4_ref (what llama-quantize and ggml's converters write): per
// 32-element block the E8M0 exponent e = floor(log2(max|x|)) - 2 + 127 (so that the block's largest value
// maps near the table's 6 * 2 = 12), then each element's index the first of the 16 table values nearest to
// it at the scale E8M0Half(e). The same float operations in the same order, so the same bytes.
#include <cmath>
#include <cstring>

#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace lockstep {
namespace {

// ggml's best_index_mxfp4: the first index with the smallest |value * d - x| (NaN x: index 0).
int NearestMXFP4Index(float x, float d) {
  int best = 0;
  float best_err = std::fabs(Unfused(static_cast<float>(kMXFP4Values[0]) * d) - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(Unfused(static_cast<float>(kMXFP4Values[i]) * d) - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// ggml's e for a block's max|x| (> 0): (uint8_t)(floorf(log2f(amax)) - 2 + 127). C leaves that conversion
// undefined outside [0, 255] (max|x| < 2^-125, or infinite); this takes what x86 GCC builds of ggml compute,
// the low byte of the truncated int (an infinite max, whose int conversion is INT_MIN: 0).
uint8_t BlockExponent(float amax) {
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  if (!std::isfinite(e)) return 0;
  return static_cast<uint8_t>(static_cast<uint32_t>(static_cast<int32_t>(e)) & 0xffu);
}

}  // namespace

void QuantizeMXFP4(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kMXFP4Block; ++b) {
    const float* x = src + b * kMXFP4Block;
    float amax = 0.0f;
    for (int j = 0; j < kMXFP4Block; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    BlockMXFP4 block;
    block.e = amax > 0.0f ? BlockExponent(amax) : 0;
    const float d = E8M0Half(block.e);
    for (int j = 0; j < 16; ++j) {
      block.qs[j] = static_cast<uint8_t>(NearestMXFP4Index(x[j], d) | (NearestMXFP4Index(x[j + 16], d) << 4));
    }
    std::memcpy(dst + b * sizeof(BlockMXFP4), &block, sizeof(block));
  }
}

}  // namespace lockstep
