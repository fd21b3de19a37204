#include "tensor/packed_weights.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "base/status.h"
#include "tensor/matmul.h"
#include "tensor/quant_blocks.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Q8_0 / Q4_0 / IQ4_NL / MXFP4: one 32-element block of output o into its packed unit.
void PackSmallBlock(TensorType type, const std::byte* src, int o, std::byte* dst) {
  const bool q8 = type == TensorType::kQ8_0, mxfp4 = type == TensorType::kMXFP4;
  const int quant_bytes = q8 ? 32 : 16;
  const int quants_at = mxfp4 ? 1 : 2;  // after the block's scale: MXFP4's exponent byte, the others' f16
  // Q8_0 is stored offset by 128 (flip each byte's top bit), the VPDPBUSD operand form. 4 bytes at a time.
  const uint32_t flip = q8 ? 0x80808080u : 0u;
  for (int k = 0; k < quant_bytes / 4; ++k) {
    uint32_t v;
    std::memcpy(&v, src + quants_at + 4 * k, 4);
    v ^= flip;
    std::memcpy(dst + 4 * kPackedGroup * k + 4 * o, &v, 4);
  }
  if (mxfp4) {  // the scale as an exact f32
    const float d = E8M0Half(static_cast<uint8_t>(src[0]));
    std::memcpy(dst + PackedScaleOffset(type) + 4 * o, &d, 4);
  } else {
    std::memcpy(dst + PackedScaleOffset(type) + 2 * o, src, 2);  // f16 scale
  }
}

// Q5_0 / Q5_1: one block of output o: Q4_0's nibble vectors, the fifth bits as Q5_K's (PackQ5K), d and m.
void PackQ5Block(TensorType type, const std::byte* src, int o, std::byte* dst) {
  const bool q5_1 = type == TensorType::kQ5_1;
  uint8_t qh[4], qs[16];
  const int quants = q5_1 ? 4 : 2;  // byte offset of qh
  std::memcpy(qh, src + quants, 4);
  std::memcpy(qs, src + quants + 4, 16);
  for (int k = 0; k < 4; ++k) {
    for (int e = 0; e < 4; ++e) {
      const int lo = Q5Quant(qh, qs, 4 * k + e), hi = Q5Quant(qh, qs, 16 + 4 * k + e);
      dst[4 * kPackedGroup * k + 4 * o + e] = static_cast<std::byte>((lo & 0xf) | ((hi & 0xf) << 4));
    }
  }
  for (int e = 0; e < 4; ++e) {
    uint8_t bits = 0;
    for (int k = 0; k < 4; ++k) {
      bits = static_cast<uint8_t>(bits | ((Q5Quant(qh, qs, 4 * k + e) >> 4) << k) |
                                  ((Q5Quant(qh, qs, 16 + 4 * k + e) >> 4) << (4 + k)));
    }
    dst[kQ5High + 4 * o + e] = static_cast<std::byte>(bits);
  }
  std::memcpy(dst + kQ5D + 2 * o, src, 2);
  if (q5_1) std::memcpy(dst + kQ5M + 2 * o, src + 2, 2);
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

// Q4_K / Q5_K: sub-block j's nibbles (q[j][l] & 15), 8-bit scales and mins, d and dmin of output o.
void PackScaleMinUnit(const uint8_t (*q)[32], const uint8_t scales[12], uint16_t d, uint16_t dmin, int o,
                      std::byte* dst) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    PackNibbles(q[j], o, dst + 256 * j);
    DecodeQ4KScaleMin(scales, j, &sc, &m);
    dst[kQ4KScales + kPackedGroup * j + o] = static_cast<std::byte>(sc);
    dst[kQ4KMins + kPackedGroup * j + o] = static_cast<std::byte>(m);
  }
  std::memcpy(dst + kQ4KD + 2 * o, &d, 2);
  std::memcpy(dst + kQ4KDmin + 2 * o, &dmin, 2);
}

void PackQ4K(const BlockQ4_K& block, int o, std::byte* dst) {
  uint8_t q[8][32];
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) q[j][l] = (block.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
  }
  PackScaleMinUnit(q, block.scales, block.d, block.dmin, o, dst);
}

// As Q4_K, then per sub-block one vector of fifth bits: byte 4o+e holds bit 4 of element 4k+e at bit k and
// bit 4 of element 16+4k+e at bit 4+k (k < 4).
void PackQ5K(const BlockQ5_K& block, int o, std::byte* dst) {
  uint8_t q[8][32];
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) q[j][l] = static_cast<uint8_t>(Q5KQuant(block, 32 * j + l));
    for (int e = 0; e < 4; ++e) {
      uint8_t bits = 0;
      for (int k = 0; k < 4; ++k) {
        bits = static_cast<uint8_t>(bits | ((q[j][4 * k + e] >> 4) << k) |
                                    ((q[j][16 + 4 * k + e] >> 4) << (4 + k)));
      }
      dst[kQ5KHigh + 4 * kPackedGroup * j + 4 * o + e] = static_cast<std::byte>(bits);
    }
  }
  PackScaleMinUnit(q, block.scales, block.d, block.dmin, o, dst);
}

// IQ4_XS: sub-block j's index nibbles as Q4_0's, its scale ls - 32 as an int8, d.
void PackIQ4XS(const BlockIQ4_XS& block, int o, std::byte* dst) {
  for (int j = 0; j < 8; ++j) {
    uint8_t q[32];
    for (int e = 0; e < 32; ++e) q[e] = static_cast<uint8_t>(IQ4Index(block.qs + 16 * j, e));
    PackNibbles(q, o, dst + 256 * j);
    dst[kIQ4XSScales + kPackedGroup * j + o] =
        static_cast<std::byte>(static_cast<int8_t>(IQ4XSScale(block, j)));
  }
  std::memcpy(dst + kIQ4XSD + 2 * o, &block.d, 2);
}

// Q6_K's unit from the 6-bit quants q[e] (value - 32), the 16 int8 scales and d of output o.
void PackSixBitUnit(const uint8_t q_all[256], const int8_t scales[16], uint16_t d, int o, std::byte* dst) {
  for (int j = 0; j < 8; ++j) {
    const uint8_t* q = q_all + 32 * j;
    PackNibbles(q, o, dst + 256 * j);
    for (int h = 0; h < 2; ++h) {
      for (int e = 0; e < 4; ++e) {
        uint8_t bits = 0;
        for (int k = 0; k < 4; ++k)
          bits = static_cast<uint8_t>(bits | ((q[16 * h + 4 * k + e] >> 4) << (2 * k)));
        dst[kQ6KHigh + 128 * j + 64 * h + 4 * o + e] = static_cast<std::byte>(bits);
      }
      dst[kQ6KScales + 32 * j + kPackedGroup * h + o] = static_cast<std::byte>(scales[2 * j + h]);
    }
  }
  std::memcpy(dst + kQ6KD + 2 * o, &d, 2);
}

void PackQ6K(const BlockQ6_K& block, int o, std::byte* dst) {
  uint8_t q[256];
  for (int e = 0; e < 256; ++e) q[e] = static_cast<uint8_t>(Q6KQuant(block, e));
  PackSixBitUnit(q, block.scales, block.d, o, dst);
}

// Q3_K in Q6_K's unit: quant + 32 (28..35) as the 6-bit quant, scale - 32 as the int8 scale, the same d, so
// that Q6_K's tiles compute Q3_K's canonical products.
void PackQ3K(const BlockQ3_K& block, int o, std::byte* dst) {
  uint8_t q[256];
  int8_t scales[16];
  for (int e = 0; e < 256; ++e) q[e] = static_cast<uint8_t>(Q3KQuant(block, e) + 32);
  for (int j = 0; j < 16; ++j) scales[j] = static_cast<int8_t>(Q3KScale(block.scales, j));
  PackSixBitUnit(q, scales, block.d, o, dst);
}

}  // namespace

void PackedWeightsDeleter::operator()(PackedWeights* p) const { delete p; }

bool CanPackWeights(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ5_0 ||
         type == TensorType::kQ5_1 || type == TensorType::kQ4_K || type == TensorType::kQ5_K ||
         type == TensorType::kQ6_K || type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS ||
         type == TensorType::kQ3_K || type == TensorType::kMXFP4;
}

namespace {

size_t PackedBytes(const PackedWeights& p) { return static_cast<size_t>(p.groups * p.units * p.unit_bytes); }

// The layout fields of w's packed form (no bytes yet).
PackedWeightsPtr DescribePacked(const WeightMatrix& w) {
  PackedWeightsPtr packed(new PackedWeights);
  packed->type = w.type;
  packed->in = w.in;
  packed->out = w.out;
  packed->groups = (w.out + kPackedGroup - 1) / kPackedGroup;
  const TensorTypeTraits traits = GetTensorTypeTraits(w.type);
  LOCKSTEP_CHECK(w.in % traits.block_elements == 0);
  packed->unit_elements = traits.block_elements;
  packed->units = w.in / traits.block_elements;
  // Same bytes as the original, except Q4_K / Q5_K / IQ4_XS whose 6-bit scales (and mins) are unpacked to
  // bytes (+2.8%, +2.3%, +2.9% with IQ4_XS's padding), Q3_K in Q6_K's unit, and MXFP4 whose exponent bytes
  // become f32 scales (+18%).
  packed->unit_bytes = w.type == TensorType::kQ4_K     ? kQ4KUnit
                       : w.type == TensorType::kQ5_K   ? kQ5KUnit
                       : w.type == TensorType::kIQ4_XS ? kIQ4XSUnit
                       : w.type == TensorType::kQ3_K   ? kQ6KUnit
                       : w.type == TensorType::kMXFP4  ? kMXFP4Unit
                                                       : kPackedGroup * traits.block_bytes;
  return packed;
}

// Fills dst_base (PackedBytes(*packed) bytes) with w in the layout `packed` describes.
void FillPacked(const WeightMatrix& w, const PackedWeights* packed, std::byte* dst_base) {
  std::memset(dst_base, 0, PackedBytes(*packed));
  const TensorTypeTraits traits = GetTensorTypeTraits(w.type);
  const size_t row_bytes = RowBytes(w.type, w.in);
  for (int64_t g = 0; g < packed->groups; ++g) {
    for (int64_t u = 0; u < packed->units; ++u) {
      std::byte* dst = dst_base + (g * packed->units + u) * packed->unit_bytes;
      for (int o = 0; o < kPackedGroup; ++o) {
        const int64_t row = g * kPackedGroup + o;
        if (row >= w.out) break;  // padding stays zero (zero scales)
        const std::byte* src = w.data + row * row_bytes + u * traits.block_bytes;
        if (w.type == TensorType::kQ4_K) {
          BlockQ4_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ4K(block, o, dst);
        } else if (w.type == TensorType::kQ5_K) {
          BlockQ5_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ5K(block, o, dst);
        } else if (w.type == TensorType::kQ5_0 || w.type == TensorType::kQ5_1) {
          PackQ5Block(w.type, src, o, dst);
        } else if (w.type == TensorType::kIQ4_XS) {
          BlockIQ4_XS block;
          std::memcpy(&block, src, sizeof(block));
          PackIQ4XS(block, o, dst);
        } else if (w.type == TensorType::kQ6_K) {
          BlockQ6_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ6K(block, o, dst);
        } else if (w.type == TensorType::kQ3_K) {
          BlockQ3_K block;
          std::memcpy(&block, src, sizeof(block));
          PackQ3K(block, o, dst);
        } else {
          PackSmallBlock(w.type, src, o, dst);
        }
      }
    }
  }
}

}  // namespace

PackedWeightsPtr PackWeights(const WeightMatrix& w) {
  if (!CanPackWeights(w.type)) return nullptr;
  const WeightMatrix* one[] = {&w};
  return std::move(PackWeightsTogether(one, 1)[0]);
}

std::vector<PackedWeightsPtr> PackWeightsTogether(std::span<const WeightMatrix* const> ws, int threads) {
  LOCKSTEP_CHECK(threads >= 1);
  std::vector<PackedWeightsPtr> packed(ws.size());
  std::vector<size_t> offsets(ws.size(), 0), order;
  size_t total = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (!CanPackWeights(ws[i]->type)) continue;
    packed[i] = DescribePacked(*ws[i]);
    offsets[i] = total;
    total += (PackedBytes(*packed[i]) + 63) / 64 * 64;
    order.push_back(i);
  }
  if (order.empty()) return packed;
  std::byte* base = static_cast<std::byte*>(AllocateLarge(total));
  if (base == nullptr) throw std::bad_alloc();
  const std::shared_ptr<const std::byte> storage(
      base, [](const std::byte* p) { FreeLarge(const_cast<std::byte*>(p)); });
  for (size_t i : order) {
    packed[i]->storage = storage;
    packed[i]->bytes = base + offsets[i];
  }
  // Largest first, so that the biggest matrix (often the output) does not finish last on one thread; each
  // thread takes the next unpacked one.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return PackedBytes(*packed[a]) > PackedBytes(*packed[b]); });
  threads = std::min<int>(threads, int(order.size()));
  std::atomic<size_t> next{0};
  auto pack = [&](int64_t, int) {
    for (size_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < order.size();) {
      const size_t i = order[k];
      FillPacked(*ws[i], packed[i].get(), base + offsets[i]);
    }
  };
  if (threads == 1) {
    pack(0, 0);
  } else {
    ThreadPool pool(threads);
    pool.Run(threads, pack);
  }
  return packed;
}

}  // namespace lockstep
