#include "server/tool_call_xml.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_call_parts.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;
using tool_parts::StartsWith;
using tool_parts::TrimSpace;

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

// The arguments of one <function=...> block's inside (its parameters); false when anything but
// whitespace lies outside the parameter tags or a tag is unclosed.
bool ReadParameters(std::string_view inside, const Ordered& parameters, Ordered* arguments) {
  size_t at = inside.find(kParameterOpen);
  if (!TrimSpace(inside.substr(0, at)).empty()) return false;
  while (at != std::string_view::npos) {
    inside.remove_prefix(at + kParameterOpen.size());
    const size_t name_end = inside.find('>');
    if (name_end == std::string_view::npos || name_end == 0) return false;
    const std::string key(inside.substr(0, name_end));
    inside.remove_prefix(name_end + 1);
    const size_t close = inside.find(kParameterClose);
    const size_t end = std::min(close, inside.find(kParameterOpen));
    std::string_view value = inside.substr(0, end);
    if (StartsWith(value, "\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    // A key the schema does not declare keeps its text, as vLLM's qwen3_coder parser keeps it.
    (*arguments)[key] = tool_parts::Undeclared(parameters, key)
                            ? Ordered(std::string(value))
                            : tool_parts::KeyValueParameter(value, parameters, key);
    if (end == std::string_view::npos) return true;
    inside.remove_prefix(end == close ? close + kParameterClose.size() : end);
    at = inside.find(kParameterOpen);
    if (!TrimSpace(inside.substr(0, at)).empty()) return false;
  }
  return true;
}

}  // namespace

bool XmlToolCallsFrom(const ToolSpec& spec, std::string_view body, std::vector<ToolCall>* calls) {
  std::vector<ToolCall> found;
  std::string_view rest = TrimSpace(body);
  if (!StartsWith(rest, kFunctionOpen)) return false;
  while (!rest.empty()) {
    if (!StartsWith(rest, kFunctionOpen)) return false;
    rest.remove_prefix(kFunctionOpen.size());
    const size_t name_end = rest.find('>');
    if (name_end == std::string_view::npos) return false;
    const std::string name(rest.substr(0, name_end));
    const auto tool = std::find(spec.names.begin(), spec.names.end(), name);
    if (tool == spec.names.end()) return false;
    rest.remove_prefix(name_end + 1);
    // An output cut before </function> keeps what it has, as vLLM's parser does.
    const size_t close = rest.find(kFunctionClose);
    Ordered arguments = Ordered::object();
    if (!ReadParameters(rest.substr(0, close), spec.parameters[size_t(tool - spec.names.begin())],
                        &arguments)) {
      return false;
    }
    found.push_back({"", name, tool_parts::ArgumentsText(arguments)});
    rest = close == std::string_view::npos ? std::string_view()
                                           : TrimSpace(rest.substr(close + kFunctionClose.size()));
  }
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
