// Large, long-lived buffers (packed weights, the KV pool): from 2 MiB up they are 2 MiB aligned and advised
// for transparent huge pages, so that touching hundreds of MiB costs few page faults and, when read in
// strided runs (KV blocks hold every layer), few TLB misses. Smaller ones are 64-byte aligned. Thread-safe.
#pragma once

#include <cstddef>

namespace lockstep {

// Returns nullptr when the memory cannot be had. Contents uninitialized; free with FreeLarge.
void* AllocateLarge(size_t bytes);
void FreeLarge(void* p);

}  // namespace lockstep
