// Test helpers: the kernel tables of every CPU level this machine runs (tests compare levels bit for bit),
// and the table of the best one. LOCKSTEP_CPU does not restrict them: tests run every level there is.
#pragma once

#include <gtest/gtest.h>

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
