// An independent JSON schema validator for the subset grammar/json_schema.h supports, for tests: what the
// generated grammars produce must validate here. Deliberately written differently (direct recursion over
// the value, std::regex for patterns, doubles for bounds) so the two do not share mistakes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lockstep::grammar::testing {

// "" when `value` is valid against `schema` (whose $refs resolve in `root`), else why not.
std::string SchemaViolation(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema,
                            const nlohmann::ordered_json& root);

}  // namespace lockstep::grammar::testing
