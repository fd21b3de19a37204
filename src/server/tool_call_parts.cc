#include "server/tool_call_parts.h"

#include <algorithm>

#include "server/request_fields.h"

namespace lockstep::server::tool_parts {

using Ordered = nlohmann::ordered_json;

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

size_t SkipSpace(std::string_view s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\t' || s[p] == '\r')) ++p;
  return p;
}

std::string_view TrimSpace(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \n\t\r");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \n\t\r") - begin + 1);
}

size_t JsonValueEnd(std::string_view s, size_t p) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = p; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<std::string> JsonObjectAt(std::string_view s, size_t p, size_t* end) {
  p = SkipSpace(s, p);
  if (p >= s.size() || s[p] != '{') return std::nullopt;
  const size_t e = JsonValueEnd(s, p);
  if (e == std::string_view::npos || NestsDeeperThan(s.substr(p, e - p), kMaxJsonDepth)) return std::nullopt;
  const Ordered v = Ordered::parse(s.substr(p, e - p), nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !v.is_object()) return std::nullopt;
  *end = e;
  return ArgumentsText(v);
}

size_t PastEndMarker(std::string_view s, size_t p, std::string_view marker) {
  if (StartsWith(s.substr(std::min(p, s.size())), marker)) return SkipSpace(s, p + marker.size());
  return p >= s.size() ? p : std::string_view::npos;
}

size_t ToolIndex(const ToolSpec& spec, std::string_view name) {
  const auto it = std::find(spec.names.begin(), spec.names.end(), name);
  return it == spec.names.end() ? std::string_view::npos : size_t(it - spec.names.begin());
}

namespace {

// The parameters schema's `properties` object, or null when it has none.
const Ordered* Properties(const Ordered& parameters) {
  if (!parameters.is_object()) return nullptr;
  const auto properties = parameters.find("properties");
  return properties != parameters.end() && properties->is_object() ? &*properties : nullptr;
}

// The schema of parameter `key`, or null when the parameters schema does not declare it.
const Ordered* PropertyOf(const Ordered& parameters, const std::string& key) {
  const Ordered* properties = Properties(parameters);
  if (properties == nullptr) return nullptr;
  const auto property = properties->find(key);
  return property == properties->end() ? nullptr : &*property;
}

}  // namespace

std::vector<std::string> PropertyTypes(const Ordered& property) {
  std::vector<std::string> types;
  if (!property.is_object()) return types;
  const auto type = property.find("type");
  if (type == property.end()) {
    // An untyped string enum or const: strings (a value that looks like a number stays text).
    const auto e = property.find("enum");
    const auto c = property.find("const");
    const bool strings = e != property.end() ? e->is_array() && !e->empty() &&
                                                   std::all_of(e->begin(), e->end(),
                                                               [](const Ordered& v) { return v.is_string(); })
                                             : c != property.end() && c->is_string();
    if (strings) types.push_back("string");
    return types;
  }
  if (type->is_string()) types.push_back(type->get<std::string>());
  if (type->is_array()) {
    for (const Ordered& t : *type) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  return types;
}

std::vector<std::string> ParameterTypes(const Ordered& parameters, const std::string& key) {
  const Ordered* property = PropertyOf(parameters, key);
  return property == nullptr ? std::vector<std::string>() : PropertyTypes(*property);
}

bool Undeclared(const Ordered& parameters, const std::string& key) {
  const Ordered* properties = Properties(parameters);
  return properties != nullptr && !properties->contains(key);
}

namespace {

bool OfType(const Ordered& value, const std::string& type, bool json) {
  if (type == "string") return json && value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return false;  // unknown names: the text itself
}

}  // namespace

Ordered TypedValue(std::string_view text, const std::vector<std::string>& types, bool json) {
  std::string candidate(TrimSpace(text));
  if (candidate == "True" || candidate == "False" || candidate == "None") {  // as Python prints them
    candidate = candidate == "True" ? "true" : candidate == "False" ? "false" : "null";
  }
  if (!candidate.empty() && !NestsDeeperThan(candidate, kMaxJsonDepth)) {
    const Ordered value = Ordered::parse(candidate, nullptr, /*allow_exceptions=*/false);
    if (!value.is_discarded() &&
        (types.empty() || std::any_of(types.begin(), types.end(),
                                      [&](const std::string& t) { return OfType(value, t, json); }))) {
      return value;
    }
  }
  return Ordered(std::string(text));
}

ValueForm KeyValueForm(const Ordered& property, const std::vector<std::string>& types, bool raw_null) {
  ValueForm r;
  if (!property.is_object() || property.contains("anyOf") || property.contains("oneOf") ||
      property.contains("allOf") || property.contains("$ref")) {
    return r;
  }
  const bool has_string = std::find(types.begin(), types.end(), "string") != types.end();
  r.nullable = raw_null && std::find(types.begin(), types.end(), "null") != types.end();
  r.raw = has_string && types.size() == 1u + (r.nullable ? 1u : 0u);
  auto allowed = [&](const Ordered& v) { return v.is_string() || (r.nullable && v.is_null()); };
  if (r.raw && property.contains("enum")) {
    const Ordered& e = property["enum"];
    r.raw = e.is_array() && !e.empty() && std::all_of(e.begin(), e.end(), allowed);
  }
  if (r.raw && property.contains("const")) r.raw = allowed(property["const"]);
  if (!r.raw) r.nullable = false;
  return r;
}

Ordered KeyValueParameter(std::string_view text, const Ordered& parameters, const std::string& key) {
  const Ordered* property = PropertyOf(parameters, key);
  if (property == nullptr) return TypedValue(text, {}, /*json=*/true);  // undeclared: written as JSON
  const std::vector<std::string> types = PropertyTypes(*property);
  return TypedValue(text, types, /*json=*/!KeyValueForm(*property, types, /*raw_null=*/true).raw);
}

std::string ArgumentsText(const Ordered& arguments) {
  return arguments.dump(-1, ' ', false, Ordered::error_handler_t::replace);
}

}  // namespace lockstep::server::tool_parts
