#include "tensor/dequantize.h"

#include <cstring>

#include "base/status.h"
#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace lockstep {
namespace {

void DequantizeF16(const std::byte* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = F16ToF32(h);
  }
}

void DequantizeBF16(const std::byte* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = BF16ToF32(h);
  }
}

void DequantizeQ8_0(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ8_0), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int i = 0; i < kQ8_0Block; ++i) dst[b * kQ8_0Block + i] = d * static_cast<float>(block.qs[i]);
  }
}

void DequantizeQ4_0(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ4_0Block; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ4_0), sizeof(block));
    const float d = F16ToF32(block.d);
    float* y = dst + b * kQ4_0Block;
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((block.qs[j] & 0xf) - 8);
      y[j + 16] = d * static_cast<float>((block.qs[j] >> 4) - 8);
    }
  }
}

// As ggml's dequantize_row_q5_0 / q5_1 (the same float operations, so the same bits).
void DequantizeQ5_0(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ5Block; ++b) {
    BlockQ5_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ5_0), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int e = 0; e < kQ5Block; ++e)
      dst[b * kQ5Block + e] = static_cast<float>(Q5Quant(block.qh, block.qs, e) - 16) * d;
  }
}

void DequantizeQ5_1(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ5Block; ++b) {
    BlockQ5_1 block;
    std::memcpy(&block, src + b * sizeof(BlockQ5_1), sizeof(block));
    const float d = F16ToF32(block.d), m = F16ToF32(block.m);
    for (int e = 0; e < kQ5Block; ++e)
      dst[b * kQ5Block + e] = static_cast<float>(Q5Quant(block.qh, block.qs, e)) * d + m;
  }
}

// As ggml's dequantize_row_iq4_nl / mxfp4: one scale per 32-element block (IQ4_NL's f16 d, MXFP4's
// E8M0Half(e)) times the table value of each index nibble.
float ScaleOf(const BlockIQ4_NL& block) { return F16ToF32(block.d); }
float ScaleOf(const BlockMXFP4& block) { return E8M0Half(block.e); }
template <class Block>
void DequantizeTableBlocks(const int8_t* values, const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    Block block;
    std::memcpy(&block, src + b * sizeof(Block), sizeof(block));
    const float d = ScaleOf(block);
    for (int e = 0; e < 32; ++e) dst[b * 32 + e] = d * static_cast<float>(values[IQ4Index(block.qs, e)]);
  }
}

// As ggml's dequantize_row_iq4_xs (d * (ls - 32) first, then times the table value).
void DequantizeIQ4_XS(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockIQ4_XS block;
    std::memcpy(&block, src + b * sizeof(BlockIQ4_XS), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(IQ4XSScale(block, j));
      for (int e = 0; e < 32; ++e) {
        dst[b * kSuperBlock + 32 * j + e] =
            dl * static_cast<float>(kIQ4Values[IQ4Index(block.qs + 16 * j, e)]);
      }
    }
  }
}

void DequantizeQ4_K(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockQ4_K block;
    std::memcpy(&block, src + b * sizeof(BlockQ4_K), sizeof(block));
    const float d = F16ToF32(block.d);
    const float dmin = F16ToF32(block.dmin);
    float* y = dst + b * kSuperBlock;
    for (int c = 0; c < 4; ++c) {
      uint8_t sc, m;
      DecodeQ4KScaleMin(block.scales, 2 * c, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      DecodeQ4KScaleMin(block.scales, 2 * c + 1, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t* q = block.qs + 32 * c;
      for (int l = 0; l < 32; ++l) y[64 * c + l] = d1 * static_cast<float>(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void DequantizeQ5_K(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockQ5_K block;
    std::memcpy(&block, src + b * sizeof(BlockQ5_K), sizeof(block));
    const float d = F16ToF32(block.d);
    const float dmin = F16ToF32(block.dmin);
    float* y = dst + b * kSuperBlock;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      DecodeQ4KScaleMin(block.scales, j, &sc, &m);
      const float dj = d * sc, mj = dmin * m;
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dj * static_cast<float>(Q5KQuant(block, 32 * j + l)) - mj;
    }
  }
}

void DequantizeQ6_K(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockQ6_K block;
    std::memcpy(&block, src + b * sizeof(BlockQ6_K), sizeof(block));
    const float d = F16ToF32(block.d);
    float* y = dst + b * kSuperBlock;
    for (int e = 0; e < kSuperBlock; ++e) {
      y[e] = d * static_cast<float>(block.scales[e / 16]) * static_cast<float>(Q6KQuant(block, e) - 32);
    }
  }
}

// As ggml's dequantize_row_q3_K: d * (scale - 32) first, then times the quant.
void DequantizeQ3_K(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockQ3_K block;
    std::memcpy(&block, src + b * sizeof(BlockQ3_K), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(Q3KScale(block.scales, j));
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l;
        dst[b * kSuperBlock + e] = dl * static_cast<float>(Q3KQuant(block, e));
      }
    }
  }
}

// As ggml's dequantize_row_q2_K: d * sc and dmin * m first, then dl * q - ml (the product rounded first, as
// ggml-base is built without FMA).
void DequantizeQ2_K(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockQ2_K block;
    std::memcpy(&block, src + b * sizeof(BlockQ2_K), sizeof(block));
    const float d = F16ToF32(block.d), dmin = F16ToF32(block.dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(block.scales[j] & 0xf);
      const float ml = dmin * static_cast<float>(block.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l;
        dst[b * kSuperBlock + e] = Unfused(dl * static_cast<float>(Q2KQuant(block.qs, e))) - ml;
      }
    }
  }
}

}  // namespace

bool CanDequantize(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kIQ4_NL:
    case TensorType::kIQ4_XS:
    case TensorType::kMXFP4:
      return true;
    default:
      return false;
  }
}

void DequantizeRow(TensorType type, const std::byte* src, float* dst, int64_t n) {
  LOCKSTEP_CHECK(CanDequantize(type));
  LOCKSTEP_CHECK(n % GetTensorTypeTraits(type).block_elements == 0);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case TensorType::kF16:
      DequantizeF16(src, dst, n);
      break;
    case TensorType::kBF16:
      DequantizeBF16(src, dst, n);
      break;
    case TensorType::kQ8_0:
      DequantizeQ8_0(src, dst, n);
      break;
    case TensorType::kQ4_0:
      DequantizeQ4_0(src, dst, n);
      break;
    case TensorType::kQ5_0:
      DequantizeQ5_0(src, dst, n);
      break;
    case TensorType::kQ5_1:
      DequantizeQ5_1(src, dst, n);
      break;
    case TensorType::kQ2_K:
      DequantizeQ2_K(src, dst, n);
      break;
    case TensorType::kQ3_K:
      DequantizeQ3_K(src, dst, n);
      break;
    case TensorType::kQ4_K:
      DequantizeQ4_K(src, dst, n);
      break;
    case TensorType::kQ5_K:
      DequantizeQ5_K(src, dst, n);
      break;
    case TensorType::kQ6_K:
      DequantizeQ6_K(src, dst, n);
      break;
    case TensorType::kIQ4_NL:
      DequantizeTableBlocks<BlockIQ4_NL>(kIQ4Values, src, dst, n);
      break;
    case TensorType::kMXFP4:
      DequantizeTableBlocks<BlockMXFP4>(kMXFP4Values, src, dst, n);
      break;
    case TensorType::kIQ4_XS:
      DequantizeIQ4_XS(src, dst, n);
      break;
    default:
      LOCKSTEP_CHECK(false);
  }
}

}  // namespace lockstep
