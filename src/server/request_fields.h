// FieldReader: typed, range-checked access to the fields of a JSON request object, for both API flavours.
// null counts as absent. The first problem is kept as an ApiError naming the field (e.g. "temperature must be
// a number between 0 and 2, got \"hot\""); later reads after a failure return nullopt. Single-threaded value
// type.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace lockstep::server {

// Parses a request body that must be a JSON object (malformed JSON → ApiError with malformed_json).
Parsed<nlohmann::json> ParseJsonObject(const std::string& body);

class FieldReader {
 public:
  explicit FieldReader(const nlohmann::json& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  bool Has(const char* name) const;
  const nlohmann::json* Raw(const char* name) const;  // nullptr when absent or null
  std::optional<double> Number(const char* name, double lo, double hi, bool lo_exclusive = false);
  std::optional<int64_t> Int(const char* name, int64_t lo, int64_t hi);
  std::optional<bool> Bool(const char* name);
  std::optional<std::string> String(const char* name);
  // A string or an array of at most `max` strings.
  std::optional<std::vector<std::string>> StringOrList(const char* name, size_t max);
  // Rejects a field this server does not support unless it holds one of the harmless values (null, false,
  // empty string/object/array).
  void Unsupported(const char* name, const std::string& why);

  void Fail(const std::string& name, const std::string& message);
  bool failed() const { return failed_; }
  const ApiError& error() const { return error_; }
  std::string Param(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }

 private:
  const nlohmann::json& object_;
  std::string prefix_;
  bool failed_ = false;
  ApiError error_;
};

// JSON text of a value, safe for invalid UTF-8 (replaced by U+FFFD); what every response uses.
std::string DumpJson(const nlohmann::json& j);

}  // namespace lockstep::server
