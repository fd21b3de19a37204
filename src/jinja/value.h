// jinja::Value: the dynamically typed value of the Jinja-subset interpreter used for chat templates
// (Python-like semantics: undefined, none, bool, int, float, str, list, dict with insertion order, callable).
// Lists and dicts are shared by reference like Python objects (so `namespace()` attributes can be assigned).
// Limits that keep a hostile template (from a model file) from exhausting the stack or memory, each an Error:
// lists and dicts nest at most kMaxDepth levels; only namespaces are mutable (attribute assignment, as in
// Jinja2), and lists through their methods (jinja/list_methods.h), which add only strings, numbers, booleans
// and none; a namespace never holds a namespace, so no value contains itself (no reference cycles) and a
// namespace changed after being put in a list still leaves the nesting under 2 * kMaxDepth; a string is at
// most kMaxStringBytes (printing a value that would be longer stops there).
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
// A dict's entries by key. Keys are strings; a key that was an int (a template's {512: 128}, as Seed-OSS's
// has) is kept as DictKey writes it, a mark byte no UTF-8 text holds (0xFF) and its decimal digits, and reads
// back as that int (KeyValue): d[512] finds it, d['512'] does not, and iteration, dictsort, repr and tojson
// see an int, as in Python.
using Object = std::vector<std::pair<std::string, Value>>;
std::string DictKey(const Value& key);   // an int marked, anything else as str() prints it
Value KeyValue(const std::string& key);  // the key as the template sees it

// Arguments of a call: positional then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The positional argument `index`, or the keyword `name`, or nullptr.
  const Value* Get(size_t index, const std::string& name) const;
  // The same, or an Error "`callee` is missing its argument 'name'" (callee: "replace", "list.pop()").
  const Value& Required(size_t index, const std::string& name, const std::string& callee) const;
};
using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kCallable };
  static constexpr int kMaxDepth = 256;
  static constexpr size_t kMaxStringBytes = size_t{16} << 20;

  Value() = default;  // undefined
  static Value None();
  Value(bool b);                                    // NOLINT
  Value(int64_t i);                                 // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double d);                                  // NOLINT
  Value(std::string s);                             // NOLINT  (Error past kMaxStringBytes)
  Value(const char* s) : Value(std::string(s)) {}   // NOLINT
  // Error when the result would nest deeper than kMaxDepth.
  static Value MakeArray(Array items = {});
  static Value MakeObject(Object items = {});
  // namespace(): the one mutable kind of dict (SetKey); its attributes may not hold a namespace.
  static Value MakeNamespace(Object items);
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
  // Sets (or appends) a namespace attribute; Error for any other value, or a value that holds a namespace
  // or nests kMaxDepth deep.
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
  // Counts `element` in this new list's or dict's nesting; Error past kMaxDepth.
  void AddNestingOf(const Value& element);

  Kind kind_ = Kind::kUndefined;
  bool namespace_ = false;        // made by MakeNamespace
  bool holds_namespace_ = false;  // a list or dict with a namespace somewhere inside (when made)
  int depth_ = 0;                 // lists and dicts: 1 + the deepest element's (when made)
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<Function> fn_;
};

// Error when a string being built has grown past Value::kMaxStringBytes (call as it grows).
void CheckStringSize(size_t bytes);
void CheckStringSize(const std::string& s);

}  // namespace lockstep::jinja
