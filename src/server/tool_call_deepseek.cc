#include "server/tool_call_deepseek.h"

#include "server/tool_call_parts.h"

namespace lockstep::server {
namespace {

using tool_parts::SkipSpace;
using tool_parts::StartsWith;

// One call from just after <｜tool▁call▁begin｜> in `s`: its name and arguments, *end past its
// <｜tool▁call▁end｜> (or past its arguments when the text ends there); false when it is not a call.
bool DeepSeekCall(const ToolSpec& spec, std::string_view s, ToolCall* call, size_t* end) {
  const size_t sep = s.find(kDeepSeekSep);
  if (sep == std::string_view::npos) return false;
  const std::string_view head = tool_parts::TrimSpace(s.substr(0, sep));
  size_t p = sep + kDeepSeekSep.size();
  std::string_view name = head;
  const size_t first = SkipSpace(s, p);
  const bool fenced = head == "function" && first < s.size() && s[first] != '{';
  if (fenced) {  // V3 / R1: the name on the separator's line, the arguments in a ```json fence
    const size_t nl = s.find('\n', p);
    if (nl == std::string_view::npos) return false;
    name = tool_parts::TrimSpace(s.substr(p, nl - p));
    p = SkipSpace(s, nl);
    if (StartsWith(s.substr(p), "```")) {
      p += 3;
      if (StartsWith(s.substr(p), "json")) p += 4;
    }
  }
  if (tool_parts::ToolIndex(spec, name) == std::string_view::npos) return false;
  size_t args_end = 0;
  auto arguments = tool_parts::JsonObjectAt(s, p, &args_end);
  if (!arguments) return false;
  p = SkipSpace(s, args_end);
  if (fenced && StartsWith(s.substr(p), "```")) p = SkipSpace(s, p + 3);
  p = tool_parts::PastEndMarker(s, p, kDeepSeekCallEnd);
  if (p == std::string_view::npos) return false;  // something else follows the arguments
  *call = {"", std::string(name), std::move(*arguments)};
  *end = p;
  return true;
}

}  // namespace

bool DeepSeekToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                           std::string_view* after) {
  std::vector<ToolCall> found;
  size_t p = 0;
  if (StartsWith(text, kDeepSeekCallsBegin)) p = SkipSpace(text, kDeepSeekCallsBegin.size());
  while (StartsWith(text.substr(p), kDeepSeekCallBegin)) {
    p += kDeepSeekCallBegin.size();
    ToolCall call;
    size_t end = 0;
    if (!DeepSeekCall(spec, text.substr(p), &call, &end)) return false;
    found.push_back(std::move(call));
    p = SkipSpace(text, p + end);
  }
  p = tool_parts::PastEndMarker(text, p, kDeepSeekCallsEnd);
  if (found.empty() || p == std::string_view::npos) return false;  // not another call, nor the end
  *after = text.substr(p);
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
