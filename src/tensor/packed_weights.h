// Internal layout of PackedWeights (see tensor/matmul.h): weights regrouped so that the int8 GEMM kernels
// read 16 output rows at once (one 512-bit vector, or two 256-bit halves: bytes [32h, 32h + 32) of every
// 64-byte vector, elements [8h, 8h + 8) of every per-output array). Outputs are grouped by 16 (the last group
// zero-padded). A group stores, per unit (32 elements for Q8_0/Q4_0, a 256-element super-block for K-quants),
// `unit_bytes` bytes; "vector k" below holds, for each output o of the group, 4 bytes at 4o..4o+3:
//  - Q8_0 (544 bytes): 8 vectors, vector k = quants 4k..4k+3 as unsigned bytes q + 128; 16 f16 scales.
//  - Q4_0 (288 bytes): 4 vectors, vector k = stored qs bytes 4k..4k+3 (low nibbles: elements 4k.., high
//          nibbles: elements 16+4k..); 16 f16 scales.
//  - Q5_0 (352 bytes): Q4_0's 4 nibble vectors (the quants' low 4 bits); one vector of fifth bits (64), laid
//          out as Q5_K's below (bit k: element 4k + e, bit 4 + k: element 16 + 4k + e); 16 f16 d (32). The
//          same bytes as the original blocks (16 x 22), the unit of Q4_0 plus one vector.
//  - Q5_1 (384 bytes): Q5_0's unit, then 16 f16 m (32); 16 x 24 bytes.
//  - Q4_K (2368 bytes): per sub-block j < 8, 4 vectors of nibbles as Q4_0 (2048 bytes); then per j 16 u8
//          scales (128), per j 16 u8 mins (128), 16 f16 d (32), 16 f16 dmin (32).
//  - Q5_K (2880 bytes): Q4_K's unit (the quants' low nibbles, scales, mins, d, dmin at the same offsets),
//  then
//          per j one vector of fifth bits (512): byte 4o+e holds, at bit k (k < 4), bit 4 of element 4k + e
//          (the low nibble of vector k) and at bit 4 + k bit 4 of element 16 + 4k + e (its high nibble), so
//          that a tile ORs it in with one 16-bit shift and one mask per nibble vector: ((h << (4 - k)) &
//          0x10) and
//          ((h >> k) & 0x10). +2.3 % over the original 176-byte blocks (16 x 176 = 2816).
//  - IQ4_NL (288 bytes): Q4_0's unit (the stored index nibbles, 16 f16 d).
//  - MXFP4 (320 bytes): Q4_0's 4 vectors of index nibbles, then 16 f32 scales E8M0Half(e) (64): the scale
//          2^(e - 128) spans 2^-128..2^127, beyond f16, and f32 holds it exactly (+18 % over the original
//          16 x 17 bytes).
//  - IQ4_XS (2240 bytes): per sub-block j < 8, 4 vectors of index nibbles as Q4_0 (2048); per j 16 int8
//  scales
//          ls - 32 (128); 16 f16 d (32); 32 bytes of padding, so that every unit starts a cache line (+2.9 %
//          over the original 136-byte blocks, 16 x 136 = 2176).
//  - Q6_K (3360 bytes): per j < 8, 4 vectors of the quants' low nibbles as Q4_0 (2048); per j 2 vectors of
//          high bits (1024): vector h byte 4o+e holds, at bits 2k..2k+1, bits 4-5 of element 16h + 4k + e;
//          per j 32 int8 scales (the 16 outputs' scales of elements 0-15, then of 16-31) (256); 16 f16 d
//          (32).
//  - Q3_K (3360 bytes): Q6_K's unit, the quants + 32 (28..35) as its 6-bit quants, scale - 32 as its int8
//          scales, the same d, so that Q6_K's tiles run it (1.9x the original 16 x 110 bytes; a tile of its
//          own would read 3.4 bits a weight).
// Immutable after packing; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/large_allocation.h"
#include "gguf/tensor_type.h"
#include "tensor/prefetch.h"

namespace lockstep {

inline constexpr int kPackedGroup = 16;

struct PackedWeights {
  TensorType type = TensorType::kQ8_0;
  int64_t in = 0;
  int64_t out = 0;
  int64_t groups = 0;         // ceil(out / 16)
  int64_t units = 0;          // in / unit_elements
  int64_t unit_elements = 0;  // 32 or 256
  int64_t unit_bytes = 0;     // per (group, unit)
  // The bytes live in one buffer shared by every matrix packed together (PackWeightsTogether), on huge
  // pages: a model's matrices side by side in the order the forward pass reads them. SmolLM2's matrices
  // (117-940 KB each) were allocated one by one on 4 KiB pages; streamed every step, they ran at about half
  // the bandwidth of the 28 MB output matrix, which had huge pages of its own.
  std::shared_ptr<const std::byte> storage;
  const std::byte* bytes = nullptr;  // this matrix's groups x units x unit_bytes bytes, 64-byte aligned

  const std::byte* Unit(int64_t group, int64_t unit) const {
    return bytes + (group * units + unit) * unit_bytes;
  }
};

// Streaming packed weights from memory: a kernel's first row tile asks for the cache lines about
// kPrefetchBytes ahead in each group it reads (later row tiles find them in cache; PrefetchBytes,
// tensor/prefetch.h). Hardware prefetch alone left batch-1 decode below the memory bandwidth, the more so the
// more work per byte (Zen 5, side by side: Llama-1B-shape Q4_K_M 52 -> 78 tok/s, Q8_0 +6 %; SmolLM2-135M Q8_0
// +9 %, Q4_0 +11 %). A hint only: results do not change.
inline constexpr int64_t kPrefetchBytes = 2048;

// Q8_0 / Q4_0 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 units: the stored byte (Q8_0) or quant (nibble, with Q5's fifth
// bit) is the value plus this offset (unsigned, as VPDPBUSD takes it; Q5_1's quant is its value, the min
// apart; IQ4's and MXFP4's nibbles are table indices, which the kernels look up as the table values + 128),
// and the 16 f16 scales (MXFP4: f32) start at PackedScaleOffset, after the quant vectors.
constexpr int PackedValueOffset(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS ||
                 type == TensorType::kMXFP4
             ? 128
         : type == TensorType::kQ4_0 ? 8
         : type == TensorType::kQ5_0 ? 16
                                     : 0;
}
// Byte offsets inside a Q5_0 / Q5_1 unit: fifth-bit vector, d, m (Q5_1), unit sizes.
inline constexpr int kQ5High = 4 * 4 * kPackedGroup, kQ5D = kQ5High + 4 * kPackedGroup, kQ5M = kQ5D + 32;
inline constexpr int kQ5_0Unit = kQ5M, kQ5_1Unit = kQ5M + 32;
static_assert(kQ5_0Unit == kPackedGroup * 22 && kQ5_1Unit == kPackedGroup * 24);  // the blocks' own sizes
constexpr int PackedScaleOffset(TensorType type) {
  return type == TensorType::kQ8_0 ? 8 * 4 * kPackedGroup
         : type == TensorType::kQ4_0 || type == TensorType::kIQ4_NL || type == TensorType::kMXFP4
             ? 4 * 4 * kPackedGroup
             : kQ5D;
}

inline constexpr int kMXFP4Unit = 4 * 4 * kPackedGroup + 4 * kPackedGroup;
static_assert(kMXFP4Unit % 64 == 0);

// Byte offsets inside a K-quant unit.
inline constexpr int kQ4KScales = 2048, kQ4KMins = 2176, kQ4KD = 2304, kQ4KDmin = 2336, kQ4KUnit = 2368;
static_assert(kQ4KUnit % 64 == 0);
inline constexpr int kQ5KHigh = kQ4KUnit, kQ5KUnit = kQ4KUnit + 8 * 4 * kPackedGroup;
inline constexpr int kIQ4XSScales = 2048, kIQ4XSD = 2176, kIQ4XSUnit = 2240;
static_assert(kIQ4XSUnit % 64 == 0 && kIQ4XSUnit >= kIQ4XSD + 32);
inline constexpr int kQ6KHigh = 2048, kQ6KScales = 3072, kQ6KD = 3328, kQ6KUnit = 3360;

}  // namespace lockstep
