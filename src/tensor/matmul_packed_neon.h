// Packed-weight int8 GEMM kernels (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; layout in
// tensor/packed_weights.h) for aarch64 CPUs with the Armv8.2 dot product (SDOT: the neon-dotprod level) and
// the Armv8.6 int8 matrix multiply (SMMLA: the neon-i8mm level). Same contract as MatMulKernels::packed_tile
// (tensor/matmul_kernels.h): y for outputs [o_begin, o_end) (o_begin a multiple of 16), every row, in the
// packed order of tensor/matmul_internal.h, so bit-identical to the scalar reference and every other level.
// Only the levels whose CPUs have the instructions may call them (tensor/kernels.h chooses). Pure functions,
// thread-safe.
#pragma once

#include <cstdint>

#include "tensor/matmul_simd.h"

namespace lockstep {

#if defined(__aarch64__)
void NeonDotprodPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end);
void NeonI8mmPackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end);
#endif

}  // namespace lockstep
