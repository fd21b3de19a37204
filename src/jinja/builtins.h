// Built-in filters, tests, methods and global functions of the Jinja subset (Python/Jinja2 semantics for the
// ones chat templates use). Stateless; thread-safe. Errors are thrown as jinja::Error.
#pragma once

#include <string>

#include "jinja/value.h"

namespace lockstep::jinja {

// `value | name(args)`.
Value ApplyFilter(const std::string& name, const Value& value, const CallArgs& args);
// `value is name(args)`; `defined`/`undefined` included.
bool ApplyTest(const std::string& name, const Value& value, const CallArgs& args);
// True when `value.name(...)` is a built-in method of value's type.
bool HasMethod(const Value& value, const std::string& name);
// `value.name(args)`.
Value CallMethod(const Value& value, const std::string& name, const CallArgs& args);
// Globals every render sees: raise_exception, namespace, range, strftime_now (current UTC time).
Value MakeGlobals();
// Python semantics of the binary operators: + - * / // % ** ~ == != < > <= >= in, "not in".
Value BinaryOp(const std::string& op, const Value& a, const Value& b);
// Python slicing of str and list.
Value Slice(const Value& value, const Value& start, const Value& stop, const Value& step);
// Python indexing: list[int] (negative from the end), str[int], dict[key]; undefined when absent.
Value Index(const Value& value, const Value& index);

}  // namespace lockstep::jinja
