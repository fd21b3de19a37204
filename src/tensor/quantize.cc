// Quantization to the GGUF block types. Q8_0, Q4_0, Q5_0 and Q5_1 follow ggml's reference rounding (so a file
// quantized here matches one quantized by llama.cpp's reference code), IQ4_NL and IQ4_XS ggml's scale search
// (tensor/quantize_iq4.cc), MXFP4 ggml's reference rounding (tensor/quantize_mxfp4.cc), Q3_K and Q2_K ggml's
// reference fits (tensor/quantize_k_low.cc); Q4_K, Q5_K and Q6_K use a simple direct fit (per sub-block
// max/min, no importance search).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/status.h"
#include "tensor/dequantize.h"
#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace lockstep {
namespace {

void QuantizeF16(const float* src, std::byte* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToF16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void QuantizeBF16(const float* src, std::byte* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToBF16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void QuantizeQ8_0(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float* x = src + b * kQ8_0Block;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0Block; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 block;
    block.d = F32ToF16(d);
    for (int i = 0; i < kQ8_0Block; ++i) block.qs[i] = static_cast<int8_t>(std::roundf(x[i] * id));
    std::memcpy(dst + b * sizeof(BlockQ8_0), &block, sizeof(block));
  }
}

void QuantizeQ4_0(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ4_0Block; ++b) {
    const float* x = src + b * kQ4_0Block;
    float amax = 0.0f, max = 0.0f;  // max: the signed value of largest magnitude
    for (int i = 0; i < kQ4_0Block; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block;
    block.d = F32ToF16(d);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      block.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    std::memcpy(dst + b * sizeof(BlockQ4_0), &block, sizeof(block));
  }
}

// The 32 quants q (< 32) into a Q5_0 / Q5_1 block's qh and qs.
void PackQ5Quants(const int q[32], uint8_t qh[4], uint8_t qs[16]) {
  uint32_t bits = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xf) | ((q[j + 16] & 0xf) << 4));
    bits |= static_cast<uint32_t>(q[j] >> 4) << j | static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  std::memcpy(qh, &bits, 4);  // little-endian, as ggml's memcpy of its uint32_t
}

// ggml's quantize_row_q5_0_ref: d = (signed value of largest magnitude) / -16.
void QuantizeQ5_0(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ5Block; ++b) {
    const float* x = src + b * kQ5Block;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQ5Block; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQ5Block];
    for (int i = 0; i < kQ5Block; ++i) q[i] = std::min(31, static_cast<int>(Unfused(x[i] * id) + 16.5f));
    BlockQ5_0 block;
    block.d = F32ToF16(d);
    PackQ5Quants(q, block.qh, block.qs);
    std::memcpy(dst + b * sizeof(BlockQ5_0), &block, sizeof(block));
  }
}

// ggml's quantize_row_q5_1_ref: m = min, d = (max - min) / 31.
void QuantizeQ5_1(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ5Block; ++b) {
    const float* x = src + b * kQ5Block;
    float min = x[0], max = x[0];
    for (int i = 1; i < kQ5Block; ++i) {
      min = std::min(min, x[i]);
      max = std::max(max, x[i]);
    }
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQ5Block];
    for (int i = 0; i < kQ5Block; ++i)
      q[i] = std::min(31, static_cast<int>(Unfused((x[i] - min) * id) + 0.5f));
    BlockQ5_1 block;
    block.d = F32ToF16(d);
    block.m = F32ToF16(min);
    PackQ5Quants(q, block.qh, block.qs);
    std::memcpy(dst + b * sizeof(BlockQ5_1), &block, sizeof(block));
  }
}

// A Q4_K / Q5_K super-block fit: per sub-block j a step d * sc[j] over its range and an offset dmin * m[j]
// (the range always includes 0, so the offset is <= 0); quants q[e] in [0, max_q].
struct KQuantFit {
  uint16_t d, dmin;
  uint8_t sc[8], m[8];
  uint8_t q[kSuperBlock];
};

KQuantFit FitScaleMin(const float* x, int max_q) {
  KQuantFit fit;
  float scale[8], minus_min[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = 0.0f;
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    scale[j] = (hi - lo) / static_cast<float>(max_q);
    minus_min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minus_min[j]);
  }
  fit.d = F32ToF16(max_scale / 63.0f);
  fit.dmin = F32ToF16(max_min / 63.0f);
  const float d16 = F16ToF32(fit.d), dmin16 = F16ToF32(fit.dmin);
  for (int j = 0; j < 8; ++j) {
    fit.sc[j] = static_cast<uint8_t>(d16 > 0 ? std::clamp(std::lround(scale[j] / d16), 0L, 63L) : 0);
    fit.m[j] = static_cast<uint8_t>(dmin16 > 0 ? std::clamp(std::lround(minus_min[j] / dmin16), 0L, 63L) : 0);
    const float step = d16 * fit.sc[j], offset = dmin16 * fit.m[j];
    for (int l = 0; l < 32; ++l) {
      const long q = step > 0 ? std::clamp(std::lround((x[32 * j + l] + offset) / step), 0L, long{max_q}) : 0;
      fit.q[32 * j + l] = static_cast<uint8_t>(q);
    }
  }
  return fit;
}

void QuantizeQ4_K(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const KQuantFit fit = FitScaleMin(src + b * kSuperBlock, 15);
    BlockQ4_K block;
    block.d = fit.d;
    block.dmin = fit.dmin;
    EncodeQ4KScaleMin(fit.sc, fit.m, block.scales);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l)
        block.qs[32 * c + l] = static_cast<uint8_t>(fit.q[64 * c + l] | (fit.q[64 * c + 32 + l] << 4));
    }
    std::memcpy(dst + b * sizeof(BlockQ4_K), &block, sizeof(block));
  }
}

void QuantizeQ5_K(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const KQuantFit fit = FitScaleMin(src + b * kSuperBlock, 31);
    BlockQ5_K block;
    block.d = fit.d;
    block.dmin = fit.dmin;
    EncodeQ4KScaleMin(fit.sc, fit.m, block.scales);
    std::memset(block.qh, 0, sizeof(block.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = fit.q[64 * c + l], hi = fit.q[64 * c + 32 + l];
        block.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xf) | ((hi & 0xf) << 4));
        block.qh[l] = static_cast<uint8_t>(block.qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
    std::memcpy(dst + b * sizeof(BlockQ5_K), &block, sizeof(block));
  }
}

void QuantizeQ6_K(const float* src, std::byte* dst, int64_t n) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float* x = src + b * kSuperBlock;
    float scale[16], max_scale = 0.0f;
    for (int j = 0; j < 16; ++j) {
      float amax = 0.0f;
      for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * j + l]));
      scale[j] = amax / 31.0f;
      max_scale = std::max(max_scale, scale[j]);
    }
    BlockQ6_K block;
    std::memset(&block, 0, sizeof(block));
    block.d = F32ToF16(max_scale / 127.0f);
    const float d16 = F16ToF32(block.d);
    uint8_t quants[kSuperBlock];
    for (int j = 0; j < 16; ++j) {
      const long sc = d16 > 0 ? std::clamp(std::lround(scale[j] / d16), 0L, 127L) : 0;
      block.scales[j] = static_cast<int8_t>(sc);
      const float step = d16 * static_cast<float>(sc);
      for (int l = 0; l < 16; ++l) {
        const long q = step > 0 ? std::clamp(std::lround(x[16 * j + l] / step), -32L, 31L) : 0;
        quants[16 * j + l] = static_cast<uint8_t>(q + 32);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = quants + 128 * half;
      uint8_t* ql = block.ql + 64 * half;
      uint8_t* qh = block.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0xf) | ((q[l + 64] & 0xf) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xf) | ((q[l + 96] & 0xf) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
    std::memcpy(dst + b * sizeof(BlockQ6_K), &block, sizeof(block));
  }
}

}  // namespace

bool CanQuantize(TensorType type) { return CanDequantize(type); }

void QuantizeRow(TensorType type, const float* src, std::byte* dst, int64_t n) {
  LOCKSTEP_CHECK(CanQuantize(type));
  LOCKSTEP_CHECK(n % GetTensorTypeTraits(type).block_elements == 0);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case TensorType::kF16:
      QuantizeF16(src, dst, n);
      break;
    case TensorType::kBF16:
      QuantizeBF16(src, dst, n);
      break;
    case TensorType::kQ8_0:
      QuantizeQ8_0(src, dst, n);
      break;
    case TensorType::kQ4_0:
      QuantizeQ4_0(src, dst, n);
      break;
    case TensorType::kQ5_0:
      QuantizeQ5_0(src, dst, n);
      break;
    case TensorType::kQ5_1:
      QuantizeQ5_1(src, dst, n);
      break;
    case TensorType::kQ2_K:
      QuantizeQ2_K(src, dst, n);
      break;
    case TensorType::kQ3_K:
      QuantizeQ3_K(src, dst, n);
      break;
    case TensorType::kQ4_K:
      QuantizeQ4_K(src, dst, n);
      break;
    case TensorType::kQ5_K:
      QuantizeQ5_K(src, dst, n);
      break;
    case TensorType::kQ6_K:
      QuantizeQ6_K(src, dst, n);
      break;
    case TensorType::kIQ4_NL:
      QuantizeIQ4_NL(src, dst, n);
      break;
    case TensorType::kIQ4_XS:
      QuantizeIQ4_XS(src, dst, n);
      break;
    case TensorType::kMXFP4:
      QuantizeMXFP4(src, dst, n);
      break;
    default:
      LOCKSTEP_CHECK(false);
  }
}

}  // namespace lockstep
