// Whether this process can run Intel AMX tile instructions (Advanced Matrix Extensions: Sapphire Rapids and
// later Xeons). Three conditions: the CPU reports AMX-TILE and AMX-INT8 (CPUID leaf 7) and the AVX-512
// subsets (F, BW, DQ, VL) the AMX kernels' epilogues use; and Linux grants the process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16 or later; without it the first tile instruction raises
// SIGILL). Pure queries except RequestAmxTilePermission, which changes the process's state once; all are
// thread-safe. x86-64 Linux only; elsewhere they report false.
#pragma once

namespace lockstep {

// CPUID: AMX-TILE, AMX-INT8, AVX512F/BW/DQ/VL.
bool CpuHasAmxInt8();
// Asks Linux for permission to use the tile data state in this process (every thread, present and future).
// True if granted (or granted before).
bool RequestAmxTilePermission();

}  // namespace lockstep
