// Weight × activation products, the hot loop of every forward pass.
// A weight matrix is `out` rows of `in` elements in a GGUF storage type (row-major, each row RowBytes(type,
// in) bytes). MatMul applies it to `rows` activation rows at once, so each weight tile is read once per call
// and serves every row. Quantized weights meet activations quantized once per call to 8-bit blocks; float
// weights meet float activations. Batch invariance: the value computed for one row never depends on how many
// other rows share the call (the reduction order is fixed by `in` alone). The kernels come from the caller's
// kernel table (tensor/kernels.h, one CPU level's; every level gives the same bits).
//
// Load-time repacking (optional, recommended for every quantized type: 2-5x faster for many rows, also faster
// for one): PackWeights() returns the matrix rearranged for the int8 GEMM kernels (16 output rows interleaved
// per block, so one weight tile feeds all activation rows with AVX-512 VNNI); put it in WeightMatrix::packed
// and keep it alive as long as the matrix is used. Same size as the original (Q4_K +2.8%, Q5_K +2.3%; plus
// padding of `out` to a multiple of 16); WeightMatrix::data must stay valid too (the portable fallback reads
// it), but x86 kernels never touch it, so an mmap'd original costs no resident memory. Results with a packed
// matrix are batch-invariant too, but differ in the last bits from the unpacked path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gguf/tensor_type.h"

namespace lockstep {

class ThreadPool;
struct MatMulKernels;
struct PackedWeights;

struct WeightMatrix {
  TensorType type = TensorType::kF32;
  int64_t in = 0;   // elements per row (GGUF dims[0])
  int64_t out = 0;  // rows (GGUF dims[1])
  const std::byte* data = nullptr;
  const PackedWeights* packed = nullptr;  // optional, from PackWeights(*this); borrowed
};

// Deleter so that callers can own PackedWeights without seeing its definition.
struct PackedWeightsDeleter {
  void operator()(PackedWeights* p) const;
};
using PackedWeightsPtr = std::unique_ptr<PackedWeights, PackedWeightsDeleter>;

// True if PackWeights has a packed kernel for this type (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K).
bool CanPackWeights(TensorType type);
// The matrix repacked for the int8 GEMM kernels; null if !CanPackWeights(w.type). Single-threaded; call
// once at load time.
PackedWeightsPtr PackWeights(const WeightMatrix& w);
// Every matrix of `ws` repacked as by PackWeights (result i null where !CanPackWeights), all into one
// buffer on huge pages, side by side in the order given (put them in the order they are read: streamed
// every step, matrices on 4 KiB pages of their own ran at about half the memory bandwidth). `threads`
// (>= 1) threads pack, largest matrices first. Call once at load time.
std::vector<PackedWeightsPtr> PackWeightsTogether(std::span<const WeightMatrix* const> ws, int threads);

// True if MatMul supports weights of this type.
bool MatMulSupports(TensorType type);

// y[r * out + o] = sum_i w[o][i] * x[r * in + i] for r in [0, rows), o in [0, out).
// x: [rows][in] f32, y: [rows][out] f32. `kernels`: one level's (tensor/matmul_kernels.h).
void MatMul(const MatMulKernels& kernels, const WeightMatrix& w, const float* x, int64_t rows, float* y,
            ThreadPool& pool);

// Several matrices with the same `in` applied to the same x (Q/K/V, gate/up): the activations are quantized
// once and one parallel loop covers all outputs. ys[i]: [rows][ws[i].out]. Bit-identical to separate MatMul
// calls. At most kMaxSharedMatrices matrices. (Several such groups, each over rows of its own, in one
// parallel loop: tensor/matmul_grouped.h.)
inline constexpr size_t kMaxSharedMatrices = 8;
void MatMulShared(const MatMulKernels& kernels, std::span<const WeightMatrix> ws, const float* x,
                  int64_t rows, std::span<float* const> ys, ThreadPool& pool);

}  // namespace lockstep
