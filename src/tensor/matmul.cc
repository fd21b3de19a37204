#include "tensor/matmul.h"

#include <algorithm>
#include <array>

#include "base/status.h"
#include "tensor/matmul_amx.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

// Outputs per pool task: a multiple of the kernel's output tile. Three 16-output groups for the AVX-512 Q8_0
// and AMX tiles (and a multiple of the float tiles' 6 outputs); two for packed Q4_0 and K-quants, whose
// AVX-512 tiles take two groups (with three per task, every third group ran alone, at half the dots per
// activation broadcast: a third of a Q4_K_M model's decode time). The result of an output never depends on
// which task or worker computes it.
int64_t TaskOutputs(const TileArgs& a, bool on_tiles) {
  const bool pairs = a.packed != nullptr && !on_tiles && a.type != TensorType::kQ8_0;
  return pairs ? 2 * kPackedGroup : 3 * kPackedGroup;
}
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

void MatMul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool) {
  MatMulShared(std::span<const WeightMatrix>(&w, 1), x, rows, std::span<float* const>(&y, 1), pool);
}

void MatMulShared(std::span<const WeightMatrix> ws, const float* x, int64_t rows, std::span<float* const> ys,
                  ThreadPool& pool) {
  LOCKSTEP_CHECK(ws.size() == ys.size() && ws.size() <= kMaxSharedMatrices);
  if (rows <= 0 || ws.empty()) return;
  const int64_t in = ws[0].in;
  std::array<TileArgs, kMaxSharedMatrices> args;
  std::array<int64_t, kMaxSharedMatrices + 1> first_task{};  // task index where matrix i starts
  std::array<int64_t, kMaxSharedMatrices> task_outputs{};
  std::array<bool, kMaxSharedMatrices> on_tiles{};  // AMX (bit-identical to RunPackedTile)
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
    if (w.packed != nullptr) {
      LOCKSTEP_CHECK(w.packed->type == w.type && w.packed->in == w.in && w.packed->out == w.out);
      a.packed = w.packed;
      on_tiles[i] = rows >= kAmxMinRows && AmxPackedSupports(w.type) && AmxMatMulEnabled();
    }
    any_quantized = any_quantized || IsQuantizedMatMulType(w.type);
    task_outputs[i] = TaskOutputs(a, on_tiles[i]);
    first_task[i + 1] = first_task[i] + (std::max<int64_t>(w.out, 0) + task_outputs[i] - 1) / task_outputs[i];
  }
  if (any_quantized) {
    // Activations are quantized once per call into the pool's caller scratch: quants (rows padded to 64
    // bytes), block scales, block sums, sums per half block (2 per block), Q8_0 dot starts.
    LOCKSTEP_CHECK(in % kActBlock == 0);
    const int64_t blocks = in / kActBlock;
    ActivationQuants quants;
    quants.q_stride = static_cast<int64_t>(AlignUp(static_cast<size_t>(in), 64));
    const size_t q_bytes = AlignUp(static_cast<size_t>(rows * quants.q_stride), 64);
    const size_t d_bytes = AlignUp(sizeof(float) * static_cast<size_t>(rows * blocks), 64);
    std::byte* scratch = pool.CallerScratch(q_bytes + 5 * d_bytes);
    quants.q = reinterpret_cast<int8_t*>(scratch);
    quants.d = reinterpret_cast<float*>(scratch + q_bytes);
    quants.sums = reinterpret_cast<int32_t*>(scratch + q_bytes + d_bytes);
    quants.sums16 = reinterpret_cast<int32_t*>(scratch + q_bytes + 2 * d_bytes);
    quants.q8_starts = reinterpret_cast<int32_t*>(scratch + q_bytes + 4 * d_bytes);
    for (size_t i = 0; i < ws.size(); ++i) args[i].UseQuants(quants);
    const int64_t quantize_tasks = (rows + kQuantizeRowsPerTask - 1) / kQuantizeRowsPerTask;
    auto quantize = [&](int64_t task, int) {
      const int64_t begin = task * kQuantizeRowsPerTask, end = std::min(rows, begin + kQuantizeRowsPerTask);
      RunQuantizeActivations(x, in, begin, end, quants);
    };
    if (quantize_tasks == 1) {
      quantize(0, 0);
    } else {
      pool.Run(quantize_tasks, quantize);
    }
  }
  pool.Run(first_task[ws.size()], [&](int64_t task, int) {
    size_t i = 0;
    while (task >= first_task[i + 1]) ++i;
    const TileArgs& a = args[i];
    const int64_t begin = (task - first_task[i]) * task_outputs[i];
    const int64_t end = std::min(a.out, begin + task_outputs[i]);
    if (on_tiles[i]) {
      RunAmxPackedTile(a, begin, end);
    } else if (a.packed != nullptr) {
      RunPackedTile(a, begin, end);
    } else if (IsQuantizedMatMulType(a.type)) {
      RunQuantTile(a, begin, end);
    } else {
      RunFloatTile(a, begin, end);
    }
  });
}

}  // namespace lockstep
