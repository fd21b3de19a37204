// MatMul's AMX-INT8 path (tensor/matmul_amx_kernel.h): packed weights (Q8_0, Q4_0, Q4_K, Q6_K) against many
// activation rows on Intel CPUs with AMX tiles. Results are bit-identical to RunPackedTile's, so choosing
// this path for some calls and not others never changes a row's result (batch invariance holds).
//
// AmxMatMulEnabled() decides once per process: the CPU and kernel allow tiles (tensor/amx_support.h), the
// environment does not say LOCKSTEP_AMX=0, and a self-check passes: the tile kernel on a small product must
// equal the AVX-512 kernel bit for bit, else the process warns on stderr and stays on AVX-512. Thread-safe.
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"
#include "tensor/matmul_simd.h"

namespace lockstep {

// Activation rows from which MatMul uses the tiles (fewer rows leave most of a 16-row tile empty; the VNNI
// kernel serves decode). Not tuned on hardware yet.
inline constexpr int64_t kAmxMinRows = 8;

bool AmxMatMulEnabled();
inline bool AmxPackedSupports(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}
// Like RunPackedTile (args.packed set, a type AmxPackedSupports, o_begin a multiple of 16). Only after
// AmxMatMulEnabled() returned true.
void RunAmxPackedTile(const TileArgs& args, int64_t o_begin, int64_t o_end);
// The self-check behind AmxMatMulEnabled, exposed for tests: `run`, a kernel with RunPackedTile's contract,
// on a small product of `type` weights (a partial output group, a full and a partial 16-row chunk) in two
// calls, compared with RunPackedTile bit for bit.
using PackedTileFn = void (*)(const TileArgs& args, int64_t o_begin, int64_t o_end);
bool PackedKernelMatches(TensorType type, PackedTileFn run);
// Which matmul paths this process uses, for logs: e.g. "AVX3_DL" or "AVX3_DL + AMX-INT8".
const char* MatMulPathName();

}  // namespace lockstep
