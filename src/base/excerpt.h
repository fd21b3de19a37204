// Excerpt: outside input quoted inside a message (an error naming a bad value), cut to a few bytes, so that
// no message repeats a request's megabytes back to it. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

// `text` whole when it has at most `max_bytes` bytes; else its first max_bytes, cut back to a UTF-8
// character boundary, and "...".
std::string Excerpt(std::string_view text, size_t max_bytes = 60);

}  // namespace lockstep
