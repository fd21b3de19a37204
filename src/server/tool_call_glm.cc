#include "server/tool_call_glm.h"

#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_call_parts.h"

namespace lockstep::server {

bool GlmToolCallFrom(const ToolSpec& spec, std::string_view body, std::vector<ToolCall>* calls) {
  using tool_parts::StartsWith;
  using tool_parts::TrimSpace;
  constexpr std::string_view kKeyOpen = "<arg_key>", kKeyClose = "</arg_key>";
  constexpr std::string_view kValueOpen = "<arg_value>", kValueClose = "</arg_value>";
  const size_t first_key = body.find(kKeyOpen);
  const std::string_view name = TrimSpace(body.substr(0, first_key));
  const size_t tool = tool_parts::ToolIndex(spec, name);
  if (tool == std::string_view::npos) return false;
  const nlohmann::ordered_json& parameters = spec.parameters[tool];
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
  std::string_view rest = first_key == std::string_view::npos ? std::string_view() : body.substr(first_key);
  while (!(rest = TrimSpace(rest)).empty()) {
    if (!StartsWith(rest, kKeyOpen)) return false;
    rest.remove_prefix(kKeyOpen.size());
    const size_t key_end = rest.find(kKeyClose);
    if (key_end == std::string_view::npos) return false;
    const std::string key(TrimSpace(rest.substr(0, key_end)));
    if (key.empty()) return false;
    rest = TrimSpace(rest.substr(key_end + kKeyClose.size()));
    if (!StartsWith(rest, kValueOpen)) return false;
    rest.remove_prefix(kValueOpen.size());
    const size_t value_end = rest.find(kValueClose);
    const std::string_view value = rest.substr(0, value_end);
    arguments[key] = tool_parts::KeyValueParameter(value, parameters, key);
    rest = value_end == std::string_view::npos ? std::string_view()
                                               : rest.substr(value_end + kValueClose.size());
  }
  calls->push_back({"", std::string(name), tool_parts::ArgumentsText(arguments)});
  return true;
}

}  // namespace lockstep::server
