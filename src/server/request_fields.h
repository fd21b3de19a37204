// FieldReader: THE rule for reading client JSON on every API route. Each read checks the JSON type (and the
// range) of one field and, on a mismatch, keeps the first problem as an ApiError naming the field and the
// JSON type it got ("temperature must be a number between 0 and 2, got a string \"hot\""); later reads after
// a failure return nullopt / nullptr. null counts as absent. Nothing reads client JSON without a FieldReader
// (no nlohmann value()/get<>() on unchecked values: they throw on another type), and no error path recurses
// over client values (DescribeJson names the type; it never dumps arrays or objects), so a wrong type is a
// clean 400/422 and a deep value cannot overflow the stack. Single-threaded value type.
//
// Bodies are parsed by ParseJsonObject, and JSON text inside a client string by ParseJsonText; both refuse
// nesting deeper than kMaxJsonDepth, so code that walks a request value (templates, schemas) never recurses
// much deeper than that.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace lockstep::server {

// Arrays/objects nested deeper than this are refused (as serde_json, and so TGI, does by default).
inline constexpr int kMaxJsonDepth = 128;

// Parses a request body that must be a JSON object (malformed JSON, or nesting deeper than kMaxJsonDepth →
// ApiError with malformed_json).
Parsed<nlohmann::json> ParseJsonObject(const std::string& body);

// JSON text that a client sent inside a string field (a tool call's `arguments`, a schema given as a
// string), parsed under the body's rule: nesting deeper than kMaxJsonDepth is refused before parsing (the
// value is later dumped, copied and rendered recursively). Errors name `param`: "<param> nests arrays or
// objects deeper than 128 levels", or `not_json` when the text does not parse.
Parsed<nlohmann::ordered_json> ParseJsonText(const std::string& text, const std::string& param,
                                             const std::string& not_json);

// True when `text` nests arrays/objects deeper than `limit` (outside strings). Linear, no recursion; does not
// validate the JSON otherwise.
bool NestsDeeperThan(std::string_view text, int limit);

// A short, non-recursive description of a client value for error messages: its JSON type, plus the value
// itself for scalars (a string as an Excerpt of 40 bytes): `a string "hot"`, `a number 3`, `true`, `null`,
// `an array of 2 items`, `an object`.
std::string DescribeJson(const nlohmann::json& v);

class FieldReader {
 public:
  // `object` should be a JSON object (a non-object reads as having no fields); `prefix` names it in errors
  // ("parameters" → "parameters.top_k").
  explicit FieldReader(const nlohmann::json& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  bool Has(const char* name) const;
  const nlohmann::json* Raw(const char* name) const;  // nullptr when absent or null; type unchecked
  std::optional<double> Number(const char* name, double lo, double hi, bool lo_exclusive = false);
  std::optional<int64_t> Int(const char* name, int64_t lo, int64_t hi);
  std::optional<bool> Bool(const char* name);
  std::optional<std::string> String(const char* name);
  // A string that must be one of `allowed`.
  std::optional<std::string> Enum(const char* name, std::initializer_list<const char*> allowed);
  // A string or an array of at most `max` strings.
  std::optional<std::vector<std::string>> StringOrList(const char* name, size_t max);
  // An object / array field (nullptr when absent, null, or of another type — then the reader has failed).
  const nlohmann::json* Object(const char* name);
  const nlohmann::json* Array(const char* name);
  // Rejects a field this server does not support unless it holds one of the harmless values (null, false,
  // empty string/object/array).
  void Unsupported(const char* name, const std::string& why);

  // Records a failure for field `name` (relative to the prefix) unless one is recorded already.
  void Fail(const std::string& name, const std::string& message);
  // Takes over the first failure of a reader of a nested value (if this one has none yet).
  void Absorb(const FieldReader& nested);
  bool failed() const { return failed_; }
  const ApiError& error() const { return error_; }
  // The full name of a field: "parameters.top_k".
  std::string Param(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }

 private:
  void TypeError(const char* name, const std::string& expected, const nlohmann::json& got);

  const nlohmann::json& object_;
  std::string prefix_;
  bool failed_ = false;
  ApiError error_;
};

// JSON text of a value, safe for invalid UTF-8 (replaced by U+FFFD); what every response uses. Recursive:
// only for values the server built (responses), never for client values.
std::string DumpJson(const nlohmann::json& j);

}  // namespace lockstep::server
