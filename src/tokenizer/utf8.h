// UTF-8 helpers for the tokenizer: validation, code point iteration, and replacement of invalid sequences by
// U+FFFD (one per maximal invalid subpart, as the WHATWG / Unicode "best practice" rule says). Pure
// functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::utf8 {

inline constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Byte offset of the first invalid byte in `text`, or npos when all of it is valid UTF-8
// (no overlongs, no surrogates, nothing above U+10FFFF, nothing truncated at the end).
size_t FindInvalid(std::string_view text);

// Length in bytes of the UTF-8 sequence starting with lead byte `c` (1 for continuation/invalid bytes).
inline size_t SequenceLength(unsigned char c) {
  if (c < 0xC0) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  if (c < 0xF8) return 4;
  return 1;
}

// Decodes the code point at text[*pos] (text must be valid UTF-8) and advances *pos.
uint32_t DecodeAt(std::string_view text, size_t* pos);
// Appends the UTF-8 encoding of `cp`.
void Append(uint32_t cp, std::string* out);

// Appends to *out the valid UTF-8 prefix of `bytes` with every invalid subpart replaced by U+FFFD and returns
// how many bytes were consumed. When `final` is false, a trailing sequence that is incomplete but could still
// become valid is left unconsumed (the caller keeps it for more bytes); when true it becomes one U+FFFD.
// Prefix-stable: consuming in pieces gives the same text as consuming all at once.
size_t ConsumeValid(std::string_view bytes, bool final, std::string* out);

// The whole of `bytes` as valid UTF-8 (ConsumeValid with final = true).
std::string Sanitize(std::string_view bytes);

}  // namespace lockstep::utf8
