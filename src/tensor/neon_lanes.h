// NeonLanes16: a 16-lane float vector as four 128-bit NEON registers (aarch64 only), the vector type the
// attention kernels are written over on ARM (tensor/attention_kernels_neon-inl.h,
// tensor/attention_decode.cc). Per lane its Fma is one fused multiply-add (vfmaq_f32), exactly std::fma, so
// kernels over it reproduce the scalar reference bit for bit.
#pragma once

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#include <cstddef>
#include <cstring>

#include "tensor/kv_storage.h"

namespace lockstep::attention {

struct NeonLanes16 {
  struct F {
    float32x4_t q[4];
  };
  static F Zero() { return Set1(0.0f); }
  static F Set1(float x) { return {{vdupq_n_f32(x), vdupq_n_f32(x), vdupq_n_f32(x), vdupq_n_f32(x)}}; }
  static F Fma(F a, F b, F c) {  // c + a * b, fused
    F r;
    for (int i = 0; i < 4; ++i) r.q[i] = vfmaq_f32(c.q[i], a.q[i], b.q[i]);
    return r;
  }
  static F Mul(F a, F b) {
    F r;
    for (int i = 0; i < 4; ++i) r.q[i] = vmulq_f32(a.q[i], b.q[i]);
    return r;
  }
  static F Load(const float* p) {
    F r;
    for (int i = 0; i < 4; ++i) r.q[i] = vld1q_f32(p + 4 * i);
    return r;
  }
  template <KvDtype kType>
  static F Load16(const std::byte* p) {  // 16 stored elements (f16, f32 or q8_0 quants), widened exactly
    if constexpr (kType == KvDtype::kF16) {
      F r;
      for (int i = 0; i < 4; ++i) r.q[i] = vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(p) + 4 * i));
      return r;
    } else if constexpr (kType == KvDtype::kQ8_0) {
      const int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(p));
      const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
      return {{vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))),
               vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi)))}};
    } else {
      return Load(reinterpret_cast<const float*>(p));
    }
  }
  static void Store(float* p, F v) {
    for (int i = 0; i < 4; ++i) vst1q_f32(p + 4 * i, v.q[i]);
  }
  static void StoreFirst(float* p, F v, int n) {
    float lanes[16];
    Store(lanes, v);
    std::memcpy(p, lanes, sizeof(float) * size_t(n));
  }
};

}  // namespace lockstep::attention
#endif
