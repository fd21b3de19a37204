// Software prefetch of a byte range: asks for the cache lines of [p + begin, p + end), 64 bytes apart. For
// reads the hardware prefetcher does not foresee (the next packed weight unit, the next KV block elsewhere in
// memory). A hint only: results do not change.
// Always inlined: GCC judges a function whose only effect is prefetching side-effect free and may delete
// calls to it (GCC 12 dropped every prefetch of the float matmul tiles when the call went through another
// inline helper).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

inline __attribute__((always_inline)) void PrefetchBytes(const std::byte* p, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; o += 64) __builtin_prefetch(p + o);
}

}  // namespace lockstep
