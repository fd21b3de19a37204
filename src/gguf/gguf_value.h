// GgufValue: one GGUF metadata value (scalar, string or array, arrays may nest), as read from or written to a
// file. Integer accessors accept any integer type that holds the value; value type, safe to copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lockstep {

// Metadata value types as numbered in the GGUF format.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* GgufTypeName(GgufType type);
bool IsValidGgufType(uint32_t raw);

class GgufValue {
 public:
  struct Array {
    GgufType element_type = GgufType::kUint8;
    std::vector<GgufValue> elements;
  };

  GgufValue() : type_(GgufType::kUint8), data_(uint64_t{0}) {}
  static GgufValue Uint8(uint8_t v) { return {GgufType::kUint8, uint64_t{v}}; }
  static GgufValue Int8(int8_t v) { return {GgufType::kInt8, int64_t{v}}; }
  static GgufValue Uint16(uint16_t v) { return {GgufType::kUint16, uint64_t{v}}; }
  static GgufValue Int16(int16_t v) { return {GgufType::kInt16, int64_t{v}}; }
  static GgufValue Uint32(uint32_t v) { return {GgufType::kUint32, uint64_t{v}}; }
  static GgufValue Int32(int32_t v) { return {GgufType::kInt32, int64_t{v}}; }
  static GgufValue Uint64(uint64_t v) { return {GgufType::kUint64, v}; }
  static GgufValue Int64(int64_t v) { return {GgufType::kInt64, v}; }
  static GgufValue Float32(float v) { return {GgufType::kFloat32, double{v}}; }
  static GgufValue Float64(double v) { return {GgufType::kFloat64, v}; }
  static GgufValue Bool(bool v) { return {GgufType::kBool, v}; }
  static GgufValue String(std::string v) { return {GgufType::kString, std::move(v)}; }
  static GgufValue MakeArray(GgufType element_type, std::vector<GgufValue> elements) {
    return {GgufType::kArray, Array{element_type, std::move(elements)}};
  }
  static GgufValue StringArray(const std::vector<std::string>& values);
  static GgufValue Float32Array(const std::vector<float>& values);
  static GgufValue Int32Array(const std::vector<int32_t>& values);

  GgufType type() const { return type_; }
  bool is_integer() const;
  bool is_float() const { return type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64; }

  // Typed views; nullopt when the value is not of a compatible type (or an integer does not fit).
  std::optional<int64_t> AsInt() const;
  std::optional<uint64_t> AsUint() const;
  std::optional<double> AsDouble() const;  // floats, and integers converted
  std::optional<bool> AsBool() const;
  const std::string* AsString() const;
  const Array* AsArray() const;

  // Short human-readable rendering ("32000", "\"llama\"", "[string × 32000]").
  std::string ToDisplayString() const;

 private:
  using Storage = std::variant<uint64_t, int64_t, double, bool, std::string, Array>;
  GgufValue(GgufType type, Storage data) : type_(type), data_(std::move(data)) {}
  GgufType type_;
  Storage data_;
};

}  // namespace lockstep
