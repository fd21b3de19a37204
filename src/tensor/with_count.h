// WithCount<kMax>(n, f): calls f(std::integral_constant<int, n>{}) for a run-time n in [1, kMax] (nothing
// otherwise). The attention kernels take their query and chunk counts as template arguments, which size their
// accumulator arrays; this turns a count known at run time into one of those instantiations.
#pragma once

#include <type_traits>
#include <utility>

namespace lockstep {

template <int kMax, typename F>
inline void WithCount(int n, const F& f) {
  [&]<int... k>(std::integer_sequence<int, k...>) {
    ((n == k + 1 ? (f(std::integral_constant<int, k + 1>{}), 0) : 0), ...);
  }
  (std::make_integer_sequence<int, kMax>{});
}

}  // namespace lockstep
