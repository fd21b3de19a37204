#include "server/request_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "base/excerpt.h"

namespace lockstep::server {

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool NestsDeeperThan(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skips the escaped character (an escaped quote does not end the string)
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

namespace {

// Reads JSON text without building it, only to learn where and why it fails to parse (nlohmann's parse()
// without exceptions says only that it failed).
class ParseErrorFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    message_ = error.what();
    return false;
  }
  // "parse error at line 1, column 31: syntax error while parsing object key - unexpected '}'; expected
  // string literal": the library's text without its exception id and without the token it last read (which
  // may be a whole long string).
  std::string Reason() const {
    std::string reason = message_;
    if (const size_t id_end = reason.find("] ");
        reason.rfind("[json.exception.", 0) == 0 && id_end != std::string::npos)
      reason.erase(0, id_end + 2);
    if (const size_t last_read = reason.find("; last read:"); last_read != std::string::npos)
      reason.erase(last_read);
    return Excerpt(reason, 200);
  }

 private:
  std::string message_;
};

std::string JsonParseError(const std::string& text) {
  ParseErrorFinder finder;
  nlohmann::json::sax_parse(text, &finder);
  const std::string reason = finder.Reason();
  return reason.empty() ? "" : ": " + reason;
}

}  // namespace

Parsed<nlohmann::json> ParseJsonObject(const std::string& body) {
  if (NestsDeeperThan(body, kMaxJsonDepth)) {
    return ApiError{InvalidArgument("request body nests arrays or objects deeper than " +
                                    std::to_string(kMaxJsonDepth) + " levels"),
                    "", true};
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return ApiError{InvalidArgument("request body is not valid JSON" + JsonParseError(body)), "", true};
  }
  if (!j.is_object()) {
    return ApiError{InvalidArgument("request body must be a JSON object"), "", true};
  }
  return j;
}

Parsed<nlohmann::ordered_json> ParseJsonText(const std::string& text, const std::string& param,
                                             const std::string& not_json) {
  if (NestsDeeperThan(text, kMaxJsonDepth)) {
    return ApiError::Field(
        param, param + " nests arrays or objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ApiError::Field(param, not_json + JsonParseError(text));
  return j;
}

std::string DescribeJson(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: {
      return "a string " + DumpJson(nlohmann::json(Excerpt(v.get_ref<const std::string&>(), 40)));
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number " + v.dump();  // a scalar: no recursion
    case nlohmann::json::value_t::array:
      return v.empty() ? "an empty array"
                       : "an array of " + std::to_string(v.size()) + (v.size() == 1 ? " item" : " items");
    case nlohmann::json::value_t::object:
      return v.empty() ? "an empty object" : "an object";
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "an unexpected value";
}

namespace {
std::string Num(double v) { return fmt::format("{}", v); }
}  // namespace

bool FieldReader::Has(const char* name) const { return Raw(name) != nullptr; }

const nlohmann::json* FieldReader::Raw(const char* name) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::Fail(const std::string& name, const std::string& message) {
  if (failed_) return;
  failed_ = true;
  error_ = ApiError::Field(Param(name), message);
}

void FieldReader::Absorb(const FieldReader& nested) {
  if (failed_ || !nested.failed_) return;
  failed_ = true;
  error_ = nested.error_;
}

void FieldReader::TypeError(const char* name, const std::string& expected, const nlohmann::json& got) {
  Fail(name, Param(name) + " must be " + expected + ", got " + DescribeJson(got));
}

std::optional<double> FieldReader::Number(const char* name, double lo, double hi, bool lo_exclusive) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  const std::string expected = std::string("a number ") + (lo_exclusive ? "greater than " : "between ") +
                               Num(lo) + (lo_exclusive ? " and at most " : " and ") + Num(hi);
  if (!v->is_number()) {
    TypeError(name, expected, *v);
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_exclusive && d == lo)) {
    TypeError(name, expected, *v);
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
  const std::string expected = "an integer between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (!integral) {
    TypeError(name, expected, *v);
    return std::nullopt;
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    TypeError(name, expected, *v);
    return std::nullopt;
  }
  const int64_t i = v->is_number_float() ? static_cast<int64_t>(v->get<double>()) : v->get<int64_t>();
  if (i < lo || i > hi) {
    TypeError(name, expected, *v);
    return std::nullopt;
  }
  return i;
}

std::optional<bool> FieldReader::Bool(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  if (!v->is_boolean()) {
    TypeError(name, "a boolean", *v);
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> FieldReader::String(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  if (!v->is_string()) {
    TypeError(name, "a string", *v);
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::string> FieldReader::Enum(const char* name, std::initializer_list<const char*> allowed) {
  std::optional<std::string> s = String(name);
  if (!s) return std::nullopt;
  std::string list;
  for (const char* a : allowed) {
    if (*s == a) return s;
    list += (list.empty() ? "" : ", ") + std::string("\"") + a + "\"";
  }
  TypeError(name, "one of " + list, *Raw(name));
  return std::nullopt;
}

std::optional<std::vector<std::string>> FieldReader::StringOrList(const char* name, size_t max) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return std::nullopt;
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      const nlohmann::json& item = (*v)[i];
      if (!item.is_string()) {
        Fail(name, Param(name) + "[" + std::to_string(i) + "] must be a string, got " + DescribeJson(item));
        return std::nullopt;
      }
      out.push_back(item.get<std::string>());
    }
  } else {
    TypeError(name, "a string or an array of strings", *v);
    return std::nullopt;
  }
  if (out.size() > max) {
    Fail(name, Param(name) + " may hold at most " + std::to_string(max) + " entries, got " +
                   std::to_string(out.size()));
    return std::nullopt;
  }
  return out;
}

const nlohmann::json* FieldReader::Object(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return nullptr;
  if (!v->is_object()) {
    TypeError(name, "an object", *v);
    return nullptr;
  }
  return v;
}

const nlohmann::json* FieldReader::Array(const char* name) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return nullptr;
  if (!v->is_array()) {
    TypeError(name, "an array", *v);
    return nullptr;
  }
  return v;
}

void FieldReader::Unsupported(const char* name, const std::string& why) {
  const nlohmann::json* v = Raw(name);
  if (v == nullptr || failed_) return;
  const bool harmless = (v->is_boolean() && !v->get<bool>()) ||
                        (v->is_string() && v->get_ref<const std::string&>().empty()) ||
                        ((v->is_object() || v->is_array()) && v->empty());
  if (!harmless) {
    failed_ = true;
    error_ = ApiError{
        Unimplemented(Param(name) + " is not supported by this server" + (why.empty() ? "" : ": " + why)),
        Param(name), false};
  }
}

}  // namespace lockstep::server
