// Software prefetch of a byte range: asks for the cache lines of [p + begin, p + end), 64 bytes apart. For
// reads the hardware prefetcher does not foresee (the next packed weight unit, the next KV block elsewhere in
// memory). A hint only: results do not change.
// Always inlined: GCC judges a function whose only effect is prefetching side-effect free and may delete
// calls to it (GCC 12 dropped every prefetch of the float matmul tiles when the call went through another
// inline helper).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lockstep {

inline __attribute__((always_inline)) void PrefetchBytes(const std::byte* p, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; o += 64) __builtin_prefetch(p + o);
}

// One cache line towards the L2 cache (prefetcht1): for data needed later than the data being worked on,
// which keeps the L1.
inline __attribute__((always_inline)) void PrefetchToL2(const std::byte* p) { __builtin_prefetch(p, 0, 2); }

// A range of cache lines to bring towards the L2 cache while computing (PrefetchToL2). Spread(i, steps) asks
// for the i-th of `steps` equal parts of it, so a loop of `steps` iterations issues one or two prefetches per
// iteration instead of a burst that would fill the miss queue.
struct PrefetchLines {
  const std::byte* p = nullptr;
  int64_t lines = 0;
  inline __attribute__((always_inline)) void Spread(int64_t i, int64_t steps) const {
    const int64_t per_step = (lines + steps - 1) / steps;
    for (int64_t l = i * per_step; l < std::min(lines, (i + 1) * per_step); ++l) PrefetchToL2(p + 64 * l);
  }
};

// [p, p + bytes) cut into `slices` consecutive PrefetchLines, one per Take() call (empty past the last).
// For a kernel that works on one block of data many times over (a packed weight group against many row
// tiles) while the next block is still in memory: each pass asks for a slice of the next block, so that the
// pass that reads it first finds it in cache and the memory stream overlaps the arithmetic.
class SlicedPrefetch {
 public:
  SlicedPrefetch() = default;
  SlicedPrefetch(const std::byte* p, int64_t bytes, int64_t slices)
      : p_(p), lines_((bytes + 63) / 64), slices_(slices) {}
  bool active() const { return next_ < slices_; }
  PrefetchLines Take() {
    if (next_ >= slices_) return {};
    const int64_t begin = lines_ * next_ / slices_, end = lines_ * (next_ + 1) / slices_;
    ++next_;
    return {p_ + 64 * begin, end - begin};
  }

 private:
  const std::byte* p_ = nullptr;
  int64_t lines_ = 0, slices_ = 0, next_ = 0;
};

}  // namespace lockstep
