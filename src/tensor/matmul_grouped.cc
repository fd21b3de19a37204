#include "tensor/matmul_grouped.h"

#include <algorithm>
#include <atomic>
#include <memory>

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

// One (group, matrix) product: its arguments, its kernel (a tile function, or an AMX one with scratch,
// bit-identical to the packed tile) and the outputs per pool task (a multiple of the kernel's output tile:
// the result of an output never depends on which task or worker computes it).
struct Job {
  TileArgs args;
  TileFn tile = nullptr;
  ScratchTileFn scratch_tile = nullptr;
  int64_t task_outputs = 0;
};

// Fills `job` for matrix w over `rows` rows of x into y, choosing the kernel as MatMul does; true if w is
// quantized (its tiles read activation quants).
bool PrepareJob(const MatMulKernels& kernels, const WeightMatrix& w, const float* x, int64_t rows, float* y,
                Job& job) {
  LOCKSTEP_CHECK(MatMulSupports(w.type));
  TileArgs& a = job.args;
  a.type = w.type;
  a.in = w.in;
  a.out = w.out;
  a.weights = w.data;
  a.row_bytes = RowBytes(w.type, w.in);
  a.rows = rows;
  a.x = x;
  a.y = y;
  job.task_outputs = 3 * kPackedGroup;
  const int q = QuantWeightIndex(w.type);
  if (w.packed != nullptr) {
    LOCKSTEP_CHECK(w.packed->type == w.type && w.packed->in == w.in && w.packed->out == w.out && q >= 0);
    a.packed = w.packed;
    if (rows >= kernels.many_rows && kernels.many_rows_tile[q] != nullptr) {
      job.scratch_tile = kernels.many_rows_tile[q];
    } else {
      job.tile = kernels.packed_tile[q];
      job.task_outputs = kernels.packed_task_outputs[q];
    }
  } else {
    job.tile = q >= 0 ? kernels.quant_tile[q] : kernels.float_tile[FloatWeightIndex(w.type)];
  }
  return q >= 0;
}

// Where the activation quants of `rows` rows of `in` elements live in `scratch` (QuantBytes of it):
// quants (rows padded to 64 bytes), block scales, block sums, sums per half block (2 per block), Q8_0 and
// Q4_0 dot starts, float(sum) * scale.
size_t QuantBytes(int64_t in, int64_t rows, size_t* q_bytes, size_t* d_bytes) {
  const int64_t blocks = in / kActBlock;
  *q_bytes = AlignUp(static_cast<size_t>(rows) * AlignUp(static_cast<size_t>(in), 64), 64);
  *d_bytes = AlignUp(sizeof(float) * static_cast<size_t>(rows * blocks), 64);
  return *q_bytes + 7 * *d_bytes;
}

ActivationQuants QuantsAt(std::byte* scratch, int64_t in, size_t q_bytes, size_t d_bytes) {
  ActivationQuants quants;
  quants.q_stride = static_cast<int64_t>(AlignUp(static_cast<size_t>(in), 64));
  quants.q = reinterpret_cast<int8_t*>(scratch);
  quants.d = reinterpret_cast<float*>(scratch + q_bytes);
  quants.sums = reinterpret_cast<int32_t*>(scratch + q_bytes + d_bytes);
  quants.sums16 = reinterpret_cast<int32_t*>(scratch + q_bytes + 2 * d_bytes);
  quants.q8_starts = reinterpret_cast<int32_t*>(scratch + q_bytes + 4 * d_bytes);
  quants.q4_starts = reinterpret_cast<int32_t*>(scratch + q_bytes + 5 * d_bytes);
  quants.sum_d = reinterpret_cast<float*>(scratch + q_bytes + 6 * d_bytes);
  return quants;
}

// `quants` moved on by `rows` rows: row r of the result is row rows + r of `quants`.
ActivationQuants QuantsFromRow(const ActivationQuants& quants, int64_t in, int64_t rows) {
  const int64_t blocks = in / kActBlock;
  ActivationQuants at = quants;
  at.q += rows * quants.q_stride;
  at.d += rows * blocks;
  at.sums += rows * blocks;
  at.sums16 += 2 * rows * blocks;
  at.q8_starts += rows * blocks;
  at.q4_starts += rows * blocks;
  at.sum_d += rows * blocks;
  return at;
}

// The index i with first[i] <= task < first[i + 1] (first ascending, first[0] = 0 <= task < first[n]).
size_t Find(const int64_t* first, size_t n, int64_t task) {
  return static_cast<size_t>(std::upper_bound(first + 1, first + n + 1, task) - (first + 1));
}

}  // namespace

void MatMulGrouped(const MatMulKernels& kernels, std::span<const MatMulGroup> groups, ThreadPool& pool) {
  size_t jobs = 0;
  int64_t in = -1;
  for (const MatMulGroup& g : groups) {
    LOCKSTEP_CHECK(g.ws.size() == g.ys.size());
    if (g.rows <= 0) continue;
    jobs += g.ws.size();
    for (const WeightMatrix& w : g.ws) {
      LOCKSTEP_CHECK(in < 0 || w.in == in);
      in = w.in;
    }
  }
  if (jobs == 0) return;

  // Caller scratch: the jobs, their first tasks, each group's first quantization task and first quant row,
  // then the quants of the rows of every group with a quantized matrix.
  const size_t n_groups = groups.size();
  const size_t table_bytes = AlignUp(sizeof(Job) * jobs, 64) + AlignUp(sizeof(int64_t) * (jobs + 1), 64) +
                             AlignUp(sizeof(int64_t) * (n_groups + 1), 64) +
                             AlignUp(sizeof(int64_t) * n_groups, 64);
  int64_t quant_rows = 0;
  for (const MatMulGroup& g : groups) {
    if (g.rows <= 0) continue;
    bool quantized = false;
    for (const WeightMatrix& w : g.ws) quantized = quantized || QuantWeightIndex(w.type) >= 0;
    if (quantized) quant_rows += g.rows;
  }
  size_t q_bytes = 0, d_bytes = 0;
  if (quant_rows > 0) LOCKSTEP_CHECK(in % kActBlock == 0);
  const size_t quant_bytes = quant_rows > 0 ? QuantBytes(in, quant_rows, &q_bytes, &d_bytes) : 0;
  std::byte* const scratch = pool.CallerScratch(table_bytes + quant_bytes);
  std::byte* at = scratch;
  Job* const job = reinterpret_cast<Job*>(at);
  at += AlignUp(sizeof(Job) * jobs, 64);
  int64_t* const job_first_task = reinterpret_cast<int64_t*>(at);
  at += AlignUp(sizeof(int64_t) * (jobs + 1), 64);
  int64_t* const group_first_quantize_task = reinterpret_cast<int64_t*>(at);
  at += AlignUp(sizeof(int64_t) * (n_groups + 1), 64);
  int64_t* const group_quant_row = reinterpret_cast<int64_t*>(at);  // -1: the group needs no quants
  const ActivationQuants quants = QuantsAt(scratch + table_bytes, in, q_bytes, d_bytes);

  size_t j = 0;
  int64_t quant_row = 0;
  job_first_task[0] = 0;
  group_first_quantize_task[0] = 0;
  for (size_t gi = 0; gi < n_groups; ++gi) {
    const MatMulGroup& g = groups[gi];
    bool quantized = false;
    for (size_t i = 0; g.rows > 0 && i < g.ws.size(); ++i, ++j) {
      std::construct_at(&job[j]);
      quantized = PrepareJob(kernels, g.ws[i], g.x, g.rows, g.ys[i], job[j]) || quantized;
      job_first_task[j + 1] =
          job_first_task[j] +
          (std::max<int64_t>(g.ws[i].out, 0) + job[j].task_outputs - 1) / job[j].task_outputs;
    }
    group_quant_row[gi] = quantized ? quant_row : -1;
    const int64_t tasks = quantized ? (g.rows + kQuantizeRowsPerTask - 1) / kQuantizeRowsPerTask : 0;
    group_first_quantize_task[gi + 1] = group_first_quantize_task[gi] + tasks;
    if (!quantized) continue;
    const ActivationQuants group_quants = QuantsFromRow(quants, in, quant_row);
    for (size_t i = j - g.ws.size(); i < j; ++i) job[i].args.UseQuants(group_quants);
    quant_row += g.rows;
  }

  if (quant_rows > 0) {
    // Each task also checks its rows' scales (while they are in cache) for sum_d_exact; pool.Run's return
    // orders the tasks' stores before the load.
    const int64_t blocks = in / kActBlock;
    std::atomic<bool> inexact{false};
    auto quantize = [&](int64_t task, int) {
      const size_t gi = Find(group_first_quantize_task, n_groups, task);
      const MatMulGroup& g = groups[gi];
      const int64_t begin = (task - group_first_quantize_task[gi]) * kQuantizeRowsPerTask;
      const int64_t end = std::min(g.rows, begin + kQuantizeRowsPerTask);
      const ActivationQuants group_quants = QuantsFromRow(quants, in, group_quant_row[gi]);
      kernels.quantize(g.x, in, begin, end, group_quants);
      if (!SumDIsExact(group_quants.d + begin * blocks, (end - begin) * blocks)) {
        inexact.store(true, std::memory_order_relaxed);
      }
    };
    const int64_t quantize_tasks = group_first_quantize_task[n_groups];
    if (quant_rows <= kQuantizeRowsPerTask) {  // a few rows in all (decode): not worth a loop
      for (int64_t task = 0; task < quantize_tasks; ++task) quantize(task, 0);
    } else {
      pool.Run(quantize_tasks, quantize);
    }
    const bool sum_d_exact = !inexact.load(std::memory_order_relaxed);
    for (size_t i = 0; i < jobs; ++i) job[i].args.sum_d_exact = sum_d_exact;
  }

  pool.Run(job_first_task[jobs], [&](int64_t task, int worker) {
    const size_t i = Find(job_first_task, jobs, task);
    const Job& b = job[i];
    const int64_t begin = (task - job_first_task[i]) * b.task_outputs;
    const int64_t end = std::min(b.args.out, begin + b.task_outputs);
    if (b.scratch_tile != nullptr) {
      b.scratch_tile(b.args, begin, end, pool.WorkerScratch(worker, kernels.many_rows_scratch));
    } else {
      b.tile(b.args, begin, end);
    }
  });
}

}  // namespace lockstep
