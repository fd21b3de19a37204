// Regular expression -> GBNF expression, for TGI's {"type": "regex"} grammar and JSON schema "pattern".
// The pattern must match the whole text: a leading ^ and a trailing $ are accepted and mean nothing more.
//
// Supported (ECMAScript / PCRE common subset): literals, escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{H...},
// escaped punctuation), classes [a-z] [^...] with \d \w \s \D \W \S inside or outside, ., alternation,
// groups ( ) (?: ) (?<name> ) (?P<name> ), quantifiers * + ? {n} {n,} {n,m} (lazy forms mean the same
// language here). `.` excludes line terminators; \s produces ASCII whitespace only (\S excludes every
// ECMAScript whitespace), so what the grammar produces always matches the pattern.
// Stacked quantifiers (`a**`, which ECMAScript rejects) are accepted, as before, and collapsed where the
// language stays the same: `X**` `(X*)*` `(X+)*` `(X?){3}` `X{1,3}*` become one repetition, adjacent `X*X*`
// `X?X{2}` merge into one; `(X{2})*` (even counts) stays nested. So a pattern of a thousand `*` costs what
// `X*` costs. Rejected with InvalidArgument naming the construct and its offset: backreferences, lookaround,
// \b \B, \p{...}, anchors inside the pattern, possessive quantifiers, unbalanced parentheses or brackets,
// groups nested more than kMaxRegexNesting deep (the parser recurses per level; 10^5 levels overflowed an
// 8 MiB stack; real patterns nest a few levels).
//
// json_string: produce the text as it appears inside a JSON string (", \ and control characters escaped),
// for patterns on JSON schema strings; `escaped`: code points it then writes only as \u escapes too (BMP),
// or, in raw text, leaves out of classes (a pattern that spells one literally is InvalidArgument).
// Pure function.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "base/status.h"

namespace lockstep::grammar {

inline constexpr int kMaxRegexNesting = 100;

Result<std::string> RegexToGbnf(std::string_view pattern, bool json_string,
                                const std::set<uint32_t>& escaped = {});

}  // namespace lockstep::grammar
