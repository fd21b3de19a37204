// MatMul kernels compiled once per Highway target and chosen at run time. On x86 targets (AVX2, AVX3,
// AVX3_DL) they use intrinsics; the integer lane dot is VPDPBUSD on AVX3_DL (AVX-512 VNNI) and VPMADDUBSW +
// VPMADDWD elsewhere - both give the same exact integer lanes. Other targets (NEON, SSE4, ...) compile the
// portable path: Highway ops for packed Q8_0 / Q4_0, the scalar reference otherwise. See
// tensor/matmul_internal.h for the canonical order every path follows. GCC 12 warns about the deliberately
// undefined pass-through operand inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

#include "tensor/matmul_internal.h"
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
#undef LOCKSTEP_X86_KERNELS

}  // namespace HWY_NAMESPACE
}  // namespace lockstep
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lockstep {

HWY_EXPORT(QuantTile);
HWY_EXPORT(FloatTile);
HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(PackedTile);
HWY_EXPORT(PortablePackedTile);

void RunQuantTile(const TileArgs& args, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(QuantTile)(args, o_begin, o_end);
}

void RunFloatTile(const TileArgs& args, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(FloatTile)(args, o_begin, o_end);
}

void RunPackedTile(const TileArgs& args, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(PackedTile)(args, o_begin, o_end);
}

void RunPortablePackedTile(const TileArgs& args, int64_t o_begin, int64_t o_end) {
  HWY_DYNAMIC_DISPATCH(PortablePackedTile)(args, o_begin, o_end);
}

void RunQuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                            const ActivationQuants& out) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(x, in, r_begin, r_end, out);
}

}  // namespace lockstep
#endif  // HWY_ONCE
