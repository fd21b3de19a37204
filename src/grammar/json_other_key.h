// The keys additionalProperties may add beside an object's listed properties (grammar/json_schema.cc): a
// JSON string that is none of the listed keys, as GBNF. A walk down the trie of the keys' code points that
// leaves it somewhere: a different character, or the string's end before a key's end. Keys that need JSON
// escaping (control characters, quote, backslash, DEL) are not supported. Code points in `firsts` (the
// stops' first characters, grammar/json_stops.h) are written only as \u escapes, as in every other string
// the converter writes. Pure apart from the rules it adds to the builder.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "grammar/gbnf_builder.h"

namespace lockstep::grammar {

// The expression for such a key after its opening quote, its closing quote included; the trie's rules are
// added to `b` under `name` + "-other-key". `char_rule` and `unicode_escape_rule`: the names of the JSON
// string character and \u escape rules. nullopt when a key needs escaping; `keys` must not be empty.
std::optional<std::string> OtherKeyExpr(const std::set<std::string>& keys, const std::string& name,
                                        const std::string& char_rule, const std::string& unicode_escape_rule,
                                        const std::set<uint32_t>& firsts, GbnfBuilder& b);

}  // namespace lockstep::grammar
