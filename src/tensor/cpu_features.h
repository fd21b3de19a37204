// What this CPU (and the OS) let the process run, probed in one place: ProbeCpuFeatures() reads CPUID and
// XGETBV on x86-64, the auxiliary vector's HWCAP bits on aarch64 Linux. The kernel table (tensor/kernels.h)
// is chosen from the result; nothing else in lockstep asks the CPU.
//
// Thread-safe. ProbeCpuFeatures is a pure query except for AMX: on x86-64 Linux it asks the kernel for the
// tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, once per process, idempotent) and reports amx_int8 only
// if that was granted — a tile instruction without it raises SIGILL.
#pragma once

namespace lockstep {

struct CpuFeatures {
  // x86-64 (all false elsewhere). Each AVX-512 flag also means the OS saves the zmm/opmask state.
  bool avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vnni = false;
  // The rest of the group Highway's AVX3_DL target compiles for (VBMI, VBMI2, VAES, VPCLMULQDQ, BITALG,
  // VPOPCNTDQ, GFNI): the avx512-vnni level runs Highway's AVX3_DL code, so it needs all of them.
  bool avx512_dl_group = false;
  bool avx_vnni = false;  // VEX-encoded VPDPBUSD on ymm (Alder Lake, Sapphire Rapids, Zen 5)
  bool amx_int8 = false;  // AMX-TILE + AMX-INT8, and the tile state granted by Linux
  // aarch64 (all false elsewhere).
  bool neon = false;
  bool dotprod = false;  // SDOT/UDOT (Armv8.2 DotProd)
  bool i8mm = false;     // SMMLA/UMMLA/USDOT (Armv8.6 I8MM)
};

CpuFeatures ProbeCpuFeatures();

}  // namespace lockstep
