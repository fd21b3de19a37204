// Test helper: a minimal well-formedness check for the SVG documents the benchmarks write (balanced tags, an
// <svg> root, no raw '&' outside entities).
#pragma once

#include <string>

namespace lockstep::testing {

// "" when well formed, else what is wrong.
std::string CheckSvg(const std::string& svg);

}  // namespace lockstep::testing
