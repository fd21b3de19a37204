// The kernel table — the one seam between what a forward pass computes (model/) and how a CPU computes it
// (tensor/): every hot loop for one CPU level (tensor/cpu_level.h) as plain function pointers, chosen once at
// start-up by ChooseKernels and handed explicitly to whoever runs a model (Model::Load -> Transformer). No
// kernel asks the CPU anything itself; forcing a level (LOCKSTEP_CPU) forces all of them. Every level's
// kernels give bit-identical results (the canonical orders in tensor/matmul_internal.h and
// tensor/attention_kernels.h), so a level changes speed, never tokens. How another backend (a GPU) would
// plug in: docs/kernels.md.
//
// A Kernels value is immutable once built and safe to share between threads; it owns nothing (copy freely).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tensor/attention_decode.h"
#include "tensor/attention_kernels.h"
#include "tensor/cpu_features.h"
#include "tensor/cpu_level.h"
#include "tensor/matmul_kernels.h"

namespace lockstep {

// Attention over widened KV blocks and straight from stored blocks (tensor/attention_kernels.h,
// tensor/attention_decode.h; their contracts, without the level argument).
struct AttentionKernels {
  attention::KernelLevel level = attention::KernelLevel::kScalar;
  void (*dot_keys)(const float* q, size_t q_stride, int queries, const float* keys, int32_t count,
                   int head_dim, float scale, float* scores, size_t scores_stride) = nullptr;
  void (*accumulate_values)(const float* w, size_t w_stride, int queries, const float* values, int32_t count,
                            int head_dim, float* out, size_t out_stride) = nullptr;
  attention::SoftmaxStats (*softmax)(float* x, int32_t len) = nullptr;
  void (*partition_weights)(const attention::SoftmaxStats* stats, int parts, float* weights, int rows,
                            size_t stride) = nullptr;
  // One decode row from the stored blocks; null where the level has none. Only for shapes
  // attention::CanAttendDecodeRow accepts at `level`.
  void (*decode_row)(const std::byte* const* blocks, size_t key_offset, size_t value_offset, KvDtype dtype,
                     int32_t block_tokens, int32_t begin, int32_t end, const float* q, size_t q_stride,
                     int queries, int head_dim, int value_dim, float scale, float* scores,
                     size_t scores_stride, float* out, size_t out_stride, attention::SoftmaxStats* stats,
                     size_t stats_stride) = nullptr;
};

// Element-wise kernels of the feed-forward block, norms and RoPE (tensor/activations.h, tensor/norms.h,
// tensor/rope_kernels.h).
struct ElementwiseKernels {
  void (*swiglu)(float* gate, const float* up, int64_t n) = nullptr;
  void (*geglu)(float* gate, const float* up, int64_t n) = nullptr;
  // gpt-oss's clamped SwiGLU (tensor/activations.h): the scalar version at every level.
  void (*swiglu_oai)(float* gate, const float* up, int64_t n, float alpha, float limit) = nullptr;
  // Nemotron's squared ReLU, in place (tensor/activations.h): exact, the scalar version at every level.
  void (*relu_squared)(float* x, int64_t n) = nullptr;
  void (*rms_norm)(const float* x, const float* w, int64_t n, float eps, float* out) = nullptr;
  void (*rope)(const float* cos_sin, int64_t pairs, bool halves, int64_t head_dim, float* x,
               int64_t heads) = nullptr;
};

// The recurrence of Gated DeltaNet layers (tensor/delta_rule.h): one token's delta rule on one value head's
// state.
struct RecurrentKernels {
  void (*delta_rule)(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o) = nullptr;
};

struct Kernels {
  CpuLevel level = CpuLevel::kScalar;
  MatMulKernels matmul;
  AttentionKernels attention;
  ElementwiseKernels elementwise;
  RecurrentKernels recurrent;

  std::string_view name() const { return CpuLevelName(level); }
};

// `level`'s table. Errors: the level is not runnable on `cpu` or has no kernels in this build (naming the
// levels that are), or (amx) the tile kernel's start-up self-check disagrees with the avx512-vnni kernels.
Result<Kernels> KernelsForLevel(CpuLevel level, const CpuFeatures& cpu);
// The table to run with: the level named by `forced` (LOCKSTEP_CPU's value; empty: the best level the CPU
// runs). An unknown or unavailable name is an error naming the runnable levels. If the best level is amx
// and its self-check fails, warns on stderr and falls back to avx512-vnni.
Result<Kernels> ChooseKernels(const CpuFeatures& cpu, std::string_view forced);
// ChooseKernels(ProbeCpuFeatures(), $LOCKSTEP_CPU).
Result<Kernels> ChooseKernelsForThisCpu();

}  // namespace lockstep
