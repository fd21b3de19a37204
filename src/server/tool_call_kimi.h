// Kimi K2's tool-call format, a section of calls that follows the answer's prose:
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{arguments}
//   <|tool_call_end|> ... (more calls) <|tool_calls_section_end|>
// (the markers are control tokens, kept in the text by ToolMarkerTokens). Whitespace may separate markers
// and calls; the "functions." prefix is optional; the arguments must be a JSON object; each call must name
// a declared tool. The call keeps the model's id, functions.NAME:IDX, which Kimi's template writes back in
// the tool result ("## Return of ID"), as vLLM's kimi_k2 parser keeps it. An output cut after a call's
// arguments keeps the calls it has. Pure function.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

inline constexpr std::string_view kKimiSectionBegin = "<|tool_calls_section_begin|>";
inline constexpr std::string_view kKimiSectionEnd = "<|tool_calls_section_end|>";
inline constexpr std::string_view kKimiCallBegin = "<|tool_call_begin|>";
inline constexpr std::string_view kKimiArgumentBegin = "<|tool_call_argument_begin|>";
inline constexpr std::string_view kKimiCallEnd = "<|tool_call_end|>";

// The calls of `text`, which starts with kKimiSectionBegin, appended to *calls, and *after set to the text
// after the section (empty when the text ends first). False (and *calls unchanged) when the section is not
// in this format or names an undeclared tool.
bool KimiToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                       std::string_view* after);

}  // namespace lockstep::server
