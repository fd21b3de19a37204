#include "jinja/builtins.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

namespace lockstep::jinja {
namespace {

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string Strip(const std::string& s, bool left, bool right, const Value* chars) {
  const auto strip_char = [&](char c) {
    return chars && chars->IsString() ? chars->AsString().find(c) != std::string::npos : IsWs(c);
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && strip_char(s[b])) ++b;
  if (right)
    while (e > b && strip_char(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string Title(std::string s) {
  bool start = true;
  for (char& c : s) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c));
    c = static_cast<char>(alpha ? (start ? std::toupper(c) : std::tolower(c)) : c);
    start = !alpha;
  }
  return s;
}
std::string Replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t at = s.find(from, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += to;
    CheckStringSize(out);
    pos = at + from.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// Attribute lookup used by selectattr / map(attribute=) / sort(attribute=): "a.b" paths.
Value Attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    cur = cur.GetKey(part);
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

// The items select / reject / selectattr / rejectattr / map go over: none for a false value (none,
// undefined, an empty string), as Jinja2's run `if value: for item in value`.
Array ItemsIfAny(const Value& value) { return value.Truthy() ? value.Iterate() : Array{}; }

Value SelectAttr(const Value& value, const CallArgs& args, bool select) {
  const std::string attr = args.Required(0, "attribute", "selectattr").AsString();
  CallArgs test_args;
  for (size_t i = 2; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  Array out;
  for (const Value& item : ItemsIfAny(value)) {
    const Value a = Attribute(item, attr);
    const bool ok =
        args.positional.size() > 1 ? ApplyTest(args.positional[1].AsString(), a, test_args) : a.Truthy();
    if (ok == select) out.push_back(item);
  }
  return Value::MakeArray(std::move(out));
}

}  // namespace

Value ApplyFilter(const std::string& name, const Value& value, const CallArgs& args) {
  if (name == "trim") return Value(Strip(value.ToString(), true, true, args.Get(0, "chars")));
  if (name == "length" || name == "count") return Value(value.Length());
  if (name == "tojson") {
    const Value* indent = args.Get(0, "indent");
    return Value(value.ToJson(indent && indent->IsNumber() ? static_cast<int>(indent->AsInt()) : -1));
  }
  if (name == "upper") return Value(Upper(value.ToString()));
  if (name == "lower") return Value(Lower(value.ToString()));
  if (name == "title") return Value(Title(value.ToString()));
  if (name == "capitalize") {
    std::string s = Lower(value.ToString());
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return Value(s);
  }
  if (name == "string") return Value(value.ToString());
  if (name == "safe" || name == "e" || name == "escape")
    return value.IsString() ? value : Value(value.ToString());
  if (name == "default" || name == "d") {
    const Value* boolean = args.Get(1, "boolean");
    const bool use_default = value.IsUndefined() || (boolean && boolean->Truthy() && !value.Truthy());
    const Value* fallback = args.Get(0, "default_value");
    return use_default ? (fallback ? *fallback : Value(std::string())) : value;
  }
  if (name == "join") {
    const Value* sep = args.Get(0, "d");
    const Value* attr = args.Get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : value.Iterate()) {
      if (!first && sep) out += sep->ToString();
      out += (attr ? Attribute(item, attr->AsString()) : item).ToString();
      CheckStringSize(out);
      first = false;
    }
    return Value(out);
  }
  if (name == "first" || name == "last") {
    const Array items = value.Iterate();
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::MakeArray(value.Iterate());
  if (name == "reverse") {
    if (value.IsString()) return Value(std::string(value.AsString().rbegin(), value.AsString().rend()));
    Array items = value.Iterate();
    std::reverse(items.begin(), items.end());
    return Value::MakeArray(std::move(items));
  }
  if (name == "int") {
    if (value.IsString()) {
      try {
        return Value(static_cast<int64_t>(std::stoll(value.AsString())));
      } catch (...) {
        return Value(0);
      }
    }
    return value.IsNumber() || value.kind() == Value::Kind::kBool ? Value(value.AsInt()) : Value(0);
  }
  if (name == "float") {
    if (value.IsString()) {
      try {
        return Value(std::stod(value.AsString()));
      } catch (...) {
        return Value(0.0);
      }
    }
    return value.IsNumber() ? Value(value.AsDouble()) : Value(0.0);
  }
  if (name == "abs") {
    if (value.kind() != Value::Kind::kInt) return Value(std::fabs(value.AsDouble()));
    if (value.AsInt() == std::numeric_limits<int64_t>::min()) throw Error("integer overflow in 'abs'");
    return Value(static_cast<int64_t>(std::llabs(value.AsInt())));
  }
  if (name == "items") return CallMethod(value, "items", {});
  if (name == "replace") {
    const Value* count = args.Get(2, "count");
    return Value(Replace(value.ToString(), args.Required(0, "old", "replace").ToString(),
                         args.Required(1, "new", "replace").ToString(), count ? count->AsInt() : -1));
  }
  if (name == "selectattr") return SelectAttr(value, args, true);
  if (name == "rejectattr") return SelectAttr(value, args, false);
  if (name == "select" || name == "reject") {
    Array out;
    CallArgs test_args;
    for (size_t i = 1; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
    for (const Value& item : ItemsIfAny(value)) {
      const bool ok =
          args.positional.empty() ? item.Truthy() : ApplyTest(args.positional[0].AsString(), item, test_args);
      if (ok == (name == "select")) out.push_back(item);
    }
    return Value::MakeArray(std::move(out));
  }
  if (name == "map") {
    Array out;
    const Value* attr = args.Get(99, "attribute");
    for (const Value& item : ItemsIfAny(value)) {
      if (attr) {
        out.push_back(Attribute(item, attr->AsString()));
      } else {
        CallArgs rest;
        for (size_t i = 1; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
        out.push_back(ApplyFilter(args.Required(0, "filter", "map").AsString(), item, rest));
      }
    }
    return Value::MakeArray(std::move(out));
  }
  if (name == "unique") {
    Array out;
    for (const Value& item : value.Iterate()) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return o.Equals(item); }))
        out.push_back(item);
    }
    return Value::MakeArray(std::move(out));
  }
  if (name == "sort") {
    Array items = value.Iterate();
    const Value* reverse = args.Get(0, "reverse");
    const Value* attr = args.Get(2, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      return attr ? Attribute(a, attr->AsString()).Less(Attribute(b, attr->AsString())) : a.Less(b);
    });
    if (reverse && reverse->Truthy()) std::reverse(items.begin(), items.end());
    return Value::MakeArray(std::move(items));
  }
  if (name == "dictsort") {
    Value items = CallMethod(value, "items", {});
    Array sorted = items.AsArray();
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Value& a, const Value& b) { return a.AsArray()[0].Less(b.AsArray()[0]); });
    return Value::MakeArray(std::move(sorted));
  }
  if (name == "indent") {
    const Value* width = args.Get(0, "width");
    const Value* first = args.Get(1, "first");
    const int64_t pad_width = width ? width->AsInt() : 4;
    if (pad_width < 0 || pad_width > 1024) throw Error("indent width must be in 0..1024");
    const std::string pad(static_cast<size_t>(pad_width), ' ');
    std::string s = value.ToString(), out;
    for (size_t i = 0; i < s.size(); ++i) {
      out += s[i];
      if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') {
        out += pad;
        CheckStringSize(out);
      }
    }
    return Value((first && first->Truthy() ? pad : std::string()) + out);
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (char c : value.ToString()) {
      if (!IsWs(c) && !in_word) ++n;
      in_word = !IsWs(c);
    }
    return Value(n);
  }
  throw Error("unknown filter '" + name + "'");
}

bool ApplyTest(const std::string& name, const Value& value, const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !value.IsUndefined();
  if (name == "undefined") return value.IsUndefined();
  if (name == "none") return value.IsNone();
  if (name == "string") return value.IsString();
  if (name == "number") return value.IsNumber();
  if (name == "integer") return value.kind() == K::kInt;
  if (name == "float") return value.kind() == K::kFloat;
  if (name == "boolean") return value.kind() == K::kBool;
  if (name == "true") return value.kind() == K::kBool && value.AsBool();
  if (name == "false") return value.kind() == K::kBool && !value.AsBool();
  if (name == "mapping") return value.IsObject();
  if (name == "sequence") return value.IsArray() || value.IsString() || value.IsObject();
  if (name == "iterable") return value.IsArray() || value.IsString() || value.IsObject();
  if (name == "callable") return value.IsCallable();
  if (name == "odd") return value.AsInt() % 2 != 0;
  if (name == "even") return value.AsInt() % 2 == 0;
  if (name == "divisibleby") {
    const int64_t divisor = args.Required(0, "num", "divisibleby").AsInt();
    if (divisor == 0) throw Error("division by zero in 'divisibleby'");
    return divisor == -1 || value.AsInt() % divisor == 0;  // INT64_MIN % -1 is undefined in C++
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas")
    return value.Equals(args.Required(0, "other", "eq"));
  if (name == "ne" || name == "!=") return !value.Equals(args.Required(0, "other", "ne"));
  if (name == "lt" || name == "lessthan") return value.Less(args.Required(0, "other", "lt"));
  if (name == "gt" || name == "greaterthan") return args.Required(0, "other", "gt").Less(value);
  if (name == "le") return !args.Required(0, "other", "le").Less(value);
  if (name == "ge") return !value.Less(args.Required(0, "other", "ge"));
  if (name == "in") return BinaryOp("in", value, args.Required(0, "seq", "in")).Truthy();
  if (name == "lower") return value.IsString() && Lower(value.AsString()) == value.AsString();
  if (name == "upper") return value.IsString() && Upper(value.AsString()) == value.AsString();
  throw Error("unknown test '" + name + "'");
}

bool HasMethod(const Value& value, const std::string& name) {
  static const char* kString[] = {"strip",    "lstrip", "rstrip", "split", "startswith",
                                  "endswith", "upper",  "lower",  "title", "capitalize",
                                  "replace",  "find",   "count",  "join",  "format"};
  static const char* kObject[] = {"items", "keys", "values", "get"};
  if (value.IsString())
    return std::any_of(std::begin(kString), std::end(kString), [&](const char* m) { return name == m; });
  if (value.IsObject())
    return std::any_of(std::begin(kObject), std::end(kObject), [&](const char* m) { return name == m; });
  return false;
}

Value CallMethod(const Value& value, const std::string& name, const CallArgs& args) {
  if (value.IsString()) {
    const std::string& s = value.AsString();
    if (name == "strip") return Value(Strip(s, true, true, args.Get(0, "chars")));
    if (name == "lstrip") return Value(Strip(s, true, false, args.Get(0, "chars")));
    if (name == "rstrip") return Value(Strip(s, false, true, args.Get(0, "chars")));
    if (name == "upper") return Value(Upper(s));
    if (name == "lower") return Value(Lower(s));
    if (name == "title") return Value(Title(s));
    if (name == "capitalize") return ApplyFilter("capitalize", value, args);
    if (name == "startswith" || name == "endswith") {
      const std::string p = args.Required(0, "prefix", name).ToString();
      const bool ok =
          p.size() <= s.size() && (name == "startswith" ? s.compare(0, p.size(), p) == 0
                                                        : s.compare(s.size() - p.size(), p.size(), p) == 0);
      return Value(ok);
    }
    if (name == "replace") {
      const Value* count = args.Get(2, "count");
      return Value(Replace(s, args.Required(0, "old", "replace").ToString(),
                           args.Required(1, "new", "replace").ToString(), count ? count->AsInt() : -1));
    }
    if (name == "find") {
      const size_t at = s.find(args.Required(0, "sub", "find").ToString());
      return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
    }
    if (name == "count") {
      const std::string sub = args.Required(0, "sub", "count").ToString();
      int64_t n = 0;
      for (size_t at = s.find(sub); !sub.empty() && at != std::string::npos;
           at = s.find(sub, at + sub.size()))
        ++n;
      return Value(n);
    }
    if (name == "join") {
      std::string out;
      bool first = true;
      for (const Value& item : args.Required(0, "iterable", "join").Iterate()) {
        if (!first) out += s;
        out += item.ToString();
        first = false;
      }
      return Value(out);
    }
    if (name == "split") {
      const Value* sep = args.Get(0, "sep");
      Array parts;
      if (sep == nullptr || sep->IsNone()) {
        size_t i = 0;
        while (i < s.size()) {
          while (i < s.size() && IsWs(s[i])) ++i;
          const size_t start = i;
          while (i < s.size() && !IsWs(s[i])) ++i;
          if (i > start) parts.emplace_back(s.substr(start, i - start));
        }
      } else {
        const std::string d = sep->ToString();
        if (d.empty()) throw Error("split: empty separator");
        size_t pos = 0;
        for (size_t at; (at = s.find(d, pos)) != std::string::npos; pos = at + d.size())
          parts.emplace_back(s.substr(pos, at - pos));
        parts.emplace_back(s.substr(pos));
      }
      return Value::MakeArray(std::move(parts));
    }
  }
  if (value.IsObject()) {
    if (name == "items") {
      Array items;
      for (const auto& [k, v] : value.AsObject()) items.push_back(Value::MakeArray({KeyValue(k), v}));
      return Value::MakeArray(std::move(items));
    }
    if (name == "keys" || name == "values") {
      Array items;
      for (const auto& [k, v] : value.AsObject()) items.push_back(name == "keys" ? KeyValue(k) : v);
      return Value::MakeArray(std::move(items));
    }
    if (name == "get") {
      const Value v = value.GetKey(DictKey(args.Required(0, "key", "get")));
      const Value* fallback = args.Get(1, "default");
      return v.IsUndefined() ? (fallback ? *fallback : Value::None()) : v;
    }
  }
  throw Error(value.TypeName() + " has no method '" + name + "'");
}

Value MakeGlobals() {
  Object globals;
  globals.emplace_back(
      "raise_exception", Value::MakeCallable([](const CallArgs& args) -> Value {
        const Value* message = args.Get(0, "message");
        throw Error("template raised an exception: " + (message ? message->ToString() : std::string()));
      }));
  globals.emplace_back("namespace", Value::MakeCallable([](const CallArgs& args) {
                         Object attrs;
                         for (const auto& [k, v] : args.keyword) attrs.emplace_back(k, v);
                         return Value::MakeNamespace(std::move(attrs));
                       }));
  globals.emplace_back("range", Value::MakeCallable([](const CallArgs& args) {
                         int64_t start = 0, stop = 0, step = 1;
                         if (args.positional.size() == 1) {
                           stop = args.positional[0].AsInt();
                         } else if (args.positional.size() >= 2) {
                           start = args.positional[0].AsInt();
                           stop = args.positional[1].AsInt();
                           if (args.positional.size() > 2) step = args.positional[2].AsInt();
                         }
                         if (step == 0) throw Error("range() step must not be zero");
                         Array items;
                         for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
                           items.emplace_back(i);
                           if (items.size() > 100000) throw Error("range() too long");
                           if (__builtin_add_overflow(i, step, &i)) break;  // past int64: past stop
                         }
                         return Value::MakeArray(std::move(items));
                       }));
  globals.emplace_back(
      "strftime_now", Value::MakeCallable([](const CallArgs& args) {
        const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
        std::tm tm{};
        gmtime_r(&now, &tm);
        char buf[128];
        const size_t n = std::strftime(buf, sizeof(buf),
                                       args.Required(0, "format", "strftime_now").ToString().c_str(), &tm);
        return Value(std::string(buf, n));
      }));
  return Value::MakeObject(std::move(globals));
}

}  // namespace lockstep::jinja
