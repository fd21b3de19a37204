#include "base/large_allocation.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace lockstep {

void* AllocateLarge(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t align = bytes >= kHuge ? kHuge : 64;
  const size_t rounded = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
#ifdef MADV_HUGEPAGE
  if (p != nullptr && align == kHuge) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}

void FreeLarge(void* p) { std::free(p); }

}  // namespace lockstep
