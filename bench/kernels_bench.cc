// MatMul throughput at smollm2-135m and llama-1b feed-forward shapes for every weight type and row count, 2
// threads (override with LOCKSTEP_BENCH_THREADS). Reports weight bytes streamed per second (GB/s) and
// arithmetic (GFLOP/s). MoE/experts: a Qwen3-30B-A3B layer's expert products (128 experts of 2048 -> 768 ->
// 2048, 8 per token, gate/up Q4_K and down Q6_K, packed) for `tokens` tokens routed at random, one MatMul
// per expert (per_expert) or one grouped product per stage (grouped, tensor/matmul_grouped.h). JSON:
// kernels_bench --benchmark_format=json. Filter e.g.
// --benchmark_filter='q8_0/576x1536/rows:1$'. The kernels are the best CPU level's, or LOCKSTEP_CPU's (the
// level is in the JSON context as "cpu_level").
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gguf/tensor_type.h"
#include "tensor/dequantize.h"
#include "tensor/kernels.h"
#include "tensor/matmul.h"
#include "tensor/matmul_grouped.h"
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

std::vector<std::byte> RandomWeights(TensorType type, int64_t in, int64_t out, uint32_t seed = 1) {
  std::mt19937 rng(seed);
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

// The expert products of one MoE layer over `tokens` routed tokens (see the file comment).
class MoeLayer {
 public:
  static constexpr int64_t kExperts = 128, kUsed = 8, kEmbd = 2048, kFf = 768;

  MoeLayer() {
    for (int64_t e = 0; e < kExperts; ++e) {
      gate_.push_back(Matrix(TensorType::kQ4_K, kEmbd, kFf, 3 * e));
      up_.push_back(Matrix(TensorType::kQ4_K, kEmbd, kFf, 3 * e + 1));
      down_.push_back(Matrix(TensorType::kQ6_K, kFf, kEmbd, 3 * e + 2));
    }
    std::vector<WeightMatrix*> all;
    for (int64_t e = 0; e < kExperts; ++e) {
      for (WeightMatrix* m : {&gate_[e], &up_[e], &down_[e]}) all.push_back(m);
    }
    packed_ = PackWeightsTogether(std::vector<const WeightMatrix*>(all.begin(), all.end()), Pool().size());
    for (size_t i = 0; i < all.size(); ++i) all[i]->packed = packed_[i].get();
  }

  // Routes `tokens` tokens (kUsed distinct experts each, at random) and sizes the buffers.
  void Route(int64_t tokens) {
    std::mt19937 rng(5);
    starts_.assign(kExperts + 1, 0);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<int64_t> experts(kExperts);
      for (int64_t e = 0; e < kExperts; ++e) experts[e] = e;
      for (int64_t j = 0; j < kUsed; ++j) {
        std::swap(experts[j], experts[j + int64_t(rng() % uint32_t(kExperts - j))]);
        ++starts_[experts[j] + 1];
      }
    }
    for (int64_t e = 0; e < kExperts; ++e) starts_[e + 1] += starts_[e];
    const int64_t slots = tokens * kUsed;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    x_.resize(slots * kEmbd);
    for (float& v : x_) v = normal(rng);
    gate_out_.assign(slots * kFf, 0.0f);
    up_out_.assign(slots * kFf, 0.0f);
    out_.assign(slots * kEmbd, 0.0f);
  }

  void PerExpert() {
    for (int64_t e = 0; e < kExperts; ++e) {
      const int64_t first = starts_[e], count = starts_[e + 1] - first;
      if (count == 0) continue;
      const WeightMatrix gate_up[] = {gate_[e], up_[e]};
      float* const ys[] = {gate_out_.data() + first * kFf, up_out_.data() + first * kFf};
      MatMulShared(BenchKernels().matmul, gate_up, x_.data() + first * kEmbd, count, ys, Pool());
    }
    for (int64_t e = 0; e < kExperts; ++e) {
      const int64_t first = starts_[e], count = starts_[e + 1] - first;
      if (count == 0) continue;
      MatMul(BenchKernels().matmul, down_[e], gate_out_.data() + first * kFf, count,
             out_.data() + first * kEmbd, Pool());
    }
  }

  void Grouped() {
    std::vector<WeightMatrix> gate_up(2 * kExperts);
    std::vector<float*> ys(2 * kExperts), down_ys(kExperts);
    std::vector<MatMulGroup> groups, down_groups;
    for (int64_t e = 0; e < kExperts; ++e) {
      const int64_t first = starts_[e], count = starts_[e + 1] - first;
      if (count == 0) continue;
      gate_up[2 * e] = gate_[e];
      gate_up[2 * e + 1] = up_[e];
      ys[2 * e] = gate_out_.data() + first * kFf;
      ys[2 * e + 1] = up_out_.data() + first * kFf;
      down_ys[e] = out_.data() + first * kEmbd;
      groups.push_back({std::span<const WeightMatrix>(&gate_up[2 * e], 2), x_.data() + first * kEmbd, count,
                        std::span<float* const>(&ys[2 * e], 2)});
      down_groups.push_back({std::span<const WeightMatrix>(&down_[e], 1), gate_out_.data() + first * kFf,
                             count, std::span<float* const>(&down_ys[e], 1)});
    }
    MatMulGrouped(BenchKernels().matmul, groups, Pool());
    MatMulGrouped(BenchKernels().matmul, down_groups, Pool());
  }

  double WeightBytesTouched() const {
    double bytes = 0;
    for (int64_t e = 0; e < kExperts; ++e) {
      if (starts_[e + 1] == starts_[e]) continue;
      bytes +=
          double(2 * RowBytes(TensorType::kQ4_K, kEmbd) * kFf + RowBytes(TensorType::kQ6_K, kFf) * kEmbd);
    }
    return bytes;
  }

 private:
  WeightMatrix Matrix(TensorType type, int64_t in, int64_t out, uint32_t seed) {
    storage_.push_back(RandomWeights(type, in, out, seed));
    return WeightMatrix{type, in, out, storage_.back().data()};
  }

  std::vector<std::vector<std::byte>> storage_;
  std::vector<WeightMatrix> gate_, up_, down_;
  std::vector<PackedWeightsPtr> packed_;
  std::vector<int64_t> starts_;
  std::vector<float> x_, gate_out_, up_out_, out_;
};

void BM_MoeExperts(benchmark::State& state, bool grouped) {
  static MoeLayer* layer = new MoeLayer();
  const int64_t tokens = state.range(0);
  layer->Route(tokens);
  for (auto _ : state) {
    if (grouped) {
      layer->Grouped();
    } else {
      layer->PerExpert();
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(layer->WeightBytesTouched() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] =
      benchmark::Counter(double(tokens), benchmark::Counter::kIsIterationInvariantRate);
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
  for (bool grouped : {false, true}) {
    benchmark::RegisterBenchmark(grouped ? "MoE/experts/grouped" : "MoE/experts/per_expert", BM_MoeExperts,
                                 grouped)
        ->ArgName("tokens")
        ->Arg(1)
        ->Arg(8)
        ->Arg(32)
        ->Arg(128)
        ->Arg(512)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  const TensorType types[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,   TensorType::kQ8_0,
                              TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ5_1,   TensorType::kQ4_K,
                              TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_NL, TensorType::kIQ4_XS,
                              TensorType::kQ3_K, TensorType::kQ2_K, TensorType::kMXFP4};
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
