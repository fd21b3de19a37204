// The constant text of the JSON schema converter (grammar/json_schema.cc): the keywords it understands, the
// annotations it ignores, and the GBNF rules of JSON's primitives and of the string formats it supports.
// constexpr data (no static initialisation, nothing to destroy), looked up linearly: the tables are short
// and read once per schema keyword. Thread-safe (immutable).
#pragma once

#include <algorithm>
#include <span>
#include <string_view>

namespace lockstep::grammar {

inline constexpr std::string_view kSchemaAnnotations[] = {
    "title", "description", "default",    "examples",         "example",         "$schema",
    "$id",   "$comment",    "deprecated", "readOnly",         "writeOnly",       "discriminator",
    "$defs", "definitions", "$anchor",    "contentMediaType", "contentEncoding", "strict"};
inline constexpr std::string_view kSchemaKeywords[] = {"type",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "items",
                                                       "prefixItems",
                                                       "minItems",
                                                       "maxItems",
                                                       "enum",
                                                       "const",
                                                       "pattern",
                                                       "format",
                                                       "minLength",
                                                       "maxLength",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "nullable"};

// A GBNF rule: its name and the text of its body.
struct NamedRule {
  std::string_view name, body;
};

// Primitive rules, added on first use (names as GbnfBuilder gave them).
inline constexpr NamedRule kPrimitiveRules[] = {
    {"space", R"(| " " | "\n" [ \t]{0,20})"},
    {"boolean", R"(("true" | "false") space)"},
    {"null", R"("null" space)"},
    // Escapes: \uXXXX outside the surrogates, or a high and a low surrogate as a pair (strict parsers
    // reject lone surrogates).
    {"char", R"([^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" unicode-escape))"},
    {"unicode-escape",
     R"([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2})"},
    {"string", R"("\"" char* "\"" space)"},
    {"integral-part", R"([0] | [1-9] [0-9]{0,15})"},
    {"integer", R"("-"? integral-part space)"},
    // Exponents up to 99: every such number fits a double.
    {"number", R"("-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? space)"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"object", R"("{" space ( string ":" space value ( "," space string ":" space value )* )? "}" space)"},
    {"array", R"("[" space ( value ( "," space value )* )? "]" space)"},
};

// Gemma 4's values (its chat template's format_argument): strings between <|"|> marks with no escapes,
// None for null, object keys bare (or quoted as strings), no whitespace; numbers and booleans as JSON's. The
// string rule is generated (GbnfBuilder::AddTextWithout), not listed here.
inline constexpr NamedRule kGemma4PrimitiveRules[] = {
    {"space", R"("")"},
    {"boolean", R"(("true" | "false") space)"},
    {"null", R"("None" space)"},
    // Length-bounded strings leave out '<' (so no <|"|> can appear inside).
    {"char", R"([^<])"},
    {"integral-part", R"([0] | [1-9] [0-9]{0,15})"},
    {"integer", R"("-"? integral-part space)"},
    {"number", R"("-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? space)"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"key", R"([a-zA-Z_] [a-zA-Z0-9_]{0,63} | string)"},
    {"object", R"("{" space ( key ":" space value ( "," space key ":" space value )* )? "}" space)"},
    {"array", R"("[" space ( value ( "," space value )* )? "]" space)"},
};

// The string formats (`format`) the converter supports: the body between a string's quotes.
inline constexpr NamedRule kFormatRules[] = {
    {"date",
     R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))"},
    {"time",
     R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))"},
    {"uuid",
     R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
};

inline bool IsOneOf(std::span<const std::string_view> words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// The body of rule `name` in `rules`; null if there is none.
inline const std::string_view* FindRule(std::span<const NamedRule> rules, std::string_view name) {
  for (const NamedRule& rule : rules) {
    if (rule.name == name) return &rule.body;
  }
  return nullptr;
}

}  // namespace lockstep::grammar
