#include "server/tool_call_xml.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "server/request_fields.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view TrimSpace(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \n\t\r");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \n\t\r") - begin + 1);
}

// The JSON types the tool's schema allows for parameter `key` (properties.KEY.type, a name or a list of
// names); empty when it names none.
std::vector<std::string> ParameterTypes(const Ordered& parameters, const std::string& key) {
  std::vector<std::string> types;
  if (!parameters.is_object()) return types;
  const auto properties = parameters.find("properties");
  if (properties == parameters.end() || !properties->is_object()) return types;
  const auto property = properties->find(key);
  if (property == properties->end() || !property->is_object()) return types;
  const auto type = property->find("type");
  if (type == property->end()) return types;
  if (type->is_string()) types.push_back(type->get<std::string>());
  if (type->is_array()) {
    for (const Ordered& t : *type) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  return types;
}

bool OfType(const Ordered& value, const std::string& type) {
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return false;  // "string" and unknown names: the text itself
}

// A parameter's text as the schema's types read it: JSON of an allowed non-string type, else the text.
Ordered TypedValue(std::string_view text, const std::vector<std::string>& types) {
  std::string candidate(TrimSpace(text));
  if (candidate == "True" || candidate == "False" || candidate == "None") {  // as Python prints them
    candidate = candidate == "True" ? "true" : candidate == "False" ? "false" : "null";
  }
  if (!candidate.empty() && !NestsDeeperThan(candidate, kMaxJsonDepth)) {
    const Ordered value = Ordered::parse(candidate, nullptr, /*allow_exceptions=*/false);
    if (!value.is_discarded() &&
        std::any_of(types.begin(), types.end(), [&](const std::string& t) { return OfType(value, t); })) {
      return value;
    }
  }
  return Ordered(std::string(text));
}

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
    (*arguments)[key] = TypedValue(value, ParameterTypes(parameters, key));
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
    // The model's text may hold bytes that are not UTF-8: replaced, as JSON text must be.
    found.push_back({"", name, arguments.dump(-1, ' ', false, Ordered::error_handler_t::replace)});
    rest = close == std::string_view::npos ? std::string_view()
                                           : TrimSpace(rest.substr(close + kFunctionClose.size()));
  }
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
