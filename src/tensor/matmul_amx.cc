// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512 intrinsics.
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "tensor/matmul_amx.h"

#include <cstring>
#include <vector>

#include "base/status.h"
#include "tensor/dequantize.h"
#include "tensor/matmul.h"
#include "tensor/packed_weights.h"

#if defined(__x86_64__)
#include "tensor/matmul_amx_kernel.h"
#endif

namespace lockstep {

bool PackedKernelMatches(const MatMulKernels& reference, TensorType type, TileFn run) {
  const int64_t in = 512, out = 40, rows = 21;
  const size_t row_bytes = RowBytes(type, in);
  std::vector<std::byte> weights(row_bytes * out);
  std::vector<float> values(in);
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(seed >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  };
  for (int64_t o = 0; o < out; ++o) {
    for (float& v : values) v = next() * static_cast<float>(1 + o % 5);
    QuantizeRow(type, values.data(), weights.data() + o * row_bytes, in);
  }
  const WeightMatrix w{type, in, out, weights.data()};
  const PackedWeightsPtr packed = PackWeights(w);
  std::vector<float> x(rows * in);
  for (float& v : x) v = next() * 3.0f;
  const int64_t blocks = in / 32, q_stride = 576;
  std::vector<int8_t> q(rows * q_stride);
  std::vector<float> d(rows * blocks);
  std::vector<int32_t> sums(rows * blocks), sums16(2 * rows * blocks), starts(rows * blocks),
      q4_starts(rows * blocks);
  std::vector<float> sum_d(rows * blocks);
  ActivationQuants quants{q.data(),      q_stride,      d.data(),         sums.data(),
                          sums16.data(), starts.data(), q4_starts.data(), sum_d.data()};
  reference.quantize(x.data(), in, 0, rows, quants);
  quants.sum_d_exact = SumDIsExact(d.data(), rows * blocks);
  TileArgs a;
  a.type = type;
  a.in = in;
  a.out = out;
  a.weights = weights.data();
  a.row_bytes = row_bytes;
  a.rows = rows;
  a.packed = packed.get();
  a.UseQuants(quants);
  std::vector<float> expected(rows * out, 1.0f), actual(rows * out, 2.0f);
  a.y = expected.data();
  reference.packed_tile[QuantWeightIndex(type)](a, 0, out);
  a.y = actual.data();
  run(a, 0, 32);
  run(a, 32, out);
  return std::memcmp(expected.data(), actual.data(), sizeof(float) * expected.size()) == 0;
}

namespace {

#if defined(__x86_64__)
// The CPU's tiles. The instructions are written as assembly (binutils knows them) rather than through GCC's
// intrinsics, whose tile numbers must be literal tokens.
struct HardwareTiles {
  static void Configure(const amx::AmxTileConfig& config) {
    asm volatile("ldtilecfg %0" : : "m"(config) : "memory");
  }
  template <int kTile>
  static void Load(const void* base, int64_t stride) {
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(kTile) : "memory");
  }
  template <int kTile>
  static void Zero() {
    asm volatile("tilezero %%tmm%c0" : : "i"(kTile));
  }
  // C += A (signed bytes) x B (unsigned bytes). AT&T order: B, A, C.
  template <int kC, int kA, int kB>
  static void DotSignedUnsigned() {
    asm volatile("tdpbsud %%tmm%c0, %%tmm%c1, %%tmm%c2" : : "i"(kB), "i"(kA), "i"(kC));
  }
  // C += A (signed bytes) x B (signed bytes).
  template <int kC, int kA, int kB>
  static void DotSignedSigned() {
    asm volatile("tdpbssd %%tmm%c0, %%tmm%c1, %%tmm%c2" : : "i"(kB), "i"(kA), "i"(kC));
  }
  template <int kTile>
  static void Store(void* base, int64_t stride) {
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(kTile) : "memory");
  }
  static void Release() { asm volatile("tilerelease" : : : "memory"); }
};

void RunHardwareTile(const TileArgs& args, int64_t o_begin, int64_t o_end, std::byte* scratch) {
  HardwareTiles tiles;
  amx::PackedTile(tiles, args, o_begin, o_end, *reinterpret_cast<amx::AmxScratch*>(scratch));
}
#endif  // __x86_64__

}  // namespace

void FillAmxMatMulKernels(MatMulKernels* k) {
#if defined(__x86_64__)
  // Not Q8_0: its tiles only match the VNNI kernel (1.0x at 512 rows; at 2 threads the 135M and 1B Q8_0
  // models prefill 3-5 % slower with them, docs/kernels.md), so its products stay on avx512-vnni.
  for (TensorType type : kAmxKernelTypes) {
    if (type != TensorType::kQ8_0) k->many_rows_tile[QuantWeightIndex(type)] = &RunHardwareTile;
  }
  k->many_rows = kAmxMinRows;
  k->many_rows_scratch = sizeof(amx::AmxScratch);
#else
  (void)k;
#endif
}

void AmxPackedTileOnStack(const TileArgs& args, int64_t o_begin, int64_t o_end) {
#if defined(__x86_64__)
  alignas(64) amx::AmxScratch scratch;
  RunHardwareTile(args, o_begin, o_end, reinterpret_cast<std::byte*>(&scratch));
#else
  (void)args, (void)o_begin, (void)o_end;
  LOCKSTEP_CHECK_MSG(false, "AMX on a non-x86 build");
#endif
}

}  // namespace lockstep
