// Gemma 4's value syntax, as its chat template's format_argument macro writes a tool call's arguments:
// strings between <|"|> marks (no escapes), None for null, numbers and booleans as JSON's, objects with bare
// keys sorted as Jinja's dictsort sorts them (case-insensitively), no whitespace. Used by the JSON schema
// converter's Gemma 4 syntax (grammar/json_schema.h) for keys and constants. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lockstep::grammar {

inline constexpr std::string_view kGemma4Quote = "<|\"|>";

// `value` as Gemma 4's template writes an argument.
std::string Gemma4ValueText(const nlohmann::ordered_json& value);
// A key's text: bare where it is an identifier (as the template writes it), else quoted so that a parser
// reads it whole.
std::string Gemma4KeyText(const std::string& key);
// What keys sort by (dictsort's case-insensitive order).
std::string Gemma4KeyOrder(const std::string& key);

}  // namespace lockstep::grammar
