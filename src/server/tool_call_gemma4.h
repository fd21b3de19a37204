// Gemma 4's tool-call format: calls after the answer's prose, each
//   <|tool_call>call:NAME{KEY:VALUE,...}<tool_call|>
// (the markers are control tokens, kept in the text by ToolMarkerTokens). A VALUE is <|"|>text<|"|> (a
// string), true / false, null (or None, as the template prints Python's), a number, {KEY:VALUE,...} (keys
// bare or in <|"|> quotes) or [VALUE,...]; a bare word (no space or ':' in it) that is none of those is a
// string. Whitespace may
// separate the parts and the calls. Each call must name a declared tool; its arguments become a JSON object
// with keys in the order written. An output cut inside a call keeps the calls before it. Pure function;
// output nests no deeper than kMaxJsonDepth.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace lockstep::server {

inline constexpr std::string_view kGemma4CallBegin = "<|tool_call>";
inline constexpr std::string_view kGemma4CallEnd = "<tool_call|>";
inline constexpr std::string_view kGemma4Quote = "<|\"|>";

// The calls of `text`, which starts with kGemma4CallBegin, appended to *calls, and *after set to the text
// after the last call (empty when the text ends first). False (and *calls unchanged) when the calls are not
// in this format or name an undeclared tool.
bool Gemma4ToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                         std::string_view* after);

}  // namespace lockstep::server
