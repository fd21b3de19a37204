// The Python list methods that change a list in place (append, insert, extend, pop), for templates that build
// a list as they render (Kimi K2's queue of tool-call ids: `ns.ids.append(id)` ... `ns.ids.pop(0)`). Python's
// Jinja2 runs them outside Hugging Face's immutable sandbox; llama.cpp's minja runs them too.
//
// What keeps a hostile template (jinja/value.h) bounded: only strings, numbers, booleans and none may be
// added, so no list comes to contain itself or to nest deeper than when it was made; and the bytes one
// rendering adds this way are counted against `added_bytes`, an Error past Value::kMaxStringBytes.
// Not thread-safe (a render's own values). Errors are thrown as jinja::Error.
#pragma once

#include <cstddef>
#include <string>

#include "jinja/value.h"

namespace lockstep::jinja {

// True for the names this file handles.
bool IsListMethod(const std::string& name);
// `list.name(args)`; append / insert / extend return none, pop the removed item. `added_bytes` is the
// rendering's running count.
Value CallListMethod(const Value& list, const std::string& name, const CallArgs& args, size_t& added_bytes);

}  // namespace lockstep::jinja
