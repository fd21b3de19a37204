// MatMul's AMX-INT8 path (tensor/matmul_amx_kernel.h): packed weights against many activation rows on Intel
// CPUs with AMX tiles, the amx level's many_rows_tile (tensor/matmul_kernels.h). Results are bit-identical to
// the avx512-vnni level's packed kernels, so choosing tiles for some calls and not others never changes a
// row's result (batch invariance holds).
//
// The amx level is used only when the CPU and Linux allow tiles (tensor/cpu_features.h) and the self-check
// passes (tensor/kernels.h runs it when it builds the amx table): the tile kernel on a small product must
// equal the avx512-vnni kernel bit for bit. Thread-safe.
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"
#include "tensor/matmul_kernels.h"

namespace lockstep {

// Activation rows from which MatMul uses the tiles: a full 16-row tile (at 8 rows the tiles took 1.2-1.3x
// the VNNI kernel's time on a Sapphire Rapids VM, at 32 rows 0.75-0.9x; docs/kernels.md). The VNNI kernel
// serves decode.
inline constexpr int64_t kAmxMinRows = 16;

// The weight types the tile kernel computes (tensor/matmul_amx_kernel.h; Q3_K as Q6_K, its packed layout):
// the start-up self-check covers each; the amx level uses the tiles for all but Q8_0 (FillAmxMatMulKernels).
inline constexpr TensorType kAmxKernelTypes[] = {TensorType::kQ8_0,   TensorType::kQ4_0, TensorType::kQ5_0,
                                                 TensorType::kQ5_1,   TensorType::kQ3_K, TensorType::kQ4_K,
                                                 TensorType::kQ5_K,   TensorType::kQ6_K, TensorType::kIQ4_NL,
                                                 TensorType::kIQ4_XS, TensorType::kMXFP4};

// Sets k's many-rows entries to the tile kernel (x86-64 builds; elsewhere nothing). The kernel configures
// and releases the tiles itself on every call, so it needs the tile permission (tensor/cpu_features.h).
void FillAmxMatMulKernels(MatMulKernels* k);
// The self-check: `run` (a kernel with TileFn's contract for packed weights) on a small product of `type`
// weights (a partial output group, a full and a partial 16-row chunk) in two calls, compared bit for bit
// with `reference`'s packed kernel for that type.
bool PackedKernelMatches(const MatMulKernels& reference, TensorType type, TileFn run);
// The tile kernel on the CPU's tiles with its scratch on the stack, as a TileFn (for the self-check and
// tests).
void AmxPackedTileOnStack(const TileArgs& args, int64_t o_begin, int64_t o_end);

}  // namespace lockstep
