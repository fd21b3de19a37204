// The kernel table and its levels: names, which features each level needs, forcing a level (and the errors
// for unknown or unavailable ones), complete tables for every level this machine runs, and the probe's
// agreement with Highway on the AVX-512 groups whose code the x86 levels run.
#include "tensor/kernels.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hwy/targets.h"
#include "tensor/cpu_features.h"
#include "tensor/cpu_level.h"
#include "tensor/matmul_kernels.h"
#include "testing/levels.h"

namespace lockstep {
namespace {

TEST(CpuLevel, NamesRoundTripAndUnknownNamesDoNot) {
  for (CpuLevel level : AllCpuLevels()) EXPECT_EQ(ParseCpuLevel(CpuLevelName(level)), level);
  EXPECT_EQ(ParseCpuLevel("avx512-vnni"), CpuLevel::kAvx512Vnni);
  EXPECT_FALSE(ParseCpuLevel("AVX2").has_value());
  EXPECT_FALSE(ParseCpuLevel("").has_value());
  EXPECT_FALSE(ParseCpuLevel("sse4").has_value());
}

TEST(CpuLevel, ScalarRunsEverywhereAndTheBestIsTheLastRunnable) {
  const CpuFeatures none;
  EXPECT_EQ(RunnableCpuLevels(none), std::vector<CpuLevel>{CpuLevel::kScalar});
  EXPECT_EQ(BestCpuLevel(none), CpuLevel::kScalar);
  const CpuFeatures cpu = ProbeCpuFeatures();
  EXPECT_EQ(BestCpuLevel(cpu), RunnableCpuLevels(cpu).back());
}

#if defined(__x86_64__)
CpuFeatures Avx2Only() {  // a Zen 3
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = f.bmi2 = true;
  return f;
}

TEST(CpuLevel, X86LevelsNeedTheirFeatures) {
  CpuFeatures f = Avx2Only();
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, avx2");
  f.avx_vnni = true;  // Alder Lake
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, avx2, avx2-vnni");
  f.avx_vnni = false;
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = true;  // Skylake-X
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, avx2, avx512");
  f.avx512vnni = true;  // Cascade Lake: VNNI without the rest of the AVX3_DL group
  EXPECT_EQ(BestCpuLevel(f), CpuLevel::kAvx512);
  f.avx512_dl_group = true;  // Ice Lake, Zen 4
  EXPECT_EQ(BestCpuLevel(f), CpuLevel::kAvx512Vnni);
  f.amx_int8 = true;
  f.avx_vnni = true;  // Sapphire Rapids
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, avx2, avx2-vnni, avx512, avx512-vnni, amx");
  EXPECT_EQ(BestCpuLevel(f), CpuLevel::kAmx);
  f.fma = false;  // no FMA: none of the SIMD levels
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar");
  for (CpuLevel arm : {CpuLevel::kNeon, CpuLevel::kNeonDotprod, CpuLevel::kNeonI8mm}) {
    EXPECT_FALSE(CpuRunsLevel(f, arm)) << CpuLevelName(arm);
  }
}

TEST(CpuFeatures, TheProbeAgreesWithHighwayOnTheAvx512Groups) {
  const CpuFeatures cpu = ProbeCpuFeatures();
  const int64_t targets = hwy::SupportedTargets();
  EXPECT_EQ(CpuRunsLevel(cpu, CpuLevel::kAvx512), (targets & HWY_AVX3) != 0);
  EXPECT_EQ(CpuRunsLevel(cpu, CpuLevel::kAvx512Vnni), (targets & HWY_AVX3_DL) != 0);
  EXPECT_EQ(CpuRunsLevel(cpu, CpuLevel::kAvx2), (targets & HWY_AVX2) != 0);
}

TEST(Kernels, ForcingAnUnavailableLevelIsAnErrorNamingTheRunnableOnes) {
  const Result<Kernels> k = ChooseKernels(Avx2Only(), "avx512");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("LOCKSTEP_CPU=avx512"), std::string::npos) << k.status().message();
  EXPECT_NE(k.status().message().find("scalar, avx2"), std::string::npos) << k.status().message();
  const Result<Kernels> arm = ChooseKernels(Avx2Only(), "neon-i8mm");
  EXPECT_FALSE(arm.ok());
  const Result<Kernels> avx2 = ChooseKernels(Avx2Only(), "avx2");
  ASSERT_TRUE(avx2.ok()) << avx2.status().ToString();
  EXPECT_EQ(avx2->level, CpuLevel::kAvx2);
  EXPECT_EQ(ChooseKernels(Avx2Only(), "")->level, CpuLevel::kAvx2);
}
#endif

#if defined(__aarch64__)
TEST(CpuLevel, ArmLevelsNeedTheirFeaturesAndHaveTheirOwnProducts) {
  CpuFeatures f;
  f.neon = true;  // Cortex-A53/A72
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, neon");
  f.i8mm = true;  // never without dotprod in practice; the i8mm level uses both
  EXPECT_EQ(BestCpuLevel(f), CpuLevel::kNeon);
  f.i8mm = false;
  f.dotprod = true;  // Cortex-A76, Neoverse N1
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, neon, neon-dotprod");
  f.i8mm = true;  // Neoverse V1/N2
  EXPECT_EQ(CpuLevelList(RunnableCpuLevels(f)), "scalar, neon, neon-dotprod, neon-i8mm");
  for (CpuLevel x86 : {CpuLevel::kAvx2, CpuLevel::kAvx512Vnni, CpuLevel::kAmx})
    EXPECT_FALSE(CpuRunsLevel(f, x86));
  // Each ARM level runs its own packed products (so the matmul tests compare each with the reference).
  MatMulKernels neon, dotprod, i8mm;
  ASSERT_TRUE(GetMatMulKernels(CpuLevel::kNeon, &neon));
  ASSERT_TRUE(GetMatMulKernels(CpuLevel::kNeonDotprod, &dotprod));
  ASSERT_TRUE(GetMatMulKernels(CpuLevel::kNeonI8mm, &i8mm));
  for (int i = 0; i < kQuantWeightTypes; ++i) {
    EXPECT_NE(neon.packed_tile[i], dotprod.packed_tile[i]);
    EXPECT_NE(dotprod.packed_tile[i], i8mm.packed_tile[i]);
  }
}

// Under qemu-aarch64 (scripts/check_arm64.sh sets QEMU_CPU, which the emulated process sees too) the probe
// finds the emulated CPU's extensions, so the levels the tests run are the ones the script means to cover.
TEST(CpuFeatures, TheProbeSeesTheEmulatedCpu) {
  const char* qemu_cpu = std::getenv("QEMU_CPU");
  if (qemu_cpu == nullptr) GTEST_SKIP() << "not under qemu-aarch64 with QEMU_CPU set";
  const std::string cpu = qemu_cpu;
  const CpuFeatures f = ProbeCpuFeatures();
  if (cpu == "max") {
    EXPECT_TRUE(f.dotprod && f.i8mm);
    EXPECT_EQ(BestCpuLevel(f), CpuLevel::kNeonI8mm);
  } else if (cpu == "cortex-a76" || cpu == "neoverse-n1") {
    EXPECT_TRUE(f.dotprod && !f.i8mm);
    EXPECT_EQ(BestCpuLevel(f), CpuLevel::kNeonDotprod);
  } else if (cpu == "cortex-a53" || cpu == "cortex-a57" || cpu == "cortex-a72") {
    EXPECT_TRUE(!f.dotprod && !f.i8mm);
    EXPECT_EQ(BestCpuLevel(f), CpuLevel::kNeon);
  }
}
#endif

TEST(Kernels, AnUnknownLevelNameIsAnErrorListingTheLevels) {
  const Result<Kernels> k = ChooseKernels(ProbeCpuFeatures(), "avx1024");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("'avx1024' names no CPU level"), std::string::npos);
  EXPECT_NE(k.status().message().find("neon-dotprod"), std::string::npos);
}

TEST(Kernels, EveryRunnableLevelHasACompleteTable) {
  const CpuFeatures cpu = ProbeCpuFeatures();
  for (const Kernels& k : testing::RunnableKernels()) {
    SCOPED_TRACE(testing::LevelName(k));
    EXPECT_TRUE(ChooseKernels(cpu, k.name()).ok());
    const MatMulKernels& m = k.matmul;
    EXPECT_NE(m.quantize, nullptr);
    for (TileFn f : m.float_tile) EXPECT_NE(f, nullptr);
    for (TileFn f : m.quant_tile) EXPECT_NE(f, nullptr);
    for (TileFn f : m.packed_tile) EXPECT_NE(f, nullptr);
    for (int64_t n : m.packed_task_outputs) EXPECT_TRUE(n > 0 && n % 16 == 0) << n;
    bool any_many_rows = false;
    for (ScratchTileFn f : m.many_rows_tile) any_many_rows = any_many_rows || f != nullptr;
    EXPECT_EQ(any_many_rows, k.level == CpuLevel::kAmx);
    if (any_many_rows) {
      EXPECT_TRUE(m.many_rows > 0 && m.many_rows_scratch > 0);
    }
    const AttentionKernels& a = k.attention;
    EXPECT_EQ(a.level, attention::AttentionLevelFor(k.level));
    EXPECT_TRUE(a.dot_keys && a.accumulate_values && a.softmax && a.partition_weights);
    EXPECT_EQ(a.decode_row != nullptr, a.level != attention::KernelLevel::kScalar);
    const ElementwiseKernels& e = k.elementwise;
    EXPECT_TRUE(e.swiglu && e.geglu && e.rms_norm && e.rope);
  }
}

TEST(Kernels, TheDefaultIsTheBestRunnableLevel) {
  const CpuFeatures cpu = ProbeCpuFeatures();
  const Result<Kernels> k = ChooseKernels(cpu, "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->level, BestCpuLevel(cpu));
}

}  // namespace
}  // namespace lockstep
