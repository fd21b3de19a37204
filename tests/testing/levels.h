// Test helpers: the kernel tables of every CPU level this machine runs (tests compare levels bit for bit),
// and the table of the best one. LOCKSTEP_CPU does not restrict them: tests run every level there is.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tensor/cpu_features.h"
#include "tensor/cpu_level.h"
#include "tensor/kernels.h"

namespace lockstep::testing {

inline std::vector<Kernels> RunnableKernels() {
  std::vector<Kernels> all;
  const CpuFeatures cpu = ProbeCpuFeatures();
  for (CpuLevel level : RunnableCpuLevels(cpu)) {
    Result<Kernels> k = KernelsForLevel(level, cpu);
    EXPECT_TRUE(k.ok()) << CpuLevelName(level) << ": " << k.status().ToString();
    if (k.ok()) all.push_back(*k);
  }
  return all;
}

// RunnableKernels without levels whose matmul table repeats an earlier one's (same kernels: a level that
// runs another's until its own exist), so the expensive matmul tests run each kernel once.
inline std::vector<Kernels> DistinctMatMulKernels() {
  std::vector<Kernels> distinct;
  for (const Kernels& k : RunnableKernels()) {
    bool seen = false;
    for (const Kernels& d : distinct) {
      seen = seen || std::memcmp(&d.matmul, &k.matmul, sizeof(MatMulKernels)) == 0;
    }
    if (!seen) distinct.push_back(k);
  }
  return distinct;
}

inline const Kernels& BestKernels() {
  static const Kernels best = [] {
    Result<Kernels> k = ChooseKernels(ProbeCpuFeatures(), "");
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? *k : Kernels{};
  }();
  return best;
}

inline std::string LevelName(const Kernels& k) { return std::string(k.name()); }

}  // namespace lockstep::testing
