// CPU levels: the sets of kernels lockstep has (tensor/kernels.h builds one table per level). The best level
// a CPU runs is chosen by default; LOCKSTEP_CPU=<name> forces one (for tests, and for measuring a smaller
// CPU's level on a bigger one). Every level computes bit-identical results (the canonical orders of
// tensor/matmul_internal.h and tensor/attention_kernels.h), so forcing one changes speed, never tokens.
//   scalar        portable C++ (Highway's EMU128 target for the int8 products); every build
//   avx2          AVX2 + FMA + F16C: VPMADDUBSW/VPMADDWD int8 products (Zen 2/3, Haswell .. Comet Lake)
//   avx2-vnni     avx2 with VEX VPDPBUSD on ymm (Alder Lake and later client chips without AVX-512)
//   avx512        AVX-512 F/BW/DQ/VL (Skylake-X, Cascade Lake without the rest)
//   avx512-vnni   AVX-512 with VNNI and the rest of Highway's AVX3_DL group (Ice Lake, Zen 4, Zen 5)
//   amx           avx512-vnni plus AMX-INT8 tiles for products of many rows (Sapphire Rapids and later)
//   neon          aarch64 Advanced SIMD
//   neon-dotprod  neon with SDOT/UDOT (Cortex-A76/Neoverse N1 and later)
//   neon-i8mm     neon-dotprod with SMMLA (Neoverse V1/N2, Apple M2, Cortex-A710 and later)
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/cpu_features.h"

namespace lockstep {

enum class CpuLevel { kScalar, kAvx2, kAvx2Vnni, kAvx512, kAvx512Vnni, kAmx, kNeon, kNeonDotprod, kNeonI8mm };

// Every level, in the order above.
std::span<const CpuLevel> AllCpuLevels();
std::string_view CpuLevelName(CpuLevel level);
// The level named `name` (as CpuLevelName writes it), or nothing.
std::optional<CpuLevel> ParseCpuLevel(std::string_view name);
// Whether this binary has the level's kernels (x86 levels in x86-64 builds, NEON levels in aarch64 builds,
// scalar in all) and `cpu` has every feature they use.
bool CpuRunsLevel(const CpuFeatures& cpu, CpuLevel level);
// The levels CpuRunsLevel accepts, in the order above (always includes scalar).
std::vector<CpuLevel> RunnableCpuLevels(const CpuFeatures& cpu);
// The level used unless LOCKSTEP_CPU forces one: the last of RunnableCpuLevels (on AMX CPUs `amx`, whose
// tiles serve the products of 16 or more rows of the types where they beat avx512-vnni: docs/kernels.md).
CpuLevel BestCpuLevel(const CpuFeatures& cpu);
// "avx2, avx2-vnni, ..." for messages.
std::string CpuLevelList(const std::vector<CpuLevel>& levels);

}  // namespace lockstep
