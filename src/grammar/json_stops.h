// The texts that JSON values inside a tool call must not hold as written, because the call's parser searches
// for them before it reads the values (grammar/json_schema.h JsonSchemaRules `stops`): each one's first
// character must never appear in JSON outside a string nor inside an escape (no letter, digit, quote,
// backslash, bracket, separator or sign: '<' in every tag there is), so that JSON text holds a stop only
// inside a string and writing that character as a \u escape there keeps every stop out. Pure functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::grammar {

// The stops' first characters. Checks (LOCKSTEP_CHECK: the stops are the server's own constants) that each
// is such a character, in the Basic Multilingual Plane, and that no stop holds a quote, a backslash or a
// control character.
std::set<uint32_t> StopFirsts(const std::vector<std::string>& stops);

// JSON text with every code point of `escaped` written as a \uXXXX escape (inside its strings, where alone
// such characters can be).
std::string EscapeCodepoints(std::string_view json, const std::set<uint32_t>& escaped);

// The code points as a GBNF character-class body.
std::string ClassBody(const std::set<uint32_t>& codepoints);

}  // namespace lockstep::grammar
