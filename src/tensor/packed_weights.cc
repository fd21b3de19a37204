#include "tensor/packed_weights.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "base/status.h"
#include "tensor/matmul.h"
#include "tensor/quant_blocks.h"

namespace lockstep {
namespace {

// Q8_0 / Q4_0: one 32-element block of output o into its packed unit.
void PackSmallBlock(bool q8, const std::byte* src, int o, std::byte* dst) {
  const int quant_bytes = q8 ? 32 : 16;
  // Q8_0 is stored offset by 128 (flip each byte's top bit), the VPDPBUSD operand form. 4 bytes at a time.
  const uint32_t flip = q8 ? 0x80808080u : 0u;
  for (int k = 0; k < quant_bytes / 4; ++k) {
    uint32_t v;
    std::memcpy(&v, src + 2 + 4 * k, 4);
    v ^= flip;
    std::memcpy(dst + 4 * kPackedGroup * k + 4 * o, &v, 4);
  }
  std::memcpy(dst + PackedScaleOffset(q8 ? TensorType::kQ8_0 : TensorType::kQ4_0) + 2 * o, src,
              2);  // f16 scale
}

// Nibble vectors of one sub-block: vector k byte 4o+e = q[4k+e] | q[16+4k+e] << 4 (q < 16 each).
void PackNibbles(const uint8_t q[32], int o, std::byte* dst) {
  for (int k = 0; k < 4; ++k) {
    for (int e = 0; e < 4; ++e) {
      dst[4 * kPackedGroup * k + 4 * o + e] =
          static_cast<std::byte>((q[4 * k + e] & 0xf) | ((q[16 + 4 * k + e] & 0xf) << 4));
    }
  }
}

void PackQ4K(const BlockQ4_K& block, int o, std::byte* dst) {
  for (int j = 0; j < 8; ++j) {
    uint8_t q[32], sc, m;
    for (int l = 0; l < 32; ++l) q[l] = (block.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
    PackNibbles(q, o, dst + 256 * j);
    DecodeQ4KScaleMin(block.scales, j, &sc, &m);
    dst[kQ4KScales + kPackedGroup * j + o] = static_cast<std::byte>(sc);
    dst[kQ4KMins + kPackedGroup * j + o] = static_cast<std::byte>(m);
  }
  std::memcpy(dst + kQ4KD + 2 * o, &block.d, 2);
  std::memcpy(dst + kQ4KDmin + 2 * o, &block.dmin, 2);
}

void PackQ6K(const BlockQ6_K& block, int o, std::byte* dst) {
  for (int j = 0; j < 8; ++j) {
    uint8_t q[32];
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(Q6KQuant(block, 32 * j + l));
    PackNibbles(q, o, dst + 256 * j);
    for (int h = 0; h < 2; ++h) {
      for (int e = 0; e < 4; ++e) {
        uint8_t bits = 0;
        for (int k = 0; k < 4; ++k)
          bits = static_cast<uint8_t>(bits | ((q[16 * h + 4 * k + e] >> 4) << (2 * k)));
        dst[kQ6KHigh + 128 * j + 64 * h + 4 * o + e] = static_cast<std::byte>(bits);
      }
      dst[kQ6KScales + 32 * j + kPackedGroup * h + o] = static_cast<std::byte>(block.scales[2 * j + h]);
    }
  }
  std::memcpy(dst + kQ6KD + 2 * o, &block.d, 2);
}

}  // namespace

template <>
std::byte* HugePageAllocator<std::byte>::allocate(size_t n) {
  void* p = AllocateLarge(n);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

void PackedWeightsDeleter::operator()(PackedWeights* p) const { delete p; }

bool CanPackWeights(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ4_K ||
         type == TensorType::kQ6_K;
}

PackedWeightsPtr PackWeights(const WeightMatrix& w) {
  if (!CanPackWeights(w.type)) return nullptr;
  PackedWeightsPtr packed(new PackedWeights);
  packed->type = w.type;
  packed->in = w.in;
  packed->out = w.out;
  packed->groups = (w.out + kPackedGroup - 1) / kPackedGroup;
  const TensorTypeTraits traits = GetTensorTypeTraits(w.type);
  LOCKSTEP_CHECK(w.in % traits.block_elements == 0);
  packed->unit_elements = traits.block_elements;
  packed->units = w.in / traits.block_elements;
  // Same bytes as the original, except Q4_K whose 6-bit scales and mins are unpacked to bytes (+2.8%).
  packed->unit_bytes = w.type == TensorType::kQ4_K ? kQ4KUnit : kPackedGroup * traits.block_bytes;
  packed->data.assign(static_cast<size_t>(packed->groups * packed->units * packed->unit_bytes), std::byte{0});
  const size_t row_bytes = RowBytes(w.type, w.in);
  for (int64_t g = 0; g < packed->groups; ++g) {
    for (int64_t u = 0; u < packed->units; ++u) {
      std::byte* dst = packed->data.data() + (g * packed->units + u) * packed->unit_bytes;
      for (int o = 0; o < kPackedGroup; ++o) {
        const int64_t row = g * kPackedGroup + o;
        if (row >= w.out) break;  // padding stays zero (zero scales)
        const std::byte* src = w.data + row * row_bytes + u * traits.block_bytes;
        if (w.type == TensorType::kQ4_K) {
          BlockQ4_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ4K(block, o, dst);
        } else if (w.type == TensorType::kQ6_K) {
          BlockQ6_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ6K(block, o, dst);
        } else {
          PackSmallBlock(w.type == TensorType::kQ8_0, src, o, dst);
        }
      }
    }
  }
  return packed;
}

}  // namespace lockstep
