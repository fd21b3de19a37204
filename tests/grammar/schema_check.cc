#include "schema_check.h"

#include <cmath>
#include <regex>
#include <set>

namespace lockstep::grammar::testing {
namespace {

using Json = nlohmann::ordered_json;

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool ValidDate(const std::string& s) {
  static const std::regex re(R"(^(\d{4})-(\d{2})-(\d{2})$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return false;
  const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return mo >= 1 && mo <= 12 && d >= 1 && d <= days[mo - 1] + (mo == 2 && leap ? 1 : 0);
}

bool ValidTime(const std::string& s) {
  static const std::regex re(R"(^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$)");
  return std::regex_match(s, re);
}

bool ValidFormat(const std::string& format, const std::string& s) {
  if (format == "date") return ValidDate(s);
  if (format == "time") return ValidTime(s);
  if (format == "date-time") {
    const size_t t = s.find('T');
    return t != std::string::npos && ValidDate(s.substr(0, t)) && ValidTime(s.substr(t + 1));
  }
  if (format == "uuid") {
    static const std::regex re(
        R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)");
    return std::regex_match(s, re);
  }
  return false;
}

std::string Check(const Json& v, const Json& s, const Json& root, const std::string& at);

std::string CheckType(const Json& v, const std::string& type) {
  bool ok = false;
  if (type == "object") ok = v.is_object();
  if (type == "array") ok = v.is_array();
  if (type == "string") ok = v.is_string();
  if (type == "number") ok = v.is_number();
  if (type == "integer")
    ok = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (type == "boolean") ok = v.is_boolean();
  if (type == "null") ok = v.is_null();
  return ok ? "" : "not of type " + type;
}

std::string Check(const Json& v, const Json& s, const Json& root, const std::string& at) {
  if (s.is_boolean()) return s.get<bool>() ? "" : at + ": schema false";
  if (s.value("nullable", false) && v.is_null()) return "";
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"].get<std::string>();
    return Check(v, root.at(Json::json_pointer(ref.substr(1))), root, at);
  }
  if (s.contains("const") && v != s["const"]) return at + ": not the const";
  if (s.contains("enum")) {
    bool found = false;
    for (const Json& e : s["enum"]) found = found || e == v;
    if (!found) return at + ": not in enum";
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const Json& b : s["anyOf"]) any = any || Check(v, b, root, at).empty();
    if (!any) return at + ": no anyOf branch matches";
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const Json& b : s["oneOf"]) n += Check(v, b, root, at).empty();
    if (n != 1) return at + ": " + std::to_string(n) + " oneOf branches match";
  }
  if (s.contains("allOf")) {
    for (const Json& b : s["allOf"]) {
      if (std::string e = Check(v, b, root, at); !e.empty()) return e;
    }
  }
  if (s.contains("type")) {
    const Json& t = s["type"];
    bool ok = false;
    std::string why;
    for (const Json& one : t.is_array() ? t : Json::array({t})) {
      why = CheckType(v, one.get<std::string>());
      ok = ok || why.empty();
    }
    if (!ok) return at + ": " + why;
  }
  if (v.is_object()) {
    const Json props = s.value("properties", Json::object());
    for (const Json& r : s.value("required", Json::array())) {
      if (!v.contains(r.get<std::string>())) return at + ": missing " + r.get<std::string>();
    }
    for (const auto& [k, value] : v.items()) {
      if (props.contains(k)) {
        if (std::string e = Check(value, props[k], root, at + "/" + k); !e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        if (std::string e = Check(value, s["additionalProperties"], root, at + "/" + k); !e.empty()) return e;
      }
    }
  }
  if (v.is_array()) {
    const size_t n = v.size();
    if (s.contains("minItems") && n < s["minItems"].get<size_t>()) return at + ": too few items";
    if (s.contains("maxItems") && n > s["maxItems"].get<size_t>()) return at + ": too many items";
    const size_t prefix = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    for (size_t i = 0; i < n; ++i) {
      const Json& item_schema = i < prefix ? s["prefixItems"][i] : s.value("items", Json(true));
      if (std::string e = Check(v[i], item_schema, root, at + "/" + std::to_string(i)); !e.empty()) return e;
    }
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    if (s.contains("minLength") && CodePoints(str) < s["minLength"].get<size_t>()) return at + ": too short";
    if (s.contains("maxLength") && CodePoints(str) > s["maxLength"].get<size_t>()) return at + ": too long";
    if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>()))) {
      return at + ": pattern mismatch for '" + str + "'";
    }
    if (s.contains("format") && !ValidFormat(s["format"].get<std::string>(), str)) return at + ": bad format";
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return at + ": below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return at + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return at + ": not above";
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return at + ": not below";
  }
  return "";
}

}  // namespace

std::string SchemaViolation(const Json& value, const Json& schema, const Json& root) {
  return Check(value, schema, root, "");
}

}  // namespace lockstep::grammar::testing
