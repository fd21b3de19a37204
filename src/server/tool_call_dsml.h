// DeepSeek V3.2's and V4's tool-call format (DSML), a block of calls that follows the answer's prose:
//   <｜DSML｜function_calls>            (V4: <｜DSML｜tool_calls>)
//   <｜DSML｜invoke name="NAME">
//   <｜DSML｜parameter name="KEY" string="true">VALUE</｜DSML｜parameter>   ... (more parameters)
//   </｜DSML｜invoke>                   ... (more invokes)
//   </｜DSML｜function_calls>
// Whitespace may separate the tags. A parameter with string="true" is its text as it is; one with
// string="false" (numbers, booleans, arrays, objects) is its text as JSON where that parses, else the text,
// as vLLM's deepseek_v32 parser reads it. The arguments are a JSON object with keys in the order written;
// each invoke must name a declared tool. An output cut after a complete invoke keeps the calls it has; one
// cut inside a parameter keeps that parameter's text so far. Pure function; output nests no deeper than
// kMaxJsonDepth.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

inline constexpr std::string_view kDsmlFunctionCallsBegin = "<｜DSML｜function_calls>";  // V3.2
inline constexpr std::string_view kDsmlToolCallsBegin = "<｜DSML｜tool_calls>";          // V4

// The calls of `text`, which starts with kDsmlFunctionCallsBegin or kDsmlToolCallsBegin, appended to *calls,
// and *after set to the text after the block's closing tag (empty when the text ends first). False (and
// *calls unchanged) when the block is not in this format or names an undeclared tool.
bool DsmlToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                       std::string_view* after);

}  // namespace lockstep::server
