#include "server/tool_call_kimi.h"

#include "server/tool_call_parts.h"

namespace lockstep::server {

bool KimiToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                       std::string_view* after) {
  using tool_parts::SkipSpace;
  using tool_parts::StartsWith;
  if (!StartsWith(text, kKimiSectionBegin)) return false;
  std::vector<ToolCall> found;
  size_t p = SkipSpace(text, kKimiSectionBegin.size());
  while (StartsWith(text.substr(p), kKimiCallBegin)) {
    p += kKimiCallBegin.size();
    const size_t arg = text.find(kKimiArgumentBegin, p);
    if (arg == std::string_view::npos) return false;
    const std::string_view id = tool_parts::TrimSpace(text.substr(p, arg - p));
    std::string_view name = id.substr(0, id.rfind(':'));  // functions.NAME:IDX
    if (StartsWith(name, "functions.")) name.remove_prefix(std::string_view("functions.").size());
    if (tool_parts::ToolIndex(spec, name) == std::string_view::npos) return false;
    size_t end = 0;
    auto arguments = tool_parts::JsonObjectAt(text, arg + kKimiArgumentBegin.size(), &end);
    if (!arguments) return false;
    p = tool_parts::PastEndMarker(text, SkipSpace(text, end), kKimiCallEnd);
    if (p == std::string_view::npos) return false;  // something else follows the arguments
    // The model's id when it is the template's functions.NAME:IDX; else the server makes one.
    const size_t colon = id.rfind(':');
    const bool model_id = StartsWith(id, "functions.") && colon != std::string_view::npos &&
                          colon + 1 < id.size() &&
                          id.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
    found.push_back({model_id ? std::string(id) : "", std::string(name), std::move(*arguments)});
  }
  p = tool_parts::PastEndMarker(text, p, kKimiSectionEnd);
  if (found.empty() || p == std::string_view::npos) return false;  // not another call, nor the end
  *after = text.substr(p);
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
