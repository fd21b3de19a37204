// One decode row's attention over a long context, every layer of the SmolLM2-135M shape (30 layers, 3 KV
// heads of 3 query heads each, head_dim 64, f16 KV in 16-position blocks), 2 threads (override with
// LOCKSTEP_BENCH_THREADS): one task per KV head (AttendRows), against the row split into its 256-position
// parts, one task per (KV head, part), merged after (AttendRowPart, MergeRowParts; the split the forward pass
// uses when KV heads are few for the threads). Both give the same bits; with 3 KV heads on 2 threads the
// first leaves one thread idle a third of the time. Reports KV bytes read per second.
// PromptAttention: a prompt's attention (tiles of 16 rows), every layer, for comparing builds. Names ending
// in /q8_0 run the same over a q8_0 KV cache (tensor/kv_storage.h) instead of f16. JSON: attention_bench
// --benchmark_format=json.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "model/attention.h"
#include "tensor/kernels.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

ThreadPool& Pool() {
  const char* env = std::getenv("LOCKSTEP_BENCH_THREADS");
  static ThreadPool* pool = new ThreadPool(env != nullptr ? std::max(1, std::atoi(env)) : 2);
  return *pool;
}

// The best CPU level's attention kernels, or LOCKSTEP_CPU's.
const AttentionKernels& BenchAttention() {
  static const AttentionKernels* kernels = [] {
    Result<Kernels> k = ChooseKernelsForThisCpu();
    if (!k.ok()) {
      std::fprintf(stderr, "attention_bench: %s\n", k.status().ToString().c_str());
      std::exit(1);
    }
    return new AttentionKernels(k->attention);
  }();
  return *kernels;
}

// SmolLM2-135M's attention shape (30 layers, 3 KV heads of 3 query heads, head_dim 64), f16 KV in blocks of
// 16, every layer's K/V at positions [0, positions) random, and random queries for `rows` rows.
struct BenchKv {
  BenchKv(int32_t positions, int32_t rows, KvDtype dtype) {
    kv.n_layer = 30;
    kv.n_kv_head = 3;
    kv.head_dim = 64;
    kv.block_tokens = 16;
    kv.dtype = dtype;
    storage.assign(size_t(positions + kv.block_tokens - 1) / kv.block_tokens,
                   std::vector<std::byte>(kv.BlockBytes()));
    for (auto& b : storage) blocks.push_back(b.data());
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k(size_t(kv.n_kv_head) * kv.head_dim), v(k.size());
    for (int32_t layer = 0; layer < kv.n_layer; ++layer) {
      for (int32_t p = 0; p < positions; ++p) {
        for (float& x : k) x = normal(rng);
        for (float& x : v) x = normal(rng);
        WriteKv(kv, blocks, layer, p, k.data(), v.data());
      }
    }
    q.resize(size_t(rows) * q_dim);
    for (float& x : q) x = normal(rng);
    out.resize(q.size());
  }
  static constexpr int32_t kGroup = 3;   // query heads per KV head
  const size_t q_dim = 3 * kGroup * 64;  // all query heads of a row
  const float scale = 1.0f / std::sqrt(64.0f);
  KvLayout kv;
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::byte*> blocks;
  std::vector<float> q, out;
};

void BM_DecodeRowAttention(benchmark::State& state, bool split, KvDtype dtype) {
  const int32_t context = int32_t(state.range(0));
  BenchKv b(context, 1, dtype);
  const KvLayout& kv = b.kv;
  const int32_t group = BenchKv::kGroup, n_head = kv.n_kv_head * group;
  const int32_t position = context - 1, parts = AttentionParts(position);
  std::vector<float> partials(size_t(n_head) * parts * kv.head_dim);
  std::vector<attention::SoftmaxStats> stats(size_t(n_head) * parts);
  for (auto _ : state) {
    for (int32_t layer = 0; layer < kv.n_layer; ++layer) {  // one parallel loop per layer, as in Forward
      if (!split) {
        Pool().Run(kv.n_kv_head, [&](int64_t g, int worker) {
          std::byte* scratch =
              Pool().WorkerScratch(worker, AttendRowsScratchBytes(BenchAttention(), kv, position, 1, group));
          AttendRows(BenchAttention(), kv, b.blocks, layer, int32_t(g), position, 1,
                     b.q.data() + g * group * kv.head_dim, size_t(b.q_dim), group, b.scale,
                     b.out.data() + g * group * kv.head_dim, size_t(b.q_dim), scratch);
        });
        continue;
      }
      Pool().Run(int64_t(kv.n_kv_head) * parts, [&](int64_t task, int worker) {
        const int32_t g = int32_t(task / parts), part = int32_t(task % parts);
        AttendRowPart(BenchAttention(), kv, b.blocks, layer, g, position, part,
                      b.q.data() + g * group * kv.head_dim, group, b.scale,
                      partials.data() + size_t(g) * group * parts * kv.head_dim,
                      stats.data() + size_t(g) * group * parts,
                      Pool().WorkerScratch(worker, AttendRowPartScratchBytes(group)));
      });
      for (int32_t g = 0; g < kv.n_kv_head; ++g) {
        MergeRowParts(BenchAttention(), kv, position, group,
                      partials.data() + size_t(g) * group * parts * kv.head_dim,
                      stats.data() + size_t(g) * group * parts, b.out.data() + g * group * kv.head_dim,
                      Pool().WorkerScratch(0, MergeRowPartsScratchBytes(position, group)));
      }
    }
    benchmark::DoNotOptimize(b.out.data());
    benchmark::ClobberMemory();
  }
  const double kv_bytes =
      2.0 * kv.n_layer * kv.n_kv_head * double(context) / kv.block_tokens * kv.HeadBytes();
  state.counters["GB/s"] = benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = Pool().size();
}

// A prompt's attention, every layer: tiles of 16 rows, one task per (tile, KV head) as in Forward.
void BM_PromptAttention(benchmark::State& state, KvDtype dtype) {
  const int32_t prompt = int32_t(state.range(0));
  BenchKv b(prompt, prompt, dtype);
  const KvLayout& kv = b.kv;
  const int32_t group = BenchKv::kGroup;
  const int32_t tiles = (prompt + 15) / 16;
  for (auto _ : state) {
    for (int32_t layer = 0; layer < kv.n_layer; ++layer) {
      Pool().Run(int64_t(tiles) * kv.n_kv_head, [&](int64_t task, int worker) {
        const int32_t first = int32_t(task / kv.n_kv_head) * 16, g = int32_t(task % kv.n_kv_head);
        const int32_t rows = std::min(16, prompt - first);
        const size_t at = size_t(first) * b.q_dim + size_t(g) * group * kv.head_dim;
        std::byte* scratch =
            Pool().WorkerScratch(worker, AttendRowsScratchBytes(BenchAttention(), kv, first, rows, group));
        AttendRows(BenchAttention(), kv, b.blocks, layer, g, first, rows, b.q.data() + at, size_t(b.q_dim),
                   group, b.scale, b.out.data() + at, size_t(b.q_dim), scratch);
      });
    }
    benchmark::DoNotOptimize(b.out.data());
    benchmark::ClobberMemory();
  }
  state.counters["threads"] = Pool().size();
}

void RegisterAll() {
  for (KvDtype dtype : {KvDtype::kF16, KvDtype::kQ8_0}) {
    const std::string suffix = dtype == KvDtype::kF16 ? "" : std::string("/") + KvDtypeName(dtype);
    benchmark::RegisterBenchmark(("PromptAttention" + suffix).c_str(), BM_PromptAttention, dtype)
        ->ArgName("prompt")
        ->Arg(256)
        ->Arg(512)
        ->Arg(2048)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    for (bool split : {false, true}) {
      const std::string name = std::string(split ? "DecodeRowAttention/split" : "DecodeRowAttention/whole");
      benchmark::RegisterBenchmark((name + suffix).c_str(), BM_DecodeRowAttention, split, dtype)
          ->ArgName("context")
          ->Arg(512)
          ->Arg(2048)
          ->Arg(8192)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
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
