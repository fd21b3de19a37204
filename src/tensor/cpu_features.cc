#include "tensor/cpu_features.h"

#include "tensor/amx_support.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace lockstep {

CpuFeatures ProbeCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__)
  // libgcc's table also checks XCR0, so the AVX and AVX-512 flags mean the OS saves that state too.
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // F16C, VAES and VPCLMULQDQ from CPUID itself (clang 14's __builtin_cpu_supports has no names for them):
  // leaf 1 ECX bit 29; leaf 7 ECX bits 9 and 10. Their state (ymm, zmm) is the one avx2 / avx512f confirm.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && ((ecx >> 29) & 1);
  const bool leaf7 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0;
  const bool vaes = leaf7 && ((ecx >> 9) & 1), vpclmulqdq = leaf7 && ((ecx >> 10) & 1);
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512_dl_group = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2") && vaes &&
                      vpclmulqdq && __builtin_cpu_supports("avx512bitalg") &&
                      __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("gfni");
  // AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4 (GCC 12's __builtin_cpu_supports has no name for it); it
  // uses the ymm state, which f.avx2 already confirmed the OS saves.
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0) f.avx_vnni = f.avx2 && ((eax >> 4) & 1);
  f.amx_int8 = CpuHasAmxInt8() && RequestAmxTilePermission();
#elif defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is mandatory on aarch64
#if defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  f.dotprod = (hwcap & HWCAP_ASIMDDP) != 0;
#ifdef HWCAP2_I8MM
  f.i8mm = (hwcap2 & HWCAP2_I8MM) != 0;
#else
  f.i8mm = (hwcap2 & (1UL << 13)) != 0;  // HWCAP2_I8MM in Linux 5.10+ headers
#endif
#endif
#endif
  return f;
}

}  // namespace lockstep
