#include "server/request_fields.h"

#include <fmt/format.h>

#include <cmath>

namespace lockstep::server {

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Parsed<nlohmann::json> ParseJsonObject(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return ApiError{InvalidArgument("request body is not valid JSON"), "", true};
  }
  if (!j.is_object()) {
    return ApiError{InvalidArgument("request body must be a JSON object"), "", true};
  }
  return j;
}

namespace {
std::string Shown(const nlohmann::json& v) {
  std::string s = DumpJson(v);
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}
std::string Num(double v) { return fmt::format("{}", v); }
}  // namespace

bool FieldReader::Has(const char* name) const { return Raw(name) != nullptr; }

const nlohmann::json* FieldReader::Raw(const char* name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::Fail(const std::string& name, const std::string& message) {
  if (failed_) return;
  failed_ = true;
  error_ = ApiError::Field(Param(name), message);
}

std::optional<double> FieldReader::Number(const char* name, double lo, double hi, bool lo_exclusive) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  const std::string range = std::string(lo_exclusive ? "greater than " : "between ") + Num(lo) +
                            (lo_exclusive ? " and at most " : " and ") + Num(hi);
  if (!v->is_number()) {
    Fail(name, Param(name) + " must be a number " + range + ", got " + Shown(*v));
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_exclusive && d == lo)) {
    Fail(name, Param(name) + " must be a number " + range + ", got " + Shown(*v));
    return std::nullopt;
  }
  return d;
}

std::optional<int64_t> FieldReader::Int(const char* name, int64_t lo, int64_t hi) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  const bool integral = v->is_number_integer() || v->is_number_unsigned() ||
                        (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
                         std::fabs(v->get<double>()) < 9e15);
  const std::string range = "an integer between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (!integral) {
    Fail(name, Param(name) + " must be " + range + ", got " + Shown(*v));
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
    Fail(name, Param(name) + " must be " + range + ", got " + Shown(*v));
    return std::nullopt;
  }
  return v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
}

std::optional<bool> FieldReader::Bool(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  if (!v->is_boolean()) {
    Fail(name, Param(name) + " must be a boolean, got " + Shown(*v));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> FieldReader::String(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  if (!v->is_string()) {
    Fail(name, Param(name) + " must be a string, got " + Shown(*v));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> FieldReader::StringOrList(const char* name, size_t max) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& item : *v) {
      if (!item.is_string()) {
        Fail(name, Param(name) + " must be a string or an array of strings, got " + Shown(*v));
        return std::nullopt;
      }
      out.push_back(item.get<std::string>());
    }
  } else {
    Fail(name, Param(name) + " must be a string or an array of strings, got " + Shown(*v));
    return std::nullopt;
  }
  if (out.size() > max) {
    Fail(name, Param(name) + " may hold at most " + std::to_string(max) + " entries, got " +
                   std::to_string(out.size()));
    return std::nullopt;
  }
  return out;
}

void FieldReader::Unsupported(const char* name, const std::string& why) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return;
  const bool harmless = (v->is_boolean() && !v->get<bool>()) ||
                        (v->is_string() && v->get<std::string>().empty()) ||
                        ((v->is_object() || v->is_array()) && v->empty());
  if (!harmless) {
    failed_ = true;
    error_ = ApiError{
        Unimplemented(Param(name) + " is not supported by this server" + (why.empty() ? "" : ": " + why)),
        Param(name), false};
  }
}

}  // namespace lockstep::server
