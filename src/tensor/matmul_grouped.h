// MatMulGrouped: many independent weight × activation products in one parallel loop. Each group applies its
// own matrices to its own activation rows (a mixture-of-experts layer's experts, each over the rows routed to
// it); the activations of every group are quantized in one pass, and one ThreadPool::Run covers every
// (group, matrix, output tile) task, so a call costs at most two pool round trips however many groups it has,
// and groups of one or two rows share the threads instead of each getting a parallel loop of its own.
//
// Results: each group's outputs are bit-identical to MatMulShared(kernels, group.ws, group.x, group.rows,
// group.ys) (tensor/matmul.h), which is itself built on this function; so a row's result depends on its own
// activations and the matrix only, never on the other rows or groups of the call. The tile kernels are
// chosen per (group, matrix) exactly as MatMul chooses them for that matrix and row count.
//
// Scratch: the pool's caller arena holds the task table and the activation quants (valid until the next
// CallerScratch call); AMX tiles use the workers' arenas. Engine thread only (one Run at a time).
#pragma once

#include <cstdint>
#include <span>

#include "tensor/matmul.h"

namespace lockstep {

class ThreadPool;
struct MatMulKernels;

// One group: every matrix of `ws` applied to the same `rows` activation rows.
struct MatMulGroup {
  std::span<const WeightMatrix> ws;  // borrowed; all with the same `in` across the whole call
  const float* x = nullptr;          // [rows][in] f32, borrowed
  int64_t rows = 0;                  // 0: the group is skipped (its ys are not written)
  std::span<float* const> ys;        // ys[i]: [rows][ws[i].out], written; ys.size() == ws.size()
};

// For each group g and matrix i: ys[i][r * out + o] = sum_j ws[i][o][j] * x[r * in + j] (tensor/matmul.h's
// MatMul), for every group, in one parallel loop.
void MatMulGrouped(const MatMulKernels& kernels, std::span<const MatMulGroup> groups, ThreadPool& pool);

}  // namespace lockstep
