// IEEE half (f16) and bfloat16 (bf16) <-> f32 conversions, bit-exact, round-to-nearest-even, portable scalar
// code usable inline from any kernel. NaNs stay NaNs (quiet), infinities stay infinities, f16 overflow gives
// infinity, f16 subnormals are produced and consumed exactly. Pure functions, thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace lockstep {

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t F32ToF16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // infinity or NaN (keep the top payload bits, force quiet)
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (abs > 0x7f800000u ? (0x200u | ((abs >> 13) & 0x3ffu)) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (abs >= 0x38800000u) {                                              // normal f16 result
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal (or zero) result: adding 0.5 puts the f16 subnormal ulp (2^-24) at the f32 ulp, so the FPU
  // rounds to nearest even for us; 0x400 (rounding up to the smallest normal) is the right encoding too.
  const float shifted = std::bit_cast<float>(abs) + 0.5f;
  return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
}

inline float BF16ToF32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t F32ToBF16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace lockstep
