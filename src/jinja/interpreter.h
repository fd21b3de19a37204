// Renders a parsed jinja::Template with a context (a dict of variables) on top of the built-in globals.
// Re-entrant: each call has its own scopes; the template is only read. Errors (raise_exception, type errors,
// unknown filters) come back as a Status naming the template line.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "jinja/ast.h"
#include "jinja/value.h"

namespace lockstep::jinja {

// Every expression, block and loop iteration counts against a budget of `max_steps`, so loops inside loops
// end with an error rather than running for hours. A message takes ~50 steps in common templates; the default
// renders any real conversation (the fuzz target passes a smaller one to keep each input fast).
inline constexpr int64_t kMaxRenderSteps = 1'000'000;

Result<std::string> Render(const Template& tmpl, const Value& context, int64_t max_steps = kMaxRenderSteps);

}  // namespace lockstep::jinja
