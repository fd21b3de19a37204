#include "base/flag_range.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace lockstep {

Status CheckFlagRange(double value, std::string_view flag, double lo, double hi, std::string_view allowed) {
  if (std::isfinite(value) && value >= lo && value <= hi) return Status::Ok();
  char shown[32];
  std::snprintf(shown, sizeof(shown), "%g", value);
  return InvalidArgument(std::string(flag) + " must be " + std::string(allowed) + ", got " + shown);
}

}  // namespace lockstep
