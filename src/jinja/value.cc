#include "jinja/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace lockstep::jinja {

const Value* CallArgs::Get(size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

const Value& CallArgs::Required(size_t index, const std::string& name, const std::string& callee) const {
  const Value* v = Get(index, name);
  if (v == nullptr) throw Error(callee + " is missing its argument '" + name + "'");
  return *v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double d) : kind_(Kind::kFloat), d_(d) {}
void CheckStringSize(const std::string& s) { CheckStringSize(s.size()); }
void CheckStringSize(size_t bytes) {
  if (bytes > Value::kMaxStringBytes) {
    throw Error("a string longer than " + std::to_string(Value::kMaxStringBytes >> 20) + " MiB");
  }
}

Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) { CheckStringSize(s_); }

void Value::AddNestingOf(const Value& element) {
  depth_ = std::max(depth_, element.depth_ + 1);
  holds_namespace_ = holds_namespace_ || element.namespace_ || element.holds_namespace_;
  if (depth_ > kMaxDepth)
    throw Error("lists and dicts nested deeper than " + std::to_string(kMaxDepth) + " levels");
}

Value Value::MakeArray(Array items) {
  Value v;
  v.kind_ = Kind::kArray;
  v.depth_ = 1;
  for (const Value& item : items) v.AddNestingOf(item);
  v.array_ = std::make_shared<Array>(std::move(items));
  return v;
}
namespace {
constexpr char kIntKeyMark = '\xff';  // no UTF-8 text holds this byte
}  // namespace

std::string DictKey(const Value& key) {
  if (key.kind() != Value::Kind::kInt) return key.ToString();
  std::string marked(1, kIntKeyMark);
  marked += std::to_string(key.AsInt());
  return marked;
}

Value KeyValue(const std::string& key) {
  if (key.empty() || key[0] != kIntKeyMark) return Value(key);
  // Only DictKey writes the mark before digits; a template's own string literal could hold the byte too
  // (not UTF-8, but templates are bytes), and stays a string.
  int64_t i = 0;
  const char* end = key.data() + key.size();
  const auto [at, error] = std::from_chars(key.data() + 1, end, i);
  if (error != std::errc() || at != end || key.size() == 1) return Value(key);
  return Value(i);
}

Value Value::MakeObject(Object items) {
  Value v;
  v.kind_ = Kind::kObject;
  v.depth_ = 1;
  for (const auto& item : items) v.AddNestingOf(item.second);
  v.object_ = std::make_shared<Object>(std::move(items));
  return v;
}
Value Value::MakeNamespace(Object items) {
  for (const auto& [key, value] : items) {
    if (value.namespace_ || value.holds_namespace_)
      throw Error("namespace attribute '" + key + "' holds a namespace");
  }
  Value v = MakeObject(std::move(items));
  v.namespace_ = true;
  return v;
}
Value Value::MakeCallable(Function fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<Function>(std::move(fn));
  return v;
}

namespace {

template <typename Json>
Value ValueFromJson(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::None();
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      Array items;
      for (const auto& item : j) items.push_back(ValueFromJson(item));
      return Value::MakeArray(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Object items;
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), ValueFromJson(it.value()));
      return Value::MakeObject(std::move(items));
    }
    default:
      return Value();
  }
}

}  // namespace

Value Value::FromJson(const nlohmann::json& j) { return ValueFromJson(j); }
Value Value::FromJson(const nlohmann::ordered_json& j) { return ValueFromJson(j); }

int64_t Value::AsInt() const {
  switch (kind_) {
    case Kind::kInt:
      return i_;
    case Kind::kFloat:  // saturating: a cast of NaN or of a float out of int64's range is undefined
      if (std::isnan(d_)) return 0;
      if (d_ >= 0x1p63) return std::numeric_limits<int64_t>::max();
      if (d_ < -0x1p63) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(d_);
    case Kind::kBool:
      return b_ ? 1 : 0;
    default:
      throw Error("expected a number, got " + TypeName());
  }
}

double Value::AsDouble() const {
  if (kind_ == Kind::kFloat) return d_;
  return static_cast<double>(AsInt());
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return d_ != 0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kArray:
      return !array_->empty();
    case Kind::kObject:
      return !object_->empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

namespace {

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string PyQuote(const std::string& s) {
  const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

void JsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

std::string Value::ToString() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return FloatRepr(d_);
    case Kind::kString:
      return s_;
    case Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < array_->size(); ++i) {
        out += (i ? ", " : "") + (*array_)[i].Repr();
        CheckStringSize(out);
      }
      return out + "]";
    }
    case Kind::kObject: {
      std::string out = "{";
      for (size_t i = 0; i < object_->size(); ++i) {
        out += (i ? ", " : "") + KeyValue((*object_)[i].first).Repr() + ": " + (*object_)[i].second.Repr();
        CheckStringSize(out);
      }
      return out + "}";
    }
    case Kind::kCallable:
      return "<function>";
  }
  return "";
}

std::string Value::Repr() const { return kind_ == Kind::kString ? PyQuote(s_) : ToString(); }

void Value::DumpJson(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * d), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += b_ ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(i_);
      return;
    case Kind::kFloat: {
      const std::string r = FloatRepr(d_);
      out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
      return;
    }
    case Kind::kString:
      JsonString(out, s_);
      return;
    case Kind::kArray:
      if (array_->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < array_->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        (*array_)[i].DumpJson(out, indent, depth + 1);
        CheckStringSize(out);
      }
      newline(depth);
      out += ']';
      return;
    case Kind::kObject:
      if (object_->empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < object_->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        JsonString(out, KeyValue((*object_)[i].first).ToString());  // json.dumps writes int keys as strings
        out += ": ";
        (*object_)[i].second.DumpJson(out, indent, depth + 1);
        CheckStringSize(out);
      }
      newline(depth);
      out += '}';
      return;
    case Kind::kCallable:
      throw Error("a function cannot be converted to JSON");
  }
}

std::string Value::ToJson(int indent) const {
  std::string out;
  DumpJson(out, indent, 0);
  return out;
}

Value Value::GetKey(const std::string& key) const {
  if (kind_ != Kind::kObject) return Value();
  for (const auto& [k, v] : *object_) {
    if (k == key) return v;
  }
  return Value();
}

void Value::SetKey(const std::string& key, Value value) const {
  if (!namespace_)
    throw Error("cannot assign attribute '" + key + "' of a " + TypeName() + " (only of a namespace)");
  if (value.namespace_ || value.holds_namespace_) {
    throw Error("cannot assign a namespace (or a value holding one) to namespace attribute '" + key + "'");
  }
  if (value.depth_ >= kMaxDepth) {
    throw Error("lists and dicts nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  for (auto& [k, v] : *object_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  object_->emplace_back(key, std::move(value));
}

bool Value::Equals(const Value& other) const {
  if (IsNumber() && other.IsNumber()) {
    if (kind_ == Kind::kInt && other.kind_ == Kind::kInt) return i_ == other.i_;
    return AsDouble() == other.AsDouble();
  }
  if ((kind_ == Kind::kBool && other.IsNumber()) || (IsNumber() && other.kind_ == Kind::kBool)) {
    return AsDouble() == other.AsDouble();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return b_ == other.b_;
    case Kind::kString:
      return s_ == other.s_;
    case Kind::kArray: {
      if (array_->size() != other.array_->size()) return false;
      for (size_t i = 0; i < array_->size(); ++i) {
        if (!(*array_)[i].Equals((*other.array_)[i])) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (object_->size() != other.object_->size()) return false;
      for (const auto& [k, v] : *object_) {
        if (!v.Equals(other.GetKey(k))) return false;
      }
      return true;
    }
    default:
      return fn_ == other.fn_;
  }
}

bool Value::Less(const Value& other) const {
  if ((IsNumber() || kind_ == Kind::kBool) && (other.IsNumber() || other.kind_ == Kind::kBool)) {
    return AsDouble() < other.AsDouble();
  }
  if (IsString() && other.IsString()) return s_ < other.s_;
  if (IsArray() && other.IsArray()) {
    return std::lexicographical_compare(array_->begin(), array_->end(), other.array_->begin(),
                                        other.array_->end(),
                                        [](const Value& a, const Value& b) { return a.Less(b); });
  }
  throw Error("'<' not supported between " + TypeName() + " and " + other.TypeName());
}

int64_t Value::Length() const {
  switch (kind_) {
    case Kind::kString: {
      int64_t n = 0;  // code points, as Python counts them
      for (unsigned char c : s_) n += (c & 0xC0) != 0x80;
      return n;
    }
    case Kind::kArray:
      return static_cast<int64_t>(array_->size());
    case Kind::kObject:
      return static_cast<int64_t>(object_->size());
    default:
      throw Error("object of type " + TypeName() + " has no length");
  }
}

Array Value::Iterate() const {
  switch (kind_) {
    case Kind::kArray:
      return *array_;
    case Kind::kObject: {
      Array keys;
      for (const auto& [k, v] : *object_) keys.push_back(KeyValue(k));
      return keys;
    }
    case Kind::kString: {
      Array chars;
      for (size_t i = 0; i < s_.size();) {
        size_t n = 1;
        const unsigned char c = static_cast<unsigned char>(s_[i]);
        if (c >= 0xF0)
          n = 4;
        else if (c >= 0xE0)
          n = 3;
        else if (c >= 0xC0)
          n = 2;
        chars.emplace_back(s_.substr(i, n));
        i += n;
      }
      return chars;
    }
    case Kind::kUndefined:
      return {};
    default:
      throw Error(TypeName() + " is not iterable");
  }
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return "list";
    case Kind::kObject:
      return "dict";
    case Kind::kCallable:
      return "function";
  }
  return "?";
}

}  // namespace lockstep::jinja
