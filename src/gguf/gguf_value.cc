#include "gguf/gguf_value.h"

#include <limits>
#include <sstream>

namespace lockstep {

const char* GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "unknown";
}

bool IsValidGgufType(uint32_t raw) { return raw <= static_cast<uint32_t>(GgufType::kFloat64); }

GgufValue GgufValue::StringArray(const std::vector<std::string>& values) {
  std::vector<GgufValue> elements;
  elements.reserve(values.size());
  for (const std::string& v : values) elements.push_back(String(v));
  return MakeArray(GgufType::kString, std::move(elements));
}

GgufValue GgufValue::Float32Array(const std::vector<float>& values) {
  std::vector<GgufValue> elements;
  elements.reserve(values.size());
  for (float v : values) elements.push_back(Float32(v));
  return MakeArray(GgufType::kFloat32, std::move(elements));
}

GgufValue GgufValue::Int32Array(const std::vector<int32_t>& values) {
  std::vector<GgufValue> elements;
  elements.reserve(values.size());
  for (int32_t v : values) elements.push_back(Int32(v));
  return MakeArray(GgufType::kInt32, std::move(elements));
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&data_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(data_);
}

std::optional<uint64_t> GgufValue::AsUint() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&data_)) return *u;
  const int64_t i = std::get<int64_t>(data_);
  if (i < 0) return std::nullopt;
  return static_cast<uint64_t>(i);
}

std::optional<double> GgufValue::AsDouble() const {
  if (is_float()) return std::get<double>(data_);
  if (const auto* u = std::get_if<uint64_t>(&data_); u != nullptr && is_integer())
    return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&data_); i != nullptr && is_integer())
    return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufValue::AsBool() const {
  if (type_ != GgufType::kBool) return std::nullopt;
  return std::get<bool>(data_);
}

const std::string* GgufValue::AsString() const { return std::get_if<std::string>(&data_); }

const GgufValue::Array* GgufValue::AsArray() const { return std::get_if<Array>(&data_); }

std::string GgufValue::ToDisplayString() const {
  std::ostringstream out;
  switch (type_) {
    case GgufType::kBool:
      out << (std::get<bool>(data_) ? "true" : "false");
      break;
    case GgufType::kString: {
      const std::string& s = std::get<std::string>(data_);
      out << '"' << (s.size() > 60 ? s.substr(0, 57) + "..." : s) << '"';
      break;
    }
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      out << std::get<double>(data_);
      break;
    case GgufType::kArray: {
      const Array& a = std::get<Array>(data_);
      out << "[" << GgufTypeName(a.element_type) << " x " << a.elements.size() << "]";
      break;
    }
    default:
      if (const auto* u = std::get_if<uint64_t>(&data_)) {
        out << *u;
      } else {
        out << std::get<int64_t>(data_);
      }
  }
  return out.str();
}

}  // namespace lockstep
