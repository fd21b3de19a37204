// Portable packed-weight kernel (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4; Q3_K as
// Q6_K)
// written with Highway ops on 128-bit vectors, for CPUs without the x86 kernels (NEON, SSE4 ...); included
// inside namespace lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc and compiled for every target, so tests
// run it on each target this machine has. A 16-byte slice of a packed weight vector holds 4 outputs x 4
// bytes; each 4-byte activation group meets those bytes in 16-bit lanes (products fit: 255 * 127), pairs are
// widened and summed into 32-bit lanes (ReorderWidenMulAccumulate, then RearrangeToOddPlusEven), and pairs of
// pairs are added across two vectors: exact integer block dots. The float order is the packed order of
// tensor/matmul_internal.h: fused multiply-adds where the target has them, else std::fma per output, so every
// target matches PackedDotReference bit for bit. K-quants run the same dots per 32-element sub-block (Q6_K
// per 16-element half, its scales changing there).

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

// IQ4_NL / IQ4_XS / MXFP4 index nibbles looked up as unsigned table values + 128 (the dots then take -128 *
// sum(x)).
template <TensorType kType>
HWY_INLINE VU8 TableLookup(VU8 nibbles) {
  static constexpr Table16 kPlus128 = TablePlus128(kType);
  return hn::TableLookupBytes(hn::BitCast(DU8(), hn::LoadU(DI8(), kPlus128.v)), nibbles);
}

// Adds weight vector w (16 bytes: 4 outputs x 4) times each row's 4 bytes at x[r] + x_offset.
template <int kRows>
HWY_INLINE void AddSlice(VU8 w, const int8_t* const* x, int x_offset, PairSums* sums) {
  const auto w_lo = hn::BitCast(DI16(), hn::PromoteTo(DU16(), hn::LowerHalf(w)));
  const auto w_hi = hn::BitCast(DI16(), hn::PromoteTo(DU16(), hn::UpperHalf(hn::Half<DU8>(), w)));
  for (int r = 0; r < kRows; ++r) sums[r].Add(w_lo, w_hi, x[r] + x_offset);
}

// acc += x * y per lane, fused: in vectors (acc_v) where the target has fused multiply-adds, else per lane
// with std::fma (acc).
HWY_INLINE void FusedAdd(hn::Vec<DF32> x, hn::Vec<DF32> y, hn::Vec<DF32>& acc_v, float* acc) {
#if HWY_NATIVE_FMA
  (void)acc;
  acc_v = hn::MulAdd(x, y, acc_v);
#else
  (void)acc_v;
  alignas(16) float x_lanes[4], y_lanes[4];
  hn::Store(x, DF32(), x_lanes);
  hn::Store(y, DF32(), y_lanes);
  for (int l = 0; l < 4; ++l) acc[l] = std::fma(x_lanes[l], y_lanes[l], acc[l]);
#endif
}

// Results of FusedAdd into acc.
template <int kRows>
HWY_INLINE void FinishFusedAdds(const hn::Vec<DF32>* acc_v, float (*acc)[4]) {
#if HWY_NATIVE_FMA
  for (int r = 0; r < kRows; ++r) hn::StoreU(acc_v[r], DF32(), acc[r]);
#else
  (void)acc_v;
  (void)acc;
#endif
}

// 4 f16 or u8 values (outputs 4c..4c+3 of a per-output array) as floats.
HWY_INLINE hn::Vec<DF32> LoadHalves4(const std::byte* p) {
  return hn::PromoteTo(
      DF32(), hn::LoadU(hn::Rebind<hwy::float16_t, DF32>(), reinterpret_cast<const hwy::float16_t*>(p)));
}
HWY_INLINE hn::Vec<DF32> LoadBytes4(const std::byte* p) {
  return hn::ConvertTo(DF32(), hn::PromoteTo(DI32(), hn::LoadU(hn::Rebind<uint8_t, DI32>(),
                                                               reinterpret_cast<const uint8_t*>(p))));
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
    } else if constexpr (kType == TensorType::kIQ4_NL || kType == TensorType::kMXFP4) {
      const VU8 mask = hn::Set(DU8(), 0x0f);
      for (int k = 0; k < 4; ++k) {
        const VU8 v = hn::LoadU(DU8(), bytes + 64 * k);
        AddSlice<kRows>(TableLookup<kType>(hn::And(v, mask)), x, 4 * k, sums);
        AddSlice<kRows>(TableLookup<kType>(hn::ShiftRight<4>(v)), x, 16 + 4 * k, sums);
      }
    } else {  // Q4_0, Q5_0, Q5_1: low nibbles are elements 4k.., high nibbles 16 + 4k..
      const VU8 mask = hn::Set(DU8(), 0x0f), one = hn::Set(DU8(), 1);
      // Q5_0 / Q5_1: bit k of the fifth-bit vector's byte is element 4k + e's bit 4, bit 4 + k 16 + 4k + e's.
      VU8 fifth = hn::Zero(DU8());
      if constexpr (HasFifthBit(kType)) fifth = hn::LoadU(DU8(), bytes + kQ5High);
      for (int k = 0; k < 4; ++k) {
        const VU8 v = hn::LoadU(DU8(), bytes + 64 * k);
        VU8 w_lo = hn::And(v, mask), w_hi = hn::ShiftRight<4>(v);
        if constexpr (HasFifthBit(kType)) {
          w_lo = hn::Or(w_lo, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(fifth, k), one)));
          w_hi = hn::Or(w_hi, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(fifth, 4 + k), one)));
        }
        AddSlice<kRows>(w_lo, x, 4 * k, sums);
        AddSlice<kRows>(w_hi, x, 16 + 4 * k, sums);
      }
    }
    const auto dw = kType == TensorType::kMXFP4
                        ? hn::LoadU(DF32(), reinterpret_cast<const float*>(unit + kScales) + 4 * c)
                        : LoadHalves4(unit + kScales + 8 * c);
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = (r0 + r) * blocks + b;
      const VI32 dots = hn::Add(sums[r].Dots(), hn::Set(DI32(), -kOffset * a.sums[i]));
      const auto dx = hn::Set(DF32(), a.d[i]);
      FusedAdd(hn::ConvertTo(DF32(), dots), hn::Mul(dw, dx), acc_v[r], acc[r]);  // weight scale * x scale
      if constexpr (HasMinTerm(kType)) {  // Q5_1: + sum(x) * m * x scale
        const auto m = LoadHalves4(unit + kQ5M + 8 * c);
        FusedAdd(hn::Set(DF32(), static_cast<float>(a.sums[i])), hn::Mul(m, dx), acc_v[r], acc[r]);
      }
    }
  }
  FinishFusedAdds<kRows>(acc_v, acc);
}

// As SliceRows for packed Q4_K / Q5_K / Q6_K (tensor/packed_weights.h), one 32-element sub-block at a time,
// in the packed order of tensor/matmul_internal.h: Q4_K / Q5_K acc = fma(float(dot), d * sc * x_scale, acc),
// then fma(float(block sum), -(dmin * m) * x_scale, acc) (Q5_K's fifth bits ORed into the nibbles first);
// Q6_K acc = fma(float(sc_lo * dot_lo + sc_hi * dot_hi), d * x_scale, acc), its quants being value + 32 with
// bits 4-5 in separate vectors.
template <TensorType kType, int kRows>
HWY_INLINE void KQuantSliceRows(const TileArgs& a, int64_t group, int c, int64_t r0, float (*acc)[4]) {
  const PackedWeights& p = *a.packed;
  const int64_t blocks = a.in / kActBlock;
  const VU8 low4 = hn::Set(DU8(), 0x0f), three = hn::Set(DU8(), 3), one = hn::Set(DU8(), 1);
  hn::Vec<DF32> acc_v[kRows];
  for (int r = 0; r < kRows; ++r) acc_v[r] = hn::Zero(DF32());
  for (int64_t s = 0; s < p.units; ++s) {
    const std::byte* unit = p.Unit(group, s);
    const auto d = LoadHalves4(unit +
                               (HasMinTerm(kType)              ? kQ4KD
                                : kType == TensorType::kIQ4_XS ? kIQ4XSD
                                                               : kQ6KD) +
                               8 * c);
    for (int j = 0; j < 8; ++j) {
      const int64_t b = 8 * s + j;
      const auto* nibbles = reinterpret_cast<const uint8_t*>(unit + 256 * j) + 16 * c;
      const int8_t* x[kRows];
      for (int r = 0; r < kRows; ++r) x[r] = a.q + (r0 + r) * a.q_stride + 32 * b;
      PairSums lo[kRows], hi[kRows];  // elements 0-15 and 16-31 (Q4_K, Q5_K, IQ4_XS: all in lo)
      if constexpr (kType == TensorType::kIQ4_XS) {
        for (int k = 0; k < 4; ++k) {
          const VU8 v = hn::LoadU(DU8(), nibbles + 64 * k);
          AddSlice<kRows>(TableLookup<kType>(hn::And(v, low4)), x, 4 * k, lo);
          AddSlice<kRows>(TableLookup<kType>(hn::ShiftRight<4>(v)), x, 16 + 4 * k, lo);
        }
      } else if constexpr (HasMinTerm(kType)) {
        VU8 fifth = hn::Zero(DU8());  // Q5_K: bit k = element 4k + e's bit 4, bit 4 + k = 16 + 4k + e's
        if constexpr (kType == TensorType::kQ5_K) {
          fifth = hn::LoadU(DU8(), reinterpret_cast<const uint8_t*>(unit + kQ5KHigh + 64 * j) + 16 * c);
        }
        for (int k = 0; k < 4; ++k) {
          const VU8 v = hn::LoadU(DU8(), nibbles + 64 * k);
          VU8 w_lo = hn::And(v, low4), w_hi = hn::ShiftRight<4>(v);
          if constexpr (kType == TensorType::kQ5_K) {
            w_lo = hn::Or(w_lo, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(fifth, k), one)));
            w_hi = hn::Or(w_hi, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(fifth, 4 + k), one)));
          }
          AddSlice<kRows>(w_lo, x, 4 * k, lo);
          AddSlice<kRows>(w_hi, x, 16 + 4 * k, lo);
        }
      } else {
        const auto* high = reinterpret_cast<const uint8_t*>(unit + kQ6KHigh + 128 * j) + 16 * c;
        const VU8 high0 = hn::LoadU(DU8(), high), high1 = hn::LoadU(DU8(), high + 64);
        for (int k = 0; k < 4; ++k) {
          const VU8 v = hn::LoadU(DU8(), nibbles + 64 * k);
          const VU8 w_lo =
              hn::Or(hn::And(v, low4), hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(high0, 2 * k), three)));
          const VU8 w_hi = hn::Or(hn::ShiftRight<4>(v),
                                  hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(high1, 2 * k), three)));
          AddSlice<kRows>(w_lo, x, 4 * k, lo);
          AddSlice<kRows>(w_hi, x, 16 + 4 * k, hi);
        }
      }
      if constexpr (kType == TensorType::kIQ4_XS) {  // d * (ls - 32), the dot less 128 * sum(x)
        const auto* ls = reinterpret_cast<const int8_t*>(unit + kIQ4XSScales + kPackedGroup * j) + 4 * c;
        const auto scale = hn::Mul(
            d, hn::ConvertTo(DF32(), hn::PromoteTo(DI32(), hn::LoadU(hn::Rebind<int8_t, DI32>(), ls))));
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = (r0 + r) * blocks + b;
          const VI32 dots = hn::Add(lo[r].Dots(), hn::Set(DI32(), -128 * a.sums[i]));
          FusedAdd(hn::ConvertTo(DF32(), dots), hn::Mul(scale, hn::Set(DF32(), a.d[i])), acc_v[r], acc[r]);
        }
      } else if constexpr (HasMinTerm(kType)) {
        const auto scale = hn::Mul(d, LoadBytes4(unit + kQ4KScales + kPackedGroup * j + 4 * c));
        const auto dmin = LoadHalves4(unit + kQ4KDmin + 8 * c);
        const auto min_scale = hn::Neg(hn::Mul(dmin, LoadBytes4(unit + kQ4KMins + kPackedGroup * j + 4 * c)));
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = (r0 + r) * blocks + b;
          const auto dx = hn::Set(DF32(), a.d[i]);
          FusedAdd(hn::ConvertTo(DF32(), lo[r].Dots()), hn::Mul(scale, dx), acc_v[r], acc[r]);
          FusedAdd(hn::Set(DF32(), static_cast<float>(a.sums[i])), hn::Mul(min_scale, dx), acc_v[r], acc[r]);
        }
      } else {
        const auto* scales = reinterpret_cast<const int8_t*>(unit + kQ6KScales + 32 * j) + 4 * c;
        const VI32 sc_lo = hn::PromoteTo(DI32(), hn::LoadU(hn::Rebind<int8_t, DI32>(), scales));
        const VI32 sc_hi =
            hn::PromoteTo(DI32(), hn::LoadU(hn::Rebind<int8_t, DI32>(), scales + kPackedGroup));
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = (r0 + r) * blocks + b;
          const VI32 dot_lo = hn::Add(lo[r].Dots(), hn::Set(DI32(), -32 * a.sums16[2 * i]));
          const VI32 dot_hi = hn::Add(hi[r].Dots(), hn::Set(DI32(), -32 * a.sums16[2 * i + 1]));
          const VI32 total = hn::Add(hn::Mul(dot_lo, sc_lo), hn::Mul(dot_hi, sc_hi));
          FusedAdd(hn::ConvertTo(DF32(), total), hn::Mul(d, hn::Set(DF32(), a.d[i])), acc_v[r], acc[r]);
        }
      }
    }
  }
  FinishFusedAdds<kRows>(acc_v, acc);
}

// The slice kernel for kType: SliceRows (Q8_0, Q4_0, Q5_0, Q5_1) or KQuantSliceRows.
template <TensorType kType, int kRows>
HWY_INLINE void AnySliceRows(const TileArgs& a, int64_t group, int c, int64_t r0, float (*acc)[4]) {
  if constexpr (!IsKQuant(kType)) {
    SliceRows<kType, kRows>(a, group, c, r0, acc);
  } else {
    KQuantSliceRows<kType, kRows>(a, group, c, r0, acc);
  }
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
        AnySliceRows<kType, kRows>(a, group, c, r0, acc);
      } else {
        AnySliceRows<kType, 1>(a, group, c, r0, acc);
      }
      for (int r = 0; r < rows; ++r) {
        __builtin_memcpy(a.y + (r0 + r) * a.out + o0 + 4 * c, acc[r], sizeof(float) * static_cast<size_t>(n));
      }
      r0 += rows;
    }
  }
}

// Outputs [o_begin, o_end) (o_begin a multiple of 16), every row, group by group.
template <TensorType kType>
void PackedGroups(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  const int64_t end = std::min(o_end, a.out);
  for (int64_t g = o_begin / kPackedGroup; g * kPackedGroup < o_end; ++g) PackedGroupRows<kType>(a, g, end);
}

}  // namespace portable
#endif  // HWY_TARGET != HWY_SCALAR

// y for outputs [o_begin, o_end) (o_begin a multiple of 16) of packed weights, every row.
inline void PortablePackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
#if HWY_TARGET != HWY_SCALAR
  switch (a.type) {
    case TensorType::kQ8_0:
      return portable::PackedGroups<TensorType::kQ8_0>(a, o_begin, o_end);
    case TensorType::kQ4_0:
      return portable::PackedGroups<TensorType::kQ4_0>(a, o_begin, o_end);
    case TensorType::kQ4_K:
      return portable::PackedGroups<TensorType::kQ4_K>(a, o_begin, o_end);
    case TensorType::kQ5_K:
      return portable::PackedGroups<TensorType::kQ5_K>(a, o_begin, o_end);
    case TensorType::kQ5_0:
      return portable::PackedGroups<TensorType::kQ5_0>(a, o_begin, o_end);
    case TensorType::kQ5_1:
      return portable::PackedGroups<TensorType::kQ5_1>(a, o_begin, o_end);
    case TensorType::kQ6_K:
    case TensorType::kQ3_K:  // packed as Q6_K
      return portable::PackedGroups<TensorType::kQ6_K>(a, o_begin, o_end);
    case TensorType::kIQ4_NL:
      return portable::PackedGroups<TensorType::kIQ4_NL>(a, o_begin, o_end);
    case TensorType::kIQ4_XS:
      return portable::PackedGroups<TensorType::kIQ4_XS>(a, o_begin, o_end);
    case TensorType::kMXFP4:
      return portable::PackedGroups<TensorType::kMXFP4>(a, o_begin, o_end);
    default:
      HWY_ASSERT(false);  // only packable types have packed weights
  }
#else
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = PackedDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                              a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
#endif
}
