// MatMul throughput at smollm2-135m and llama-1b feed-forward shapes for every weight type and row count, 2
// threads (override with LOCKSTEP_BENCH_THREADS). Reports weight bytes streamed per second (GB/s) and
// arithmetic (GFLOP/s). JSON: kernels_bench --benchmark_format=json. Filter e.g.
// --benchmark_filter='q8_0/576x1536/rows:1$'. The kernels are the best CPU level's, or LOCKSTEP_CPU's (the
// level is in the JSON context as "cpu_level").
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"
#include "tensor/dequantize.h"
#include "tensor/kernels.h"
#include "tensor/matmul.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

int BenchThreads() {
  const char* env = std::getenv("LOCKSTEP_BENCH_THREADS");
  return env != nullptr ? std::max(1, std::atoi(env)) : 2;
}

ThreadPool& Pool() {
  static ThreadPool* pool = new ThreadPool(BenchThreads());
  return *pool;
}

const Kernels& BenchKernels() {
  static const Kernels* kernels = [] {
    Result<Kernels> k = ChooseKernelsForThisCpu();
    if (!k.ok()) {
      std::fprintf(stderr, "kernels_bench: %s\n", k.status().ToString().c_str());
      std::exit(1);
    }
    return new Kernels(*k);
  }();
  return *kernels;
}

std::vector<std::byte> RandomWeights(TensorType type, int64_t in, int64_t out) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const size_t row_bytes = RowBytes(type, in);
  std::vector<std::byte> data(row_bytes * out);
  std::vector<float> row(in);
  for (int64_t o = 0; o < out; ++o) {
    for (float& v : row) v = normal(rng);
    QuantizeRow(type, row.data(), data.data() + o * row_bytes, in);
  }
  return data;
}

void BM_MatMul(benchmark::State& state, TensorType type, int64_t in, int64_t out, bool pack) {
  const int64_t rows = state.range(0);
  const std::vector<std::byte> weights = RandomWeights(type, in, out);
  std::vector<float> x(rows * in), y(rows * out);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  WeightMatrix w{type, in, out, weights.data()};
  PackedWeightsPtr packed = pack ? PackWeights(w) : nullptr;
  w.packed = packed.get();
  for (auto _ : state) {
    MatMul(BenchKernels().matmul, w, x.data(), rows, y.data(), Pool());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(weights.size());
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * in * out * rows * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = Pool().size();
}

// Cost of one parallel loop with trivial tasks (the per-MatMul synchronisation overhead).
void BM_ThreadPoolRun(benchmark::State& state) {
  std::vector<int64_t> sink(64);
  for (auto _ : state) {
    Pool().Run(state.range(0), [&](int64_t task, int worker) { sink[worker * 8] += task; });
  }
  benchmark::DoNotOptimize(sink.data());
}

void RegisterAll() {
  benchmark::AddCustomContext("cpu_level", std::string(BenchKernels().name()));
  benchmark::RegisterBenchmark("ThreadPool/Run", BM_ThreadPoolRun)
      ->ArgName("tasks")
      ->Arg(2)
      ->Arg(64)
      ->UseRealTime();
  const TensorType types[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ8_0,
                              TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ6_K};
  const std::pair<int64_t, int64_t> shapes[] = {{576, 576},   {576, 1536},
                                                {1536, 576},  {576, 49152},   // smollm2-135m
                                                {2048, 8192}, {8192, 2048}};  // llama-1b feed-forward
  for (TensorType type : types) {
    for (bool pack : {false, true}) {
      if (pack && !CanPackWeights(type)) continue;
      for (const auto& [in, out] : shapes) {
        if (in % GetTensorTypeTraits(type).block_elements != 0) continue;  // K-quants need in % 256 == 0
        const std::string name = std::string(TensorTypeName(type)) + (pack ? "-packed" : "") + "/" +
                                 std::to_string(in) + "x" + std::to_string(out);
        benchmark::RegisterBenchmark(("MatMul/" + name).c_str(), BM_MatMul, type, in, out, pack)
            ->ArgName("rows")
            ->Arg(1)
            ->Arg(5)
            ->Arg(8)
            ->Arg(32)
            ->Arg(512)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  lockstep::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
