// DeepSeek's tool-call formats, a section of calls that follows the answer's prose:
//   V3.1      <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜>
//             ... (more calls) <｜tool▁calls▁end｜>
//   V3 / R1   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//             ```json
//             {arguments}
//             ```<｜tool▁call▁end｜> ... <｜tool▁calls▁end｜>
// (the markers are control tokens, kept in the text by ToolMarkerTokens). The section may also open with
// <｜tool▁call▁begin｜> itself, as R1's distillations sometimes write. Whitespace may separate the markers
// and calls; the arguments must be a JSON object. Each call must name a declared tool. An output cut after a
// call's arguments (no <｜tool▁call▁end｜> or <｜tool▁calls▁end｜> yet) keeps the calls it has. Pure
// function.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

inline constexpr std::string_view kDeepSeekCallsBegin = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view kDeepSeekCallsEnd = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDeepSeekCallBegin = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view kDeepSeekCallEnd = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";

// The calls of `text`, which starts with kDeepSeekCallsBegin or kDeepSeekCallBegin, appended to *calls,
// and *after set to the text after the section (after <｜tool▁calls▁end｜>; empty when the text ends first).
// False (and *calls unchanged) when the section is not in this format or names an undeclared tool.
bool DeepSeekToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                           std::string_view* after);

}  // namespace lockstep::server
