#include "tensor/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>

#include "base/status.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_kernels.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Activation rows per quantization task.
constexpr int64_t kQuantizeRowsPerTask = 16;

size_t AlignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

bool MatMulSupports(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return true;
    default:
      return IsQuantizedMatMulType(type);
  }
}

void MatMul(const MatMulKernels& kernels, const WeightMatrix& w, const float* x, int64_t rows, float* y,
            ThreadPool& pool) {
  MatMulShared(kernels, std::span<const WeightMatrix>(&w, 1), x, rows, std::span<float* const>(&y, 1), pool);
}

void MatMulShared(const MatMulKernels& kernels, std::span<const WeightMatrix> ws, const float* x,
                  int64_t rows, std::span<float* const> ys, ThreadPool& pool) {
  LOCKSTEP_CHECK(ws.size() == ys.size() && ws.size() <= kMaxSharedMatrices);
  if (rows <= 0 || ws.empty()) return;
  const int64_t in = ws[0].in;
  std::array<TileArgs, kMaxSharedMatrices> args;
  std::array<int64_t, kMaxSharedMatrices + 1> first_task{};  // task index where matrix i starts
  std::array<int64_t, kMaxSharedMatrices> task_outputs{};
  // The kernel of matrix i: a tile function, or (AMX, bit-identical to the packed tile) one with scratch.
  std::array<TileFn, kMaxSharedMatrices> tile{};
  std::array<ScratchTileFn, kMaxSharedMatrices> scratch_tile{};
  bool any_quantized = false;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightMatrix& w = ws[i];
    LOCKSTEP_CHECK(MatMulSupports(w.type) && w.in == in);
    TileArgs& a = args[i];
    a.type = w.type;
    a.in = in;
    a.out = w.out;
    a.weights = w.data;
    a.row_bytes = RowBytes(w.type, in);
    a.rows = rows;
    a.x = x;
    a.y = ys[i];
    // Outputs per pool task: a multiple of the kernel's output tile (the result of an output never depends
    // on which task or worker computes it).
    task_outputs[i] = 3 * kPackedGroup;
    const int q = QuantWeightIndex(w.type);
    if (w.packed != nullptr) {
      LOCKSTEP_CHECK(w.packed->type == w.type && w.packed->in == w.in && w.packed->out == w.out && q >= 0);
      a.packed = w.packed;
      if (rows >= kernels.many_rows && kernels.many_rows_tile[q] != nullptr) {
        scratch_tile[i] = kernels.many_rows_tile[q];
      } else {
        tile[i] = kernels.packed_tile[q];
        task_outputs[i] = kernels.packed_task_outputs[q];
      }
    } else {
      tile[i] = q >= 0 ? kernels.quant_tile[q] : kernels.float_tile[FloatWeightIndex(w.type)];
    }
    any_quantized = any_quantized || q >= 0;
    first_task[i + 1] = first_task[i] + (std::max<int64_t>(w.out, 0) + task_outputs[i] - 1) / task_outputs[i];
  }
  if (any_quantized) {
    // Activations are quantized once per call into the pool's caller scratch: quants (rows padded to 64
    // bytes), block scales, block sums, sums per half block (2 per block), Q8_0 and Q4_0 dot starts,
    // float(sum) * scale.
    LOCKSTEP_CHECK(in % kActBlock == 0);
    const int64_t blocks = in / kActBlock;
    ActivationQuants quants;
    quants.q_stride = static_cast<int64_t>(AlignUp(static_cast<size_t>(in), 64));
    const size_t q_bytes = AlignUp(static_cast<size_t>(rows * quants.q_stride), 64);
    const size_t d_bytes = AlignUp(sizeof(float) * static_cast<size_t>(rows * blocks), 64);
    std::byte* scratch = pool.CallerScratch(q_bytes + 7 * d_bytes);
    quants.q = reinterpret_cast<int8_t*>(scratch);
    quants.d = reinterpret_cast<float*>(scratch + q_bytes);
    quants.sums = reinterpret_cast<int32_t*>(scratch + q_bytes + d_bytes);
    quants.sums16 = reinterpret_cast<int32_t*>(scratch + q_bytes + 2 * d_bytes);
    quants.q8_starts = reinterpret_cast<int32_t*>(scratch + q_bytes + 4 * d_bytes);
    quants.q4_starts = reinterpret_cast<int32_t*>(scratch + q_bytes + 5 * d_bytes);
    quants.sum_d = reinterpret_cast<float*>(scratch + q_bytes + 6 * d_bytes);
    const int64_t quantize_tasks = (rows + kQuantizeRowsPerTask - 1) / kQuantizeRowsPerTask;
    // Each task also checks its rows' scales (while they are in cache) for quants.sum_d_exact; pool.Run's
    // return orders the tasks' stores before the load.
    std::atomic<bool> inexact{false};
    auto quantize = [&](int64_t task, int) {
      const int64_t begin = task * kQuantizeRowsPerTask, end = std::min(rows, begin + kQuantizeRowsPerTask);
      kernels.quantize(x, in, begin, end, quants);
      if (!SumDIsExact(quants.d + begin * blocks, (end - begin) * blocks)) {
        inexact.store(true, std::memory_order_relaxed);
      }
    };
    if (quantize_tasks == 1) {
      quantize(0, 0);
    } else {
      pool.Run(quantize_tasks, quantize);
    }
    quants.sum_d_exact = !inexact.load(std::memory_order_relaxed);
    for (size_t i = 0; i < ws.size(); ++i) args[i].UseQuants(quants);
  }
  pool.Run(first_task[ws.size()], [&](int64_t task, int worker) {
    size_t i = 0;
    while (task >= first_task[i + 1]) ++i;
    const TileArgs& a = args[i];
    const int64_t begin = (task - first_task[i]) * task_outputs[i];
    const int64_t end = std::min(a.out, begin + task_outputs[i]);
    if (scratch_tile[i] != nullptr) {
      scratch_tile[i](a, begin, end, pool.WorkerScratch(worker, kernels.many_rows_scratch));
    } else {
      tile[i](a, begin, end);
    }
  });
}

}  // namespace lockstep
