// The pieces the tool-call format parsers (tool_calls.cc, tool_call_xml.cc, tool_call_deepseek.cc,
// tool_call_glm.cc, tool_call_kimi.cc) share: scanning JSON values in model output, finding a declared tool,
// and typing a parameter's text by the tool's schema. The model's output is untrusted text: every function
// here is total (no exceptions, no crash) and bounds JSON nesting by kMaxJsonDepth. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server::tool_parts {

bool StartsWith(std::string_view s, std::string_view prefix);
// Past the spaces, newlines, tabs and carriage returns from s[p] on.
size_t SkipSpace(std::string_view s, size_t p);
// `s` without its leading and trailing whitespace.
std::string_view TrimSpace(std::string_view s);

// End of the JSON value starting at s[p] ('{' or '['), by bracket depth outside strings; npos if unclosed.
size_t JsonValueEnd(std::string_view s, size_t p);
// The JSON object starting at s[p] (after whitespace) as compact JSON text, with *end set past it; nullopt
// when no complete, valid object (nesting at most kMaxJsonDepth) starts there.
std::optional<std::string> JsonObjectAt(std::string_view s, size_t p, size_t* end);

// Past `marker` at s[p] and the whitespace after it; p itself at the text's end (an output cut before the
// marker); npos when something else is there.
size_t PastEndMarker(std::string_view s, size_t p, std::string_view marker);

// The index of the tool `name` in spec.names; npos when it is not declared.
size_t ToolIndex(const ToolSpec& spec, std::string_view name);

// The JSON types a tool's parameters schema allows for parameter `key` (properties.KEY.type, a name or a
// list of names; with no `type`, {"string"} for a string `enum` or `const`, as the forced grammar writes
// those as raw text, server/tool_grammar.h); empty when it names none.
std::vector<std::string> ParameterTypes(const nlohmann::ordered_json& parameters, const std::string& key);
// The same for one property's schema (properties.KEY itself).
std::vector<std::string> PropertyTypes(const nlohmann::ordered_json& property);
// Whether the parameters schema declares properties and `key` is not among them.
bool Undeclared(const nlohmann::ordered_json& parameters, const std::string& key);
// A parameter's text as `types` read it: JSON of an allowed non-string type (True / False / None also as
// Python prints them), else the text itself. With no types (an untyped or undeclared parameter, which the
// forced grammar writes as JSON) any JSON, a string included, else the text. `json`: the text is JSON by
// the syntax's own word (DSML's string="false"), so a JSON string is a string where the types allow one.
nlohmann::ordered_json TypedValue(std::string_view text, const std::vector<std::string>& types,
                                  bool json = false);

// How the forced grammar (server/tool_grammar.h) writes a parameter in a key/value syntax (DSML, GLM,
// Qwen3-Coder's XML), so that a parser reads back what it wrote. `raw`: as raw text, for a value that is
// always a string or null (`types` {"string"} or {"string", "null"}, or an untyped string enum / const: the
// types ParameterTypes gives) with no schema combinator; its enum and const hold strings (and null where
// allowed). `nullable` (with `raw_null`, not in DSML, whose string="false" says a value is JSON): null as
// the text null, which the parser reads back as null (as llama.cpp's Qwen3-Coder and GLM-4.5 parsers do).
// Any other value is JSON: a type list mixing string with another type (["string", "integer"]) included,
// whose strings are then JSON strings.
struct ValueForm {
  bool raw = false;
  bool nullable = false;
};
ValueForm KeyValueForm(const nlohmann::ordered_json& property, const std::vector<std::string>& types,
                       bool raw_null);
// A GLM or Qwen3-Coder XML parameter's text typed as the forced grammar writes it: TypedValue, with `json`
// where the grammar writes the parameter as JSON (KeyValueForm's raw false), so a JSON string is a string
// where the types allow one.
nlohmann::ordered_json KeyValueParameter(std::string_view text, const nlohmann::ordered_json& parameters,
                                         const std::string& key);
// Arguments as JSON text; bytes that are not UTF-8 replaced, as JSON text must be.
std::string ArgumentsText(const nlohmann::ordered_json& arguments);

}  // namespace lockstep::server::tool_parts
