// jinja::Value: the dynamically typed value of the Jinja-subset interpreter used for chat templates
// (Python-like semantics: undefined, none, bool, int, float, str, list, dict with insertion order, callable).
// Lists and dicts are shared by reference like Python objects (so `namespace()` attributes can be assigned).
// Not thread-safe; each render owns its values. Errors inside the interpreter are thrown as jinja::Error and
// turned into a Status at the public boundary (chat_template.h); nothing else sees the exception.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::jinja {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;

// Arguments of a call: positional then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The positional argument `index`, or the keyword `name`, or nullptr.
  const Value* Get(size_t index, const std::string& name) const;
};
using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kCallable };

  Value() = default;  // undefined
  static Value None();
  Value(bool b);                                    // NOLINT
  Value(int64_t i);                                 // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double d);                                  // NOLINT
  Value(std::string s);                             // NOLINT
  Value(const char* s) : Value(std::string(s)) {}   // NOLINT
  static Value MakeArray(Array items = {});
  static Value MakeObject(Object items = {});
  static Value MakeCallable(Function fn);
  static Value FromJson(const nlohmann::json& j);
  static Value FromJson(const nlohmann::ordered_json& j);  // keeps the keys' order

  Kind kind() const { return kind_; }
  bool IsUndefined() const { return kind_ == Kind::kUndefined; }
  bool IsNone() const { return kind_ == Kind::kNone; }
  bool IsString() const { return kind_ == Kind::kString; }
  bool IsNumber() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool IsArray() const { return kind_ == Kind::kArray; }
  bool IsObject() const { return kind_ == Kind::kObject; }
  bool IsCallable() const { return kind_ == Kind::kCallable; }

  bool AsBool() const { return b_; }
  int64_t AsInt() const;  // int, or float truncated, or bool
  double AsDouble() const;
  const std::string& AsString() const { return s_; }
  Array& AsArray() const { return *array_; }
  Object& AsObject() const { return *object_; }
  const Function& AsCallable() const { return *fn_; }

  // Python truthiness.
  bool Truthy() const;
  // Python str(): what {{ x }} prints ("" for undefined, "None", "True", "1.5", "['a', 1]").
  std::string ToString() const;
  // Python repr() (strings quoted), used inside containers.
  std::string Repr() const;
  // json.dumps(x, ensure_ascii=False, indent=indent) as the `tojson` filter does; indent < 0 = none.
  std::string ToJson(int indent = -1) const;
  // Dict lookup; undefined when absent or not a dict.
  Value GetKey(const std::string& key) const;
  // Sets (or appends) a dict entry.
  void SetKey(const std::string& key, Value value) const;
  // Python ==.
  bool Equals(const Value& other) const;
  // Python <; throws Error for unorderable types.
  bool Less(const Value& other) const;
  // Length of str/list/dict; throws otherwise.
  int64_t Length() const;
  // The items iterated by `for x in value` (dict → keys); throws when not iterable.
  Array Iterate() const;
  std::string TypeName() const;

 private:
  void DumpJson(std::string& out, int indent, int depth) const;

  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<Function> fn_;
};

}  // namespace lockstep::jinja
