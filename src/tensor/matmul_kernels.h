// One CPU level's matmul kernels (the matmul part of the kernel table, tensor/kernels.h): plain function
// pointers per weight type, filled once by GetMatMulKernels and read by MatMul (tensor/matmul.h). Every
// level's kernels follow the canonical order of tensor/matmul_internal.h, so they give bit-identical results;
// which level runs changes speed only. Immutable once filled; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"
#include "tensor/cpu_level.h"
#include "tensor/matmul_simd.h"

namespace lockstep {

// Quantizes activation rows [r_begin, r_end) of x ([rows][in]) into `out` (QuantizeActivationBlock's order).
using QuantizeActivationsFn = void (*)(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                                       const ActivationQuants& out);
// y[r][o] for o in [o_begin, o_end), every row of `args` (packed kernels: o_begin a multiple of 16).
using TileFn = void (*)(const TileArgs& args, int64_t o_begin, int64_t o_end);
// The same, with `scratch` (MatMulKernels::many_rows_scratch bytes, 64-byte aligned) to itself.
using ScratchTileFn = void (*)(const TileArgs& args, int64_t o_begin, int64_t o_end, std::byte* scratch);

inline constexpr int kFloatWeightTypes = 3;  // F32, F16, BF16
// Q8_0, Q4_0, Q4_K, Q6_K, Q5_K, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q3_K, Q2_K (not packed: no packed tile), MXFP4
inline constexpr int kQuantWeightTypes = 12;
// The index of `type` in the float / quantized arrays below, or -1.
int FloatWeightIndex(TensorType type);
int QuantWeightIndex(TensorType type);

struct MatMulKernels {
  QuantizeActivationsFn quantize = nullptr;
  TileFn float_tile[kFloatWeightTypes] = {};
  TileFn quant_tile[kQuantWeightTypes] = {};   // unpacked quantized weights
  TileFn packed_tile[kQuantWeightTypes] = {};  // weights from PackWeights
  // Outputs per pool task for packed weights: a multiple of 16 and of the kernel's output tile.
  int64_t packed_task_outputs[kQuantWeightTypes] = {};
  // Products of at least many_rows rows of packed weights (AMX tiles), bit-identical to packed_tile; null
  // where the level has none.
  ScratchTileFn many_rows_tile[kQuantWeightTypes] = {};
  int64_t many_rows = 0;
  size_t many_rows_scratch = 0;
};

// Fills *k with `level`'s kernels; false if this build has none for it (an ARM level in an x86 build...).
// The amx level's tiles are filled here but not checked: tensor/kernels.h's KernelsForLevel runs the
// self-check (tensor/matmul_amx.h).
bool GetMatMulKernels(CpuLevel level, MatMulKernels* k);

}  // namespace lockstep
