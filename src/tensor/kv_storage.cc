#include "tensor/kv_storage.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define LOCKSTEP_KV_STORAGE_X86 1
#endif

namespace lockstep {
namespace {

// src[0..n) stored as f32 or f16 at element 0, stride, 2 * stride, ... of dst.
void StoreFloats(KvDtype dtype, const float* src, std::byte* dst, int n, size_t stride) {
  if (dtype == KvDtype::kF32) {
    float* f = reinterpret_cast<float*>(dst);
    if (stride == 1) {
      std::memcpy(f, src, size_t(n) * sizeof(float));
    } else {
      for (int i = 0; i < n; ++i) f[i * stride] = src[i];
    }
    return;
  }
  uint16_t* h = reinterpret_cast<uint16_t*>(dst);
  int i = 0;
#ifdef LOCKSTEP_KV_STORAGE_X86
  for (; i + 8 <= n; i += 8) {  // the same rounding as F32ToF16 (to nearest even)
    alignas(16) uint16_t eight[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(eight),
                    _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (stride == 1) {
      std::memcpy(h + i, eight, sizeof(eight));
    } else {
      for (int j = 0; j < 8; ++j) h[(i + j) * stride] = eight[j];
    }
  }
#endif
  for (; i < n; ++i) h[i * stride] = F32ToF16(src[i]);
}

}  // namespace

const char* KvDtypeName(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF16:
      return "f16";
    case KvDtype::kF32:
      return "f32";
    case KvDtype::kQ8_0:
      return "q8_0";
  }
  return "?";
}

std::optional<KvDtype> ParseKvDtype(std::string_view name) {
  for (KvDtype dtype : kKvDtypes) {
    if (name == KvDtypeName(dtype)) return dtype;
  }
  return std::nullopt;
}

size_t KvHeadBytes(KvDtype dtype, int32_t block_tokens, int head_dim) {
  const size_t elements = size_t(block_tokens) * size_t(head_dim);
  switch (dtype) {
    case KvDtype::kF32:
      return elements * 4;
    case KvDtype::kF16:
      return elements * 2;
    case KvDtype::kQ8_0:
      return elements + size_t(block_tokens) * size_t(head_dim / KvScaleGroup(head_dim)) * sizeof(uint16_t);
  }
  return 0;
}

uint16_t QuantizeKvGroup(const float* x, int n, int8_t* q, size_t q_stride) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));  // a NaN is skipped
  // The scale as stored; quants are rounded against it, so q * d is the nearest stored value to x.
  const uint16_t bits = F32ToF16(std::min(amax / 127.0f, 65504.0f));
  const float d = F16ToF32(bits);
  for (int i = 0; i < n; ++i) {
    float r = d > 0.0f ? std::nearbyint(x[i] / d) : 0.0f;  // the default rounding: to nearest even
    if (std::isnan(r)) r = 0.0f;                           // a NaN element (no int8 holds one)
    q[i * q_stride] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return bits;
}

void StoreKey(KvDtype dtype, const float* x, int head_dim, int32_t block_tokens, int32_t slot,
              std::byte* head) {
  if (dtype != KvDtype::kQ8_0) {
    const size_t element = dtype == KvDtype::kF32 ? 4 : 2;
    StoreFloats(dtype, x, head + size_t(slot) * element, head_dim, size_t(block_tokens));
    return;
  }
  const int group = KvScaleGroup(head_dim), groups = head_dim / group;
  int8_t* quants = reinterpret_cast<int8_t*>(head) + slot;
  uint16_t* scales = reinterpret_cast<uint16_t*>(head + KvScaleOffset(block_tokens, head_dim)) + slot;
  for (int g = 0; g < groups; ++g) {
    scales[size_t(g) * block_tokens] = QuantizeKvGroup(
        x + size_t(g) * group, group, quants + size_t(g) * group * block_tokens, size_t(block_tokens));
  }
}

void StoreValue(KvDtype dtype, const float* x, int head_dim, int32_t block_tokens, int32_t slot,
                std::byte* head) {
  if (dtype != KvDtype::kQ8_0) {
    const size_t element = dtype == KvDtype::kF32 ? 4 : 2;
    StoreFloats(dtype, x, head + size_t(slot) * size_t(head_dim) * element, head_dim, 1);
    return;
  }
  const int group = KvScaleGroup(head_dim), groups = head_dim / group;
  int8_t* quants = reinterpret_cast<int8_t*>(head) + size_t(slot) * size_t(head_dim);
  uint16_t* scales = reinterpret_cast<uint16_t*>(head + KvScaleOffset(block_tokens, head_dim)) +
                     size_t(slot) * size_t(groups);
  for (int g = 0; g < groups; ++g) {
    scales[g] = QuantizeKvGroup(x + size_t(g) * group, group, quants + size_t(g) * group, 1);
  }
}

}  // namespace lockstep
