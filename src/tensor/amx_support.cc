#include "tensor/amx_support.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#endif

namespace lockstep {

#if defined(__x86_64__) && defined(__linux__)
namespace {

constexpr int kArchGetXcompPerm = 0x1022;  // arch_prctl codes (asm/prctl.h, Linux 5.16)
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureTileData = 18;  // XSAVE state component of the tile registers

}  // namespace

bool CpuHasAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool amx_tile = (edx >> 24) & 1, amx_int8 = (edx >> 25) & 1;
  __builtin_cpu_init();
  return amx_tile && amx_int8 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

bool RequestAmxTilePermission() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0) return false;
  uint64_t features = 0;  // the kernel writes an unsigned long: the same type on x86-64 Linux
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0) return false;
  return (features >> kXfeatureTileData) & 1;
}

#else

bool CpuHasAmxInt8() { return false; }
bool RequestAmxTilePermission() { return false; }

#endif

}  // namespace lockstep
