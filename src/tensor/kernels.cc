#include "tensor/kernels.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tensor/activations.h"
#include "tensor/delta_rule.h"
#include "tensor/matmul_amx.h"
#include "tensor/norms.h"
#include "tensor/rope_kernels.h"

namespace lockstep {
namespace {

using attention::KernelLevel;

// The attention kernels bound to one level (their level argument fixed).
template <KernelLevel kLevel>
void DotKeysAt(const float* q, size_t q_stride, int queries, const float* keys, int32_t count, int head_dim,
               float scale, float* scores, size_t scores_stride) {
  attention::DotKeys(kLevel, q, q_stride, queries, keys, count, head_dim, scale, scores, scores_stride);
}
template <KernelLevel kLevel>
void AccumulateValuesAt(const float* w, size_t w_stride, int queries, const float* values, int32_t count,
                        int head_dim, float* out, size_t out_stride) {
  attention::AccumulateValues(kLevel, w, w_stride, queries, values, count, head_dim, out, out_stride);
}
template <KernelLevel kLevel>
attention::SoftmaxStats SoftmaxAt(float* x, int32_t len) {
  return attention::Softmax(kLevel, x, len);
}
template <KernelLevel kLevel>
void PartitionWeightsAt(const attention::SoftmaxStats* stats, int parts, float* weights, int rows,
                        size_t stride) {
  attention::PartitionWeights(kLevel, stats, parts, weights, rows, stride);
}
template <KernelLevel kLevel>
void DecodeRowAt(const std::byte* const* blocks, size_t key_offset, size_t value_offset, KvDtype dtype,
                 int32_t block_tokens, int32_t begin, int32_t end, const float* q, size_t q_stride,
                 int queries, int head_dim, int value_dim, float scale, float* scores, size_t scores_stride,
                 float* out, size_t out_stride, attention::SoftmaxStats* stats, size_t stats_stride) {
  attention::AttendDecodeRow(kLevel, blocks, key_offset, value_offset, dtype, block_tokens, begin, end, q,
                             q_stride, queries, head_dim, value_dim, scale, scores, scores_stride, out,
                             out_stride, stats, stats_stride);
}

template <KernelLevel kLevel>
AttentionKernels BindAttention() {
  AttentionKernels k;
  k.level = kLevel;
  k.dot_keys = &DotKeysAt<kLevel>;
  k.accumulate_values = &AccumulateValuesAt<kLevel>;
  k.softmax = &SoftmaxAt<kLevel>;
  k.partition_weights = &PartitionWeightsAt<kLevel>;
  if (attention::CanAttendDecodeRow(kLevel, 16, 16, 16, 1)) k.decode_row = &DecodeRowAt<kLevel>;
  return k;
}

AttentionKernels AttentionKernelsFor(CpuLevel level) {
  switch (attention::AttentionLevelFor(level)) {
    case KernelLevel::kAvx2:
      return BindAttention<KernelLevel::kAvx2>();
    case KernelLevel::kAvx512:
      return BindAttention<KernelLevel::kAvx512>();
    case KernelLevel::kNeon:
      return BindAttention<KernelLevel::kNeon>();
    default:
      return BindAttention<KernelLevel::kScalar>();
  }
}

ElementwiseKernels ElementwiseKernelsFor(CpuLevel level) {
  ElementwiseKernels k;
  k.swiglu = &SwiGluScalar;
  k.geglu = &GeGluScalar;
  k.swiglu_oai = &SwiGluOaiScalar;
  k.relu_squared = &ReluSquaredScalar;
  k.rms_norm = &RmsNorm;
  k.rope = &ApplyRope;
#if defined(__x86_64__)
  switch (attention::AttentionLevelFor(level)) {
    case KernelLevel::kAvx2:
      k.swiglu = &SwiGluAvx2;
      k.geglu = &GeGluAvx2;
      break;
    case KernelLevel::kAvx512:
      k.swiglu = &SwiGluAvx512;
      k.geglu = &GeGluAvx512;
      break;
    default:
      break;
  }
#else
  (void)level;
#endif
  return k;
}

RecurrentKernels RecurrentKernelsFor(CpuLevel level) {
  RecurrentKernels k;
  k.delta_rule = &DeltaRuleScalar;
  switch (attention::AttentionLevelFor(level)) {
#if defined(__x86_64__)
    case KernelLevel::kAvx2:
      k.delta_rule = &DeltaRuleAvx2;
      break;
    case KernelLevel::kAvx512:
      k.delta_rule = &DeltaRuleAvx512;
      break;
#elif defined(__aarch64__) && defined(__ARM_NEON)
    case KernelLevel::kNeon:
      k.delta_rule = &DeltaRuleNeon;
      break;
#endif
    default:
      break;
  }
  return k;
}

Status NotRunnable(std::string_view what, const CpuFeatures& cpu) {
  return InvalidArgument(std::string(what) +
                         "; this CPU and build run: " + CpuLevelList(RunnableCpuLevels(cpu)));
}

}  // namespace

Result<Kernels> KernelsForLevel(CpuLevel level, const CpuFeatures& cpu) {
  if (!CpuRunsLevel(cpu, level)) {
    return NotRunnable("CPU level '" + std::string(CpuLevelName(level)) + "' is not available", cpu);
  }
  Kernels k;
  k.level = level;
  if (!GetMatMulKernels(level, &k.matmul)) {
    return NotRunnable("this build has no kernels for CPU level '" + std::string(CpuLevelName(level)) + "'",
                       cpu);
  }
  if (level == CpuLevel::kAmx) {  // the tiles must reproduce the avx512-vnni kernels bit for bit
    MatMulKernels reference;
    GetMatMulKernels(CpuLevel::kAvx512Vnni, &reference);
    for (TensorType type : kAmxKernelTypes) {
      if (!PackedKernelMatches(reference, type, &AmxPackedTileOnStack)) {
        return Internal("the AMX-INT8 " + std::string(TensorTypeName(type)) +
                        " kernel's self-check differs from the avx512-vnni kernel");
      }
    }
  }
  k.attention = AttentionKernelsFor(level);
  k.elementwise = ElementwiseKernelsFor(level);
  k.recurrent = RecurrentKernelsFor(level);
  return k;
}

Result<Kernels> ChooseKernels(const CpuFeatures& cpu, std::string_view forced) {
  if (!forced.empty()) {
    const std::optional<CpuLevel> level = ParseCpuLevel(forced);
    if (!level.has_value()) {
      std::string all;
      for (CpuLevel l : AllCpuLevels())
        all += std::string(all.empty() ? "" : ", ") + std::string(CpuLevelName(l));
      return InvalidArgument("LOCKSTEP_CPU='" + std::string(forced) + "' names no CPU level (levels: " + all +
                             ")");
    }
    Result<Kernels> k = KernelsForLevel(*level, cpu);
    if (!k.ok()) return InvalidArgument("LOCKSTEP_CPU=" + std::string(forced) + ": " + k.status().message());
    return k;
  }
  Result<Kernels> k = KernelsForLevel(BestCpuLevel(cpu), cpu);
  if (!k.ok() && BestCpuLevel(cpu) == CpuLevel::kAmx) {  // the tiles' self-check failed: the VNNI kernels
    std::fprintf(stderr, "lockstep: %s; using avx512-vnni\n", k.status().ToString().c_str());
    return KernelsForLevel(CpuLevel::kAvx512Vnni, cpu);
  }
  return k;
}

Result<Kernels> ChooseKernelsForThisCpu() {
  const char* forced = std::getenv("LOCKSTEP_CPU");
  return ChooseKernels(ProbeCpuFeatures(), forced != nullptr ? forced : "");
}

}  // namespace lockstep
