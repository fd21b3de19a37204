// Range checks for numeric command-line flags. CheckFlagRange(v, "--top-p", 1e-6, 1, "above 0 and at most 1")
// is OK for a finite v in [lo, hi], else an InvalidArgument naming the flag, the allowed range and the value
// given ("--top-p must be above 0 and at most 1, got 2"). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "base/status.h"

namespace lockstep {

Status CheckFlagRange(double value, std::string_view flag, double lo, double hi, std::string_view allowed);

// An unset flag passes.
template <typename T>
Status CheckFlagRange(const std::optional<T>& value, std::string_view flag, double lo, double hi,
                      std::string_view allowed) {
  return value ? CheckFlagRange(static_cast<double>(*value), flag, lo, hi, allowed) : Status::Ok();
}

}  // namespace lockstep
