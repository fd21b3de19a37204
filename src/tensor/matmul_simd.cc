// MatMul kernels compiled once per Highway target and chosen at run time. On x86 targets (AVX2, AVX3,
// AVX3_DL) they use intrinsics; the integer lane dot is VPDPBUSD on AVX3_DL (AVX-512 VNNI) and VPMADDUBSW +
// VPMADDWD elsewhere - both give the same exact integer lanes. Other targets (NEON, SSE4, ...) compile the
// portable path: Highway ops for packed Q8_0 / Q4_0, the scalar reference otherwise. See
// tensor/matmul_internal.h for the canonical order every path follows. GCC 12 warns about the deliberately
// undefined pass-through operand inside its own AVX-512 intrinsics.
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/matmul_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tensor/matmul_amx.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_kernels.h"
#include "tensor/matmul_packed_neon.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace lockstep {
namespace HWY_NAMESPACE {

#include "tensor/matmul_portable_packed-inl.h"  // every target (tests run it on each)
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define LOCKSTEP_X86_KERNELS 1
#include "tensor/matmul_packed_x86-inl.h"
#include "tensor/matmul_x86-inl.h"
#else
#define LOCKSTEP_X86_KERNELS 0
#include "tensor/matmul_portable-inl.h"
#endif

#if LOCKSTEP_X86_KERNELS
// The typed kernels as plain functions, one per weight type (the table holds their addresses).
template <TensorType kType>
void FloatTileFor(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  FloatTileTyped<kType>(a, o_begin, o_end);
}
template <TensorType kType>
void QuantTileFor(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  QuantTileTyped<kType>(a, o_begin, o_end);
}
template <TensorType kType>
void PackedTileFor(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  if constexpr (kType == TensorType::kQ8_0 || kType == TensorType::kQ4_0) {
    PackedTileTyped<kType>(a, o_begin, o_end);
  } else {
    KQuantPackedTile<kType>(a, o_begin, o_end);
  }
}
#endif

// This target's kernels into the table (tensor/matmul_kernels.h).
void FillMatMulKernels(MatMulKernels* k) {
  k->quantize = &QuantizeActivations;
#if LOCKSTEP_X86_KERNELS
  k->float_tile[0] = &FloatTileFor<TensorType::kF32>;
  k->float_tile[1] = &FloatTileFor<TensorType::kF16>;
  k->float_tile[2] = &FloatTileFor<TensorType::kBF16>;
  k->quant_tile[0] = &QuantTileFor<TensorType::kQ8_0>;
  k->quant_tile[1] = &QuantTileFor<TensorType::kQ4_0>;
  k->quant_tile[2] = &QuantTileFor<TensorType::kQ4_K>;
  k->quant_tile[3] = &QuantTileFor<TensorType::kQ6_K>;
  k->quant_tile[4] = &QuantTileFor<TensorType::kQ5_K>;
  k->quant_tile[5] = &QuantTileFor<TensorType::kQ5_0>;
  k->quant_tile[6] = &QuantTileFor<TensorType::kQ5_1>;
  k->quant_tile[7] = &QuantTileFor<TensorType::kIQ4_NL>;
  k->quant_tile[8] = &QuantTileFor<TensorType::kIQ4_XS>;
  k->quant_tile[9] = &QuantTileFor<TensorType::kQ3_K>;
  k->quant_tile[10] = &QuantTileFor<TensorType::kQ2_K>;
  k->quant_tile[11] = &QuantTileFor<TensorType::kMXFP4>;
  k->packed_tile[0] = &PackedTileFor<TensorType::kQ8_0>;
  k->packed_tile[1] = &PackedTileFor<TensorType::kQ4_0>;
  k->packed_tile[2] = &PackedTileFor<TensorType::kQ4_K>;
  k->packed_tile[3] = &PackedTileFor<TensorType::kQ6_K>;
  k->packed_tile[4] = &PackedTileFor<TensorType::kQ5_K>;
  k->packed_tile[5] = &PackedTileFor<TensorType::kQ5_0>;
  k->packed_tile[6] = &PackedTileFor<TensorType::kQ5_1>;
  k->packed_tile[7] = &PackedTileFor<TensorType::kIQ4_NL>;
  k->packed_tile[8] = &PackedTileFor<TensorType::kIQ4_XS>;
  k->packed_tile[9] = &PackedTileFor<TensorType::kQ6_K>;  // Q3_K, packed as Q6_K
  k->packed_tile[10] = &PackedTile;                       // Q2_K is never packed: the dispatch's assertion
  k->packed_tile[11] = &PackedTileFor<TensorType::kMXFP4>;
#else
  for (TileFn& f : k->float_tile) f = &FloatTile;
  for (TileFn& f : k->quant_tile) f = &QuantTile;
  for (TileFn& f : k->packed_tile) f = &PortablePackedTile;
#endif
  // Three 16-output groups per task for Q8_0 (the AVX-512 tile), two for the others (their AVX-512 tiles
  // take two groups: with three per task, every third group ran alone, at half the dots per activation
  // broadcast — a third of a Q4_K_M model's decode time).
  k->packed_task_outputs[0] = 3 * kPackedGroup;
  for (int i = 1; i < kQuantWeightTypes; ++i) k->packed_task_outputs[i] = 2 * kPackedGroup;
}

#if HWY_TARGET == HWY_AVX2
// The avx2-vnni level: the AVX2 kernels with VEX VPDPBUSD for the packed quantized products.
template <TensorType kType>
void VnniPackedTileFor(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  if constexpr (kType == TensorType::kQ8_0 || kType == TensorType::kQ4_0) {
    Avx2PackedTileTyped<kType, true>(a, o_begin, o_end);
  } else {
    KQuantPackedTile<kType, KVecAvx2<true>>(a, o_begin, o_end);
  }
}

void FillVnniMatMulKernels(MatMulKernels* k) {
  FillMatMulKernels(k);
  k->packed_tile[0] = &VnniPackedTileFor<TensorType::kQ8_0>;
  k->packed_tile[1] = &VnniPackedTileFor<TensorType::kQ4_0>;
  k->packed_tile[2] = &VnniPackedTileFor<TensorType::kQ4_K>;
  k->packed_tile[3] = &VnniPackedTileFor<TensorType::kQ6_K>;
  k->packed_tile[4] = &VnniPackedTileFor<TensorType::kQ5_K>;
  k->packed_tile[5] = &VnniPackedTileFor<TensorType::kQ5_0>;
  k->packed_tile[6] = &VnniPackedTileFor<TensorType::kQ5_1>;
  k->packed_tile[7] = &VnniPackedTileFor<TensorType::kIQ4_NL>;
  k->packed_tile[8] = &VnniPackedTileFor<TensorType::kIQ4_XS>;
  k->packed_tile[9] = &VnniPackedTileFor<TensorType::kQ6_K>;
  k->packed_tile[11] = &VnniPackedTileFor<TensorType::kMXFP4>;
}
#endif
#undef LOCKSTEP_X86_KERNELS

}  // namespace HWY_NAMESPACE
}  // namespace lockstep
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lockstep {

HWY_EXPORT(PortablePackedTile);

void RunPortablePackedTile(const TileArgs& args, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(PortablePackedTile)(args, o_begin, o_end);
}

namespace {

void FillScalarMatMulKernels(MatMulKernels* k) {
  k->quantize = &ScalarQuantizeActivations;
  for (TileFn& f : k->float_tile) f = &ScalarFloatTile;
  for (TileFn& f : k->quant_tile) f = &ScalarQuantTile;
  for (TileFn& f : k->packed_tile) f = &ScalarPackedTile;
  for (int64_t& n : k->packed_task_outputs) n = 3 * kPackedGroup;
}

}  // namespace

int FloatWeightIndex(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 0;
    case TensorType::kF16:
      return 1;
    case TensorType::kBF16:
      return 2;
    default:
      return -1;
  }
}

int QuantWeightIndex(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return 0;
    case TensorType::kQ4_0:
      return 1;
    case TensorType::kQ4_K:
      return 2;
    case TensorType::kQ6_K:
      return 3;
    case TensorType::kQ5_K:
      return 4;
    case TensorType::kQ5_0:
      return 5;
    case TensorType::kQ5_1:
      return 6;
    case TensorType::kIQ4_NL:
      return 7;
    case TensorType::kIQ4_XS:
      return 8;
    case TensorType::kQ3_K:
      return 9;
    case TensorType::kQ2_K:
      return 10;
    case TensorType::kMXFP4:
      return 11;
    default:
      return -1;
  }
}

bool GetMatMulKernels(CpuLevel level, MatMulKernels* k) {
  *k = MatMulKernels{};
  switch (level) {
    case CpuLevel::kScalar:
      FillScalarMatMulKernels(k);
      return true;
#if HWY_TARGETS & HWY_AVX2
    case CpuLevel::kAvx2:
      N_AVX2::FillMatMulKernels(k);
      return true;
    case CpuLevel::kAvx2Vnni:
      N_AVX2::FillVnniMatMulKernels(k);
      return true;
#endif
#if HWY_TARGETS & HWY_AVX3
    case CpuLevel::kAvx512:
      N_AVX3::FillMatMulKernels(k);
      return true;
#endif
#if HWY_TARGETS & HWY_AVX3_DL
    case CpuLevel::kAvx512Vnni:
      N_AVX3_DL::FillMatMulKernels(k);
      return true;
    case CpuLevel::kAmx:
      N_AVX3_DL::FillMatMulKernels(k);
      FillAmxMatMulKernels(k);
      return true;
#endif
#if HWY_TARGETS & HWY_NEON
    case CpuLevel::kNeon:
      N_NEON::FillMatMulKernels(k);
      return true;
#if defined(__aarch64__)
    case CpuLevel::kNeonDotprod:  // the neon kernels, packed products with SDOT (tensor/matmul_packed_neon.h)
      N_NEON::FillMatMulKernels(k);
      for (TileFn& f : k->packed_tile) f = &NeonDotprodPackedTile;
      return true;
    case CpuLevel::kNeonI8mm:  // and with SMMLA for row pairs
      N_NEON::FillMatMulKernels(k);
      for (TileFn& f : k->packed_tile) f = &NeonI8mmPackedTile;
      return true;
#endif
#endif
    default:
      return false;
  }
}

}  // namespace lockstep
#endif  // HWY_ONCE
