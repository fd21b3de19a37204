// Portable packed Q8_0 / Q4_0 kernel written with Highway ops on 128-bit vectors, for CPUs without the x86
// kernels (NEON, SSE4 ...); included inside namespace lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc and
// compiled for every target, so tests run it on each target this machine has. A 16-byte slice of a packed
// weight vector holds 4 outputs x 4 bytes; each 4-byte activation group meets those bytes in 16-bit lanes
// (products fit: 255 * 127), pairs are widened and summed into 32-bit lanes (ReorderWidenMulAccumulate, then
// RearrangeToOddPlusEven), and pairs of pairs are added across two vectors: exact integer block dots. The
// float order is the packed order of tensor/matmul_internal.h: fused multiply-adds where the target has
// them, else std::fma per output, so every target matches PackedDotReference bit for bit. K-quants use the
// scalar reference here.

#if HWY_TARGET != HWY_SCALAR
namespace portable {

namespace hn = hwy::HWY_NAMESPACE;
using DU8 = hn::FixedTag<uint8_t, 16>;
using DI8 = hn::FixedTag<int8_t, 16>;
using DU16 = hn::FixedTag<uint16_t, 8>;
using DI16 = hn::FixedTag<int16_t, 8>;
using DI32 = hn::FixedTag<int32_t, 4>;
using DF32 = hn::FixedTag<float, 4>;
using VU8 = hn::Vec<DU8>;
using VI32 = hn::Vec<DI32>;

// Pair sums of 4 outputs (two per half) for one activation row, accumulated over a block.
struct PairSums {
  VI32 lo0, lo1, hi0, hi1;  // lo: outputs 0-1, hi: outputs 2-3; the 0/1 split is ReorderWidenMulAccumulate's
  PairSums() : lo0(hn::Zero(DI32())), lo1(hn::Zero(DI32())), hi0(hn::Zero(DI32())), hi1(hn::Zero(DI32())) {}

  // w_lo, w_hi: the slice's weight bytes of outputs 0-1 and 2-3 as 16-bit lanes; x4: 4 activation bytes.
  void Add(hn::Vec<DI16> w_lo, hn::Vec<DI16> w_hi, const int8_t* x4) {
    int32_t group;
    __builtin_memcpy(&group, x4, 4);
    // [x0 x1 x2 x3 x0 x1 x2 x3] as 16-bit lanes, one copy per output of a half.
    const auto x = hn::PromoteTo(DI16(), hn::LowerHalf(hn::BitCast(DI8(), hn::Set(DI32(), group))));
    lo0 = hn::ReorderWidenMulAccumulate(DI32(), w_lo, x, lo0, lo1);
    hi0 = hn::ReorderWidenMulAccumulate(DI32(), w_hi, x, hi0, hi1);
  }
  // [dot of output 0, 1, 2, 3].
  VI32 Dots() const {
    const VI32 lo = hn::RearrangeToOddPlusEven(lo0, lo1);  // output 0: lanes 0-1, output 1: lanes 2-3
    const VI32 hi = hn::RearrangeToOddPlusEven(hi0, hi1);
    return hn::Add(hn::ConcatEven(DI32(), hi, lo), hn::ConcatOdd(DI32(), hi, lo));
  }
};

// Adds weight vector w (16 bytes: 4 outputs x 4) times each row's 4 bytes at x[r] + x_offset.
template <int kRows>
HWY_INLINE void AddSlice(VU8 w, const int8_t* const* x, int x_offset, PairSums* sums) {
  const auto w_lo = hn::BitCast(DI16(), hn::PromoteTo(DU16(), hn::LowerHalf(w)));
  const auto w_hi = hn::BitCast(DI16(), hn::PromoteTo(DU16(), hn::UpperHalf(hn::Half<DU8>(), w)));
  for (int r = 0; r < kRows; ++r) sums[r].Add(w_lo, w_hi, x[r] + x_offset);
}

// Outputs [4c, 4c + 4) of packed group `group` for rows [r0, r0 + kRows): exact block dots (each weight slice
// widened once for all rows), then the packed float order.
template <TensorType kType, int kRows>
HWY_INLINE void SliceRows(const TileArgs& a, int64_t group, int c, int64_t r0, float (*acc)[4]) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = p.units;
  constexpr int kOffset = PackedValueOffset(kType);
  constexpr int kScales = PackedScaleOffset(kType);
  hn::Vec<DF32> acc_v[kRows];
  for (int r = 0; r < kRows; ++r) acc_v[r] = hn::Zero(DF32());
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* unit = p.Unit(group, b);
    const auto* bytes = reinterpret_cast<const uint8_t*>(unit) + 16 * c;
    const int8_t* x[kRows];
    for (int r = 0; r < kRows; ++r) x[r] = a.q + (r0 + r) * a.q_stride + 32 * b;
    PairSums sums[kRows];
    if constexpr (kType == TensorType::kQ8_0) {
      for (int k = 0; k < 8; ++k) AddSlice<kRows>(hn::LoadU(DU8(), bytes + 64 * k), x, 4 * k, sums);
    } else {  // Q4_0: low nibbles are elements 4k.., high nibbles 16 + 4k..
      const VU8 mask = hn::Set(DU8(), 0x0f);
      for (int k = 0; k < 4; ++k) {
        const VU8 v = hn::LoadU(DU8(), bytes + 64 * k);
        AddSlice<kRows>(hn::And(v, mask), x, 4 * k, sums);
        AddSlice<kRows>(hn::ShiftRight<4>(v), x, 16 + 4 * k, sums);
      }
    }
    const auto* h = reinterpret_cast<const hwy::float16_t*>(unit + kScales) + 4 * c;
    const auto dw = hn::PromoteTo(DF32(), hn::LoadU(hn::Rebind<hwy::float16_t, DF32>(), h));
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = (r0 + r) * blocks + b;
      const VI32 dots = hn::Add(sums[r].Dots(), hn::Set(DI32(), -kOffset * a.sums[i]));
      const auto scale = hn::Mul(dw, hn::Set(DF32(), a.d[i]));  // weight scale * activation scale
#if HWY_NATIVE_FMA
      acc_v[r] = hn::MulAdd(hn::ConvertTo(DF32(), dots), scale, acc_v[r]);
#else
      alignas(16) int32_t dot_lanes[4];
      alignas(16) float scale_lanes[4];
      hn::Store(dots, DI32(), dot_lanes);
      hn::Store(scale, DF32(), scale_lanes);
      for (int l = 0; l < 4; ++l) {
        acc[r][l] = std::fma(static_cast<float>(dot_lanes[l]), scale_lanes[l], acc[r][l]);
      }
#endif
    }
  }
#if HWY_NATIVE_FMA
  for (int r = 0; r < kRows; ++r) hn::StoreU(acc_v[r], DF32(), acc[r]);
#endif
}

// Outputs [16 * group, min(16 * group + 16, o_end)), every row.
template <TensorType kType>
void PackedGroupRows(const TileArgs& a, int64_t group, int64_t o_end) {
  constexpr int kRows = 4;
  const int64_t o0 = group * kPackedGroup;
  const int valid = static_cast<int>(std::min<int64_t>(kPackedGroup, o_end - o0));
  for (int c = 0; c < 4 && 4 * c < valid; ++c) {
    const int n = std::min(4, valid - 4 * c);
    for (int64_t r0 = 0; r0 < a.rows;) {
      float acc[kRows][4] = {};
      const int rows = a.rows - r0 >= kRows ? kRows : 1;
      if (rows == kRows) {
        SliceRows<kType, kRows>(a, group, c, r0, acc);
      } else {
        SliceRows<kType, 1>(a, group, c, r0, acc);
      }
      for (int r = 0; r < rows; ++r) {
        __builtin_memcpy(a.y + (r0 + r) * a.out + o0 + 4 * c, acc[r], sizeof(float) * static_cast<size_t>(n));
      }
      r0 += rows;
    }
  }
}

}  // namespace portable
#endif  // HWY_TARGET != HWY_SCALAR

// y for outputs [o_begin, o_end) (o_begin a multiple of 16) of packed weights, every row.
inline void PortablePackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
#if HWY_TARGET != HWY_SCALAR
  if (a.type == TensorType::kQ8_0 || a.type == TensorType::kQ4_0) {
    for (int64_t g = o_begin / kPackedGroup; g * kPackedGroup < o_end; ++g) {
      if (a.type == TensorType::kQ8_0) {
        portable::PackedGroupRows<TensorType::kQ8_0>(a, g, std::min(o_end, a.out));
      } else {
        portable::PackedGroupRows<TensorType::kQ4_0>(a, g, std::min(o_end, a.out));
      }
    }
    return;
  }
#endif
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = PackedDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                              a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
}
