// Renders a parsed jinja::Template with a context (a dict of variables) on top of the built-in globals.
// Re-entrant: each call has its own scopes; the template is only read. Errors (raise_exception, type errors,
// unknown filters) come back as a Status naming the template line.
#pragma once

#include <string>

#include "base/status.h"
#include "jinja/ast.h"
#include "jinja/value.h"

namespace lockstep::jinja {

Result<std::string> Render(const Template& tmpl, const Value& context);

}  // namespace lockstep::jinja
