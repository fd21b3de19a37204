// Structured-output request fields -> a grammar for the engine (Request::grammar), for every API flavour:
//   OpenAI     response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
//              "schema", "strict"}} (also llama.cpp's {"type": "json_object", "schema": ...})
//   llama.cpp  grammar (GBNF text), json_schema (a schema)
//   vLLM       guided_json, guided_regex, guided_choice, guided_grammar (GBNF), guided_decoding_backend
//              (accepted and ignored: it picks an implementation, not an output), structured_outputs
//              {json, regex, choice, grammar}; guided_whitespace_pattern is rejected (not supported)
//   TGI        parameters.grammar {"type": "json" | "json_schema" | "regex", "value": ...}
// At most one may be given. Every wrong type, unsupported schema keyword, bad regex or bad grammar is a
// 400 naming the field (and the keyword / line and column), never a silently unconstrained output.
// Schemas keep their property order: they are read again from the raw body with an order-preserving
// parser. Pure functions (GrammarCache is thread-safe).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/request.h"
#include "server/api_error.h"
#include "server/grammar_cache.h"

namespace lockstep::server {

struct OutputConstraint {
  std::string gbnf;
  std::string param;     // the field it came from, for errors
  bool markers = false;  // may produce the marker tokens (GrammarCache::Get): a model's tool-call syntax
};

// The OpenAI routes (chat and completions); `body` is the parsed request, `raw_body` its text.
Parsed<std::optional<OutputConstraint>> ReadOpenAiConstraint(const nlohmann::json& body,
                                                             const std::string& raw_body);
// llama.cpp's native /completion: grammar (GBNF; "" = none, its default) and json_schema.
Parsed<std::optional<OutputConstraint>> ReadLlamaCppConstraint(const nlohmann::json& body,
                                                               const std::string& raw_body);
// TGI's parameters.grammar (`parameters` may be null when absent).
Parsed<std::optional<OutputConstraint>> ReadTgiConstraint(const nlohmann::json* parameters,
                                                          const std::string& raw_body);
// Compiles the constraint through `cache` into request->grammar.
Parsed<bool> ApplyConstraint(GrammarCache& cache, const OutputConstraint& constraint, Request* request);

// GBNF helpers, exposed for tools (server/tool_calls.h) and tests.
Parsed<std::string> SchemaGbnf(const nlohmann::ordered_json& schema, const std::string& param);
std::string ChoiceGbnf(const std::vector<std::string>& choices);

}  // namespace lockstep::server
