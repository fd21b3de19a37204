// JSON Schema -> GBNF: the subset OpenAI's strict mode and common clients (pydantic, zod) emit. Generated
// text is compact JSON with optional whitespace between tokens (none, a space, or a newline and up to 20
// spaces/tabs), properties in the schema's order.
//
// Supported: type (one or a list; "nullable": true), object (properties, required, additionalProperties
// false / true / a schema; absent means none when `properties` is given, any otherwise), array (items,
// prefixItems, minItems, maxItems), string (enum, const, pattern via grammar/regex_to_gbnf.h, minLength,
// maxLength, format date | time | date-time | uuid), number / integer (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum; exact, grammar/number_range.h), boolean, null, enum / const of any JSON value, anyOf /
// oneOf (any branch: exclusivity is not enforced), allOf of objects (merged), $ref to "#..." JSON pointers
// ($defs, definitions, recursion). Annotations (title, description, default, examples, $schema, $id,
// $comment, deprecated, readOnly, writeOnly, discriminator, x-*) are ignored.
// Anything else is InvalidArgument naming the keyword and where it is ("JSON schema keyword 'uniqueItems'
// at /properties/tags is not supported"), so no request silently gets output its schema does not describe.
// Gemma 4's value syntax (ValueSyntax::kGemma4, its tool calls' arguments) is generated from the same schema
// walk: strings as <|"|>text<|"|> (no escapes, never containing <|"|>; length-bounded ones without '<'),
// null as None, object keys bare where they are identifiers (else quoted), sorted as its template's
// dictsort sorts them (case-insensitively), no whitespace; additionalProperties beside listed properties
// may repeat a listed key.
// Subschemas (and $ref chains) nest at most kMaxSchemaDepth deep and the schema's JSON at most
// kMaxSchemaJsonDepth levels: the converter recurses per level (and copies values, which recurses too), and
// a schema sent as a JSON string escapes the server's limit on body nesting. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace lockstep::grammar {

inline constexpr int kMaxSchemaDepth = 100;
inline constexpr int kMaxSchemaJsonDepth = 256;

enum class ValueSyntax { kJson, kGemma4 };

// GBNF text whose `root` produces JSON valid against `schema`.
Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema);
// Rules that can be put beside others in one grammar: every name starts with `prefix` (which must not be
// empty), and rule `root` produces a value valid against `schema` in `syntax`. `stops` (JSON syntax only):
// texts that no string or key holds as written, for values inside a tool call whose parser searches for
// them (each '<'-led: its first character never appears in JSON outside strings nor in an escape). Strings
// keep any value: a stop's first character may be written as a \u escape, and must be so in constants,
// keys, patterns and length-bounded strings; unbounded strings hold it raw, only not starting a stop.
struct SchemaRules {
  std::string gbnf;
  std::string root;
};
Result<SchemaRules> JsonSchemaRules(const nlohmann::ordered_json& schema, ValueSyntax syntax,
                                    const std::string& prefix, const std::vector<std::string>& stops = {});

// GBNF text whose root is any JSON object (OpenAI's {"type": "json_object"}).
std::string JsonObjectGbnf();

}  // namespace lockstep::grammar
