// Qwen3-Coder's tool-call format, the body of one <tool_call> ... </tool_call> block in XML form:
//   <function=NAME>
//   <parameter=KEY>
//   VALUE (any text, over several lines)
//   </parameter>
//   ...
//   </function>
// (several <function=...> blocks may follow one another). Each becomes a call of a declared tool with its
// arguments as a JSON object, keys in the order written. A value is typed by the tool's parameters schema
// (properties.KEY.type, server/tool_call_parts.h ParameterTypes): "string" (an untyped string enum or
// const too) keeps the text; "integer", "number", "boolean", "object", "array" and "null" take the text as
// JSON when it is JSON of that type (booleans also as True / False, as Python writes them), and keep the
// text otherwise, as vLLM's qwen3_coder parser does; with no type (a declared property, or any key of a
// schema that declares none) any JSON, a string included, else the text: the forced grammar writes those
// as JSON; a key the schema's properties do not name keeps its text. One newline after
// the opening tag and one before the closing tag belong to the layout, not to the value. A parameter's end
// is `</parameter>`, the next `<parameter=` or `</function>`. Pure function; output nests no deeper than
// kMaxJsonDepth.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

// The calls of `body` (text after <tool_call>, before </tool_call>), appended to *calls; false (and *calls
// unchanged) when the body is not in this format or names a tool `spec` does not declare.
bool XmlToolCallsFrom(const ToolSpec& spec, std::string_view body, std::vector<ToolCall>* calls);

}  // namespace lockstep::server
