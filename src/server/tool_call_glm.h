// GLM-4.5 / 4.6 / 4.7's tool-call format, the body of one <tool_call> ... </tool_call> block:
//   NAME
//   <arg_key>KEY</arg_key>
//   <arg_value>VALUE</arg_value>
//   ... (more pairs)
// (GLM-4.7 writes it on one line, with no newlines between the tags). Hermes shares the <tool_call> marker;
// GLM's body starts with a declared tool's name, Hermes' with '{'. Each block is one call, its arguments a
// JSON object with keys in the order written. A value is typed by the tool's parameters schema
// (properties.KEY.type), as vLLM's glm4_moe parser and llama.cpp type it: a parameter typed "string" (an
// untyped string enum or const too) keeps its text; any other, or one the schema does not type, takes the
// text as JSON when it is JSON of an allowed type (untyped: any JSON, a string included), else keeps the
// text (server/tool_call_parts.h TypedValue). An output cut inside the last value keeps what it
// has. Pure function; output nests no deeper than kMaxJsonDepth.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

// The call of `body` (text after <tool_call>, before </tool_call>), appended to *calls; false (and *calls
// unchanged) when the body is not in this format or names a tool `spec` does not declare.
bool GlmToolCallFrom(const ToolSpec& spec, std::string_view body, std::vector<ToolCall>* calls);

}  // namespace lockstep::server
