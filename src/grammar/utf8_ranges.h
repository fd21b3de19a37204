// Code point ranges -> UTF-8 byte-range sequences: every valid UTF-8 encoding of a code point in [first,
// last] (surrogates excluded) matches exactly one of the returned sequences, each a list of 1-4 inclusive
// byte ranges. The algorithm is the well-known one of RE2 and Rust's regex-syntax (split the range at
// encoding length boundaries and where the continuation bytes stop spanning their full range). Pure
// functions.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace lockstep::grammar {

struct ByteRange {
  uint8_t first = 0;
  uint8_t last = 0;
  bool operator==(const ByteRange&) const = default;
  auto operator<=>(const ByteRange&) const = default;
};
using Utf8Sequence = std::vector<ByteRange>;

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Sorted, merged, surrogate-free ranges of a class (complemented when `negated`).
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated);

// Appends the UTF-8 sequences of `range` (surrogates skipped) to *out, in ascending order.
void Utf8Sequences(CodepointRange range, std::vector<Utf8Sequence>* out);

}  // namespace lockstep::grammar
