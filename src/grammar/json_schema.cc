// Hand-written: no Debian library converts JSON schemas to grammars.
#include "grammar/json_schema.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include "base/excerpt.h"
#include "grammar/gbnf_builder.h"
#include "grammar/gemma4_value.h"
#include "grammar/grammar.h"
#include "grammar/json_other_key.h"
#include "grammar/json_schema_rules.h"
#include "grammar/json_stops.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::string Quantifier(int64_t min, int64_t max) {  // max < 0: unbounded
  if (min == 0 && max < 0) return "*";
  if (min == 1 && max < 0) return "+";
  if (min == 0 && max == 1) return "?";
  std::string out = "{";
  out += std::to_string(min);
  if (min != max) {
    out += ',';
    if (max >= 0) out += std::to_string(max);
  }
  out += '}';
  return out;
}

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, ValueSyntax syntax, const std::string& prefix,
                  const std::vector<std::string>& stops)
      : root_(root),
        syntax_(syntax),
        primitives_(syntax == ValueSyntax::kGemma4 ? std::span<const NamedRule>(kGemma4PrimitiveRules)
                                                   : std::span<const NamedRule>(kPrimitiveRules)),
        prefix_(prefix),
        b_(prefix),
        stops_(gemma() ? std::vector<std::string>() : stops),
        firsts_(StopFirsts(stops_)) {}

  Result<SchemaRules> Convert() {
    const std::string expr = Visit(root_, "root", "");
    if (!error_.ok()) return error_;
    const std::string root = expr == prefix_ + "root" ? expr : b_.Add("root", expr);
    return SchemaRules{b_.Text(), root};
  }

 private:
  bool Fail(const std::string& pointer, const std::string& message) {
    if (error_.ok())
      error_ = InvalidArgument("JSON schema" + (pointer.empty() ? "" : " at " + pointer) + ": " + message);
    return false;
  }

  bool gemma() const { return syntax_ == ValueSyntax::kGemma4; }

  std::string Prim(const std::string& name) {
    if (auto it = prims_.find(name); it != prims_.end()) return it->second;
    const std::string reserved = b_.Reserve(name);
    prims_[name] = reserved;
    if (gemma() && name == "string") {
      b_.Define(reserved, Quoted(b_.AddTextWithout("text", kGemma4Quote)));
      return reserved;
    }
    if (!stops_.empty() && name == "string") {  // any text but the stops, as written (escapes reset)
      const std::string escape = "[\\\\] ([\"\\\\/bfnrt] | \"u\" " + Prim("unicode-escape") + ")";
      b_.Define(reserved, Quoted(b_.AddTextWithout("chars", stops_, R"("\\\x7F\x00-\x1F)", escape)));
      return reserved;
    }
    const std::string_view* found = FindRule(primitives_, name);
    LOCKSTEP_CHECK(found != nullptr);
    const std::string_view body = *found;
    // Rewrite references to other primitives to their actual names (adding them).
    std::string out, word;
    auto flush = [&] {
      if (!word.empty())
        out += FindRule(primitives_, word) != nullptr || word == "string" ? Prim(word) : word;
      word.clear();
    };
    bool in_literal = false, in_class = false;
    for (size_t i = 0; i < body.size(); ++i) {
      const char c = body[i];
      if (!in_literal && !in_class && ((c >= 'a' && c <= 'z') || c == '-')) {
        word += c;
        continue;
      }
      flush();
      if (c == '\\' && (in_literal || in_class) && i + 1 < body.size()) {
        out += c;
        out += body[++i];
        continue;
      }
      if (c == '"' && !in_class) in_literal = !in_literal;
      if (c == '[' && !in_literal) in_class = true;
      if (c == ']' && !in_literal) in_class = false;
      out += c;
    }
    flush();
    if (name == "char" && !gemma() && !firsts_.empty()) {  // length-bounded strings: no stop can start
      out.insert(out.find("[^") + 2, ClassBody(firsts_));
    }
    b_.Define(reserved, out);
    return reserved;
  }

  std::string Space() { return Prim("space"); }
  std::string Quoted(const std::string& inner) {
    const std::string quote = gemma() ? GbnfLiteral(kGemma4Quote) : "\"\\\"\"";
    return quote + " " + inner + " " + quote + " " + Space();
  }
  // A constant value's text in this syntax.
  std::string Literal(const Json& v) {
    return GbnfLiteral(gemma() ? Gemma4ValueText(v) : EscapeCodepoints(v.dump(), firsts_));
  }
  // An object key as written: JSON's quoted string, or Gemma's bare identifier (quoted where it is not one).
  std::string KeyLiteral(const std::string& key) {
    if (!gemma()) return GbnfLiteral(EscapeCodepoints(Json(key).dump(), firsts_));
    return GbnfLiteral(Gemma4KeyText(key));
  }

  bool CheckKeywords(const Json& s, const std::string& pointer) {
    for (const auto& [key, value] : s.items()) {
      if (IsOneOf(kSchemaKeywords, key) || IsOneOf(kSchemaAnnotations, key) || key.rfind("x-", 0) == 0)
        continue;
      if (key == "uniqueItems" && value == false) continue;
      return Fail(pointer, "keyword '" + Excerpt(key) + "' is not supported");
    }
    return true;
  }

  std::string Visit(const Json& s, const std::string& name, const std::string& pointer) {
    if (!error_.ok()) return "";
    if (depth_ == kMaxSchemaDepth) {
      return Fail(pointer, "schemas nested more than " + std::to_string(kMaxSchemaDepth) +
                               " deep (subschemas and $ref chains) are not supported"),
             "";
    }
    ++depth_;
    std::string expr = VisitSchema(s, name, pointer);
    --depth_;
    return expr;
  }

  std::string VisitSchema(const Json& s, const std::string& name, const std::string& pointer) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return Prim("value");
      return Fail(pointer, "the schema false matches nothing"), "";
    }
    if (!s.is_object()) return Fail(pointer, "a schema must be an object or a boolean"), "";
    if (!CheckKeywords(s, pointer)) return "";
    auto only_with = [&](const char* keyword) {
      for (const auto& [key, value] : s.items()) {
        if (key != keyword && IsOneOf(kSchemaKeywords, key) && key != "nullable") {
          return Fail(pointer, "keyword '" + Excerpt(key) + "' beside '" + keyword + "' is not supported");
        }
      }
      return true;
    };
    std::string expr;
    if (s.contains("$ref")) {
      if (!only_with("$ref")) return "";
      expr = Ref(s["$ref"], pointer);
    } else if (s.contains("const")) {
      expr = Literal(s["const"]) + " " + Space();
    } else if (s.contains("enum")) {
      const Json& values = s["enum"];
      if (!values.is_array() || values.empty()) return Fail(pointer, "enum must be a non-empty array"), "";
      std::string alts;
      for (const Json& v : values) alts += (alts.empty() ? "" : " | ") + Literal(v);
      expr = "( " + alts + " ) " + Space();
    } else if (s.contains("anyOf") || s.contains("oneOf")) {
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      if (!only_with(key)) return "";
      const Json& branches = s[key];
      if (!branches.is_array() || branches.empty())
        return Fail(pointer, std::string(key) + " must be a non-empty array"), "";
      std::string alts;
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string e =
            Visit(branches[i], name + "-" + std::to_string(i), pointer + "/" + key + "/" + std::to_string(i));
        alts += (alts.empty() ? "" : " | ") + e;
      }
      expr = "( " + alts + " )";
    } else if (s.contains("allOf")) {
      if (!only_with("allOf")) return "";
      expr = AllOf(s["allOf"], name, pointer + "/allOf");
    } else {
      expr = Typed(s, name, pointer);
    }
    if (!error_.ok()) return "";
    if (const auto nullable = s.find("nullable"); nullable != s.end()) {
      if (!nullable->is_boolean())
        return Fail(pointer + "/nullable",
                    std::string("nullable must be a boolean, got ") + nullable->type_name()),
               "";
      if (nullable->get<bool>()) expr = "( " + expr + " | " + Prim("null") + " )";
    }
    return b_.Add(name, expr);
  }

  std::string Typed(const Json& s, const std::string& name, const std::string& pointer) {
    if (!s.contains("type")) {
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
        return Object(s, name, pointer);
      }
      if (s.contains("items") || s.contains("prefixItems")) return Array(s, name, pointer);
      if (s.contains("pattern") || s.contains("format") || s.contains("minLength") ||
          s.contains("maxLength")) {
        return String(s, pointer);
      }
      if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
          s.contains("exclusiveMaximum")) {
        return Number(s, name, pointer, false);
      }
      return Prim("value");
    }
    const Json& type = s["type"];
    if (type.is_array()) {
      if (type.empty()) return Fail(pointer, "type must not be an empty list"), "";
      std::string alts;
      for (const Json& t : type) {
        if (!t.is_string()) return Fail(pointer + "/type", "type names must be strings"), "";
        alts += (alts.empty() ? "" : " | ") + OneType(s, t.get<std::string>(), name, pointer);
      }
      return "( " + alts + " )";
    }
    if (!type.is_string()) return Fail(pointer + "/type", "type must be a string or a list of strings"), "";
    return OneType(s, type.get<std::string>(), name, pointer);
  }

  std::string OneType(const Json& s, const std::string& type, const std::string& name,
                      const std::string& pointer) {
    if (type == "object") return Object(s, name, pointer);
    if (type == "array") return Array(s, name, pointer);
    if (type == "string") return String(s, pointer);
    if (type == "integer" || type == "number") return Number(s, name, pointer, type == "integer");
    if (type == "boolean") return Prim("boolean");
    if (type == "null") return Prim("null");
    return Fail(pointer + "/type", "unknown type '" + Excerpt(type) + "'"), "";
  }

  std::string Ref(const Json& ref, const std::string& pointer) {
    if (!ref.is_string()) return Fail(pointer + "/$ref", "$ref must be a string"), "";
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.empty() || target[0] != '#') {
      return Fail(pointer + "/$ref",
                  "only local references ('#/...') are supported, got '" + Excerpt(target) + "'"),
             "";
    }
    const Json* node = &root_;
    std::string last = "ref";
    for (size_t p = 1; p < target.size();) {
      if (target[p] != '/')
        return Fail(pointer + "/$ref", "malformed JSON pointer '" + Excerpt(target) + "'"), "";
      const size_t next = std::min(target.find('/', p + 1), target.size());
      std::string token;  // JSON pointer unescaping: ~1 is '/', ~0 is '~'
      for (size_t i = p + 1; i < next; ++i) {
        if (target[i] == '~' && i + 1 < next && (target[i + 1] == '0' || target[i + 1] == '1')) {
          token += target[++i] == '1' ? '/' : '~';
        } else {
          token += target[i];
        }
      }
      size_t index = 0;  // an array index: digits only, no overflow (std::stoul would throw past 2^64)
      const bool is_index =
          !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
          std::from_chars(token.data(), token.data() + token.size(), index).ec == std::errc();
      if (node->is_object() && node->contains(token)) {
        node = &(*node)[token];
      } else if (node->is_array() && is_index && index < node->size()) {
        node = &(*node)[index];
      } else {
        return Fail(pointer + "/$ref", "'" + Excerpt(target) + "' does not resolve in this schema"), "";
      }
      last = token;
      p = next;
    }
    const std::string rule = b_.Reserve("ref-" + last);
    refs_[target] = rule;
    const std::string expr = Visit(*node, rule + "-body", target.substr(1));
    b_.Define(rule, expr);
    return rule;
  }

  // allOf: every branch must be an object schema (possibly through $ref); their properties and required
  // lists are merged. A single branch is just that schema.
  std::string AllOf(const Json& branches, const std::string& name, const std::string& pointer) {
    if (!branches.is_array() || branches.empty()) return Fail(pointer, "allOf must be a non-empty array"), "";
    if (branches.size() == 1) return Visit(branches[0], name, pointer + "/0");
    Json merged = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
    for (size_t i = 0; i < branches.size(); ++i) {
      const Json* b = &branches[i];
      for (int hops = 0; b != nullptr && b->is_object() && b->contains("$ref") && hops < 32; ++hops)
        b = Resolve((*b)["$ref"]);
      if (b == nullptr || !b->is_object() || !b->contains("properties")) {
        return Fail(pointer + "/" + std::to_string(i),
                    "allOf is supported only over object schemas with properties"),
               "";
      }
      for (const auto& [k, v] : (*b)["properties"].items()) merged["properties"][k] = v;
      if (b->contains("required")) {
        for (const Json& r : (*b)["required"]) merged["required"].push_back(r);
      }
      if (b->contains("additionalProperties")) merged["additionalProperties"] = (*b)["additionalProperties"];
    }
    return Object(merged, name, pointer);
  }

  const Json* Resolve(const Json& ref) {
    if (!ref.is_string()) return nullptr;
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') return nullptr;
    try {
      return &root_.at(Json::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  std::string Object(const Json& s, const std::string& name, const std::string& pointer) {
    const Json empty = Json::object();
    const Json& props = s.contains("properties") ? s["properties"] : empty;
    if (!props.is_object()) return Fail(pointer + "/properties", "properties must be an object"), "";
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Fail(pointer + "/required", "required must be an array"), "";
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return Fail(pointer + "/required", "required must list property names"), "";
        required.insert(r.get<std::string>());
      }
    }
    struct Prop {
      std::string key;
      std::string kv;
      bool required;
    };
    std::vector<Prop> list;
    std::set<std::string> listed;
    for (const auto& [key, value] : props.items()) {
      const std::string v = Visit(value, name + "-" + key, pointer + "/properties/" + key);
      list.push_back(
          {key,
           b_.Add(name + "-" + key + "-kv", KeyLiteral(key) + " " + Space() + " \":\" " + Space() + " " + v),
           required.count(key) != 0});
      listed.insert(key);
    }
    for (const std::string& key : required) {
      if (listed.count(key)) continue;
      list.push_back({key,
                      b_.Add(name + "-" + key + "-kv",
                             KeyLiteral(key) + " " + Space() + " \":\" " + Space() + " " + Prim("value")),
                      true});
      listed.insert(key);
    }
    if (!error_.ok()) return "";
    if (gemma()) {  // its template writes the keys through dictsort: sorted case-insensitively
      std::stable_sort(list.begin(), list.end(), [](const Prop& a, const Prop& b) {
        return Gemma4KeyOrder(a.key) < Gemma4KeyOrder(b.key);
      });
    }
    // Additional properties: absent means none when properties are listed (as llama.cpp), any otherwise.
    std::string extra;
    const bool has_additional = s.contains("additionalProperties");
    static const Json kAny = true, kNone = false;  // referenced, not copied: a subschema can be large
    const Json& additional =
        has_additional ? s["additionalProperties"] : (s.contains("properties") ? kNone : kAny);
    if (!(additional.is_boolean() && !additional.get<bool>())) {
      const std::string value = Visit(additional, name + "-additional", pointer + "/additionalProperties");
      const std::string key = gemma() ? Prim("key") : OtherKey(listed, name, pointer);
      extra = b_.Add(name + "-additional-kv", key + " \":\" " + Space() + " " + value);
    }
    // rest(i, first): properties i.. in order, optional ones skippable, commas only between.
    std::map<std::pair<size_t, bool>, std::string> memo;
    std::function<std::string(size_t, bool)> rest = [&](size_t i, bool first) -> std::string {
      if (auto it = memo.find({i, first}); it != memo.end()) return it->second;
      std::string out;
      if (i == list.size()) {
        if (!extra.empty()) {
          out = first ? "( " + extra + " ( \",\" " + Space() + " " + extra + " )* )?"
                      : "( \",\" " + Space() + " " + extra + " )*";
        }
      } else {
        const std::string next = rest(i + 1, false);
        const std::string with =
            (first ? "" : "\",\" " + Space() + " ") + list[i].kv + (next.empty() ? "" : " " + next);
        if (list[i].required) {
          out = with;
        } else {
          const std::string skip = rest(i + 1, first);
          out = b_.Add(name + "-rest", with + " | " + (skip.empty() ? "\"\"" : skip));
        }
      }
      memo[{i, first}] = out;
      return out;
    };
    const std::string body = rest(0, true);
    return "\"{\" " + Space() + (body.empty() ? "" : " " + body) + " \"}\" " + Space();
  }

  // A JSON string key that is none of `keys` (grammar/json_other_key.h).
  std::string OtherKey(const std::set<std::string>& keys, const std::string& name,
                       const std::string& pointer) {
    if (keys.empty()) return Prim("string");
    const std::string ch = Prim("char");
    const auto key = OtherKeyExpr(keys, name, ch, Prim("unicode-escape"), firsts_, b_);
    if (!key) {
      return Fail(pointer,
                  "additionalProperties beside property names that need JSON escaping is not supported"),
             "";
    }
    return "\"\\\"\" " + *key + " " + Space();
  }

  std::string Array(const Json& s, const std::string& name, const std::string& pointer) {
    auto count = [&](const char* key, int64_t fallback) -> int64_t {
      if (!s.contains(key)) return fallback;
      const Json& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        return Fail(pointer + "/" + key, std::string(key) + " must be a non-negative integer"), 0;
      if (v.get<int64_t>() > kMaxRepetition)
        return Fail(pointer + "/" + key,
                    std::string(key) + " above " + std::to_string(kMaxRepetition) + " is not supported"),
               0;
      return v.get<int64_t>();
    };
    const int64_t min = count("minItems", 0), max = count("maxItems", -1);
    if (!error_.ok()) return "";
    if (max >= 0 && max < min) return Fail(pointer, "maxItems is smaller than minItems"), "";
    const std::string comma = "\",\" " + Space() + " ";
    std::vector<std::string> prefix;
    const Json* tuple = s.contains("prefixItems")
                            ? &s["prefixItems"]
                            : (s.contains("items") && s["items"].is_array() ? &s["items"] : nullptr);
    if (tuple != nullptr) {
      if (!tuple->is_array()) return Fail(pointer + "/prefixItems", "prefixItems must be an array"), "";
      for (size_t i = 0; i < tuple->size(); ++i) {
        prefix.push_back(Visit((*tuple)[i], name + "-" + std::to_string(i),
                               pointer + "/prefixItems/" + std::to_string(i)));
      }
    }
    std::string item;  // further items ("" = none)
    if (tuple == nullptr || (s.contains("prefixItems") && s.contains("items"))) {
      static const Json kAny = true;  // referenced, not copied
      const Json& items = s.contains("items") ? s["items"] : kAny;
      if (!(items.is_boolean() && !items.get<bool>()))
        item = Visit(items, name + "-item", pointer + "/items");
    }
    if (!error_.ok()) return "";
    const int64_t n = int64_t(prefix.size());
    if (max >= 0 && max < n)
      return Fail(pointer, "maxItems smaller than the prefixItems is not supported"), "";
    std::string body;
    for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " " + comma : "") + prefix[i];
    const int64_t extra_min = std::max<int64_t>(0, min - n), extra_max = max < 0 ? -1 : max - n;
    if (item.empty() && extra_min > 0)
      return Fail(pointer, "minItems needs more items than the schema allows"), "";
    if (!item.empty() && extra_max != 0) {
      if (n > 0) {
        body += " ( " + comma + item + " )" + Quantifier(extra_min, extra_max);
      } else if (extra_min > 0) {
        body = item + " ( " + comma + item + " )" +
               Quantifier(extra_min - 1, extra_max < 0 ? -1 : extra_max - 1);
      } else {
        body = "( " + item + " ( " + comma + item + " )" + Quantifier(0, extra_max < 0 ? -1 : extra_max - 1) +
               " )?";
      }
    }
    return "\"[\" " + Space() + " " + (body.empty() ? "" : body + " ") + "\"]\" " + Space();
  }

  std::string String(const Json& s, const std::string& pointer) {
    if (s.contains("pattern")) {
      if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
        return Fail(pointer, "pattern together with minLength, maxLength or format is not supported"), "";
      }
      if (!s["pattern"].is_string()) return Fail(pointer + "/pattern", "pattern must be a string"), "";
      auto expr = RegexToGbnf(s["pattern"].get<std::string>(), /*json_string=*/!gemma(), firsts_);
      if (!expr.ok()) return Fail(pointer + "/pattern", expr.status().message()), "";
      return Quoted(*expr);
    }
    if (s.contains("format")) {
      if (s.contains("minLength") || s.contains("maxLength")) {
        return Fail(pointer, "format together with minLength or maxLength is not supported"), "";
      }
      const std::string format = s["format"].is_string() ? s["format"].get<std::string>() : "";
      if (format == "date-time") {
        return Quoted(std::string(*FindRule(kFormatRules, "date")) + " \"T\" " +
                      std::string(*FindRule(kFormatRules, "time")));
      }
      if (const std::string_view* body = FindRule(kFormatRules, format)) return Quoted(std::string(*body));
      return Fail(pointer + "/format",
                  "format '" + Excerpt(format) + "' is not supported (date, time, date-time, uuid are)"),
             "";
    }
    auto length = [&](const char* key, int64_t fallback) -> int64_t {
      if (!s.contains(key)) return fallback;
      const Json& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxRepetition) {
        return Fail(pointer + "/" + key,
                    std::string(key) + " must be an integer from 0 to " + std::to_string(kMaxRepetition)),
               0;
      }
      return v.get<int64_t>();
    };
    const int64_t min = length("minLength", 0), max = length("maxLength", -1);
    if (max >= 0 && max < min) return Fail(pointer, "maxLength is smaller than minLength"), "";
    if (min == 0 && max < 0) return Prim("string");
    return Quoted(Prim("char") + Quantifier(min, max));
  }

  std::string Number(const Json& s, const std::string& name, const std::string& pointer, bool integer) {
    if (s.contains("multipleOf")) return Fail(pointer, "keyword 'multipleOf' is not supported"), "";
    std::optional<NumberBound> lo, hi;
    auto bound = [&](const char* key, bool inclusive, std::optional<NumberBound>* out,
                     bool tighter_is_greater) {
      if (!s.contains(key)) return;
      const Json& v = s[key];
      if (v.is_boolean()) return;  // draft 4 exclusive flags, applied below
      if (!v.is_number()) return (void)Fail(pointer + "/" + key, std::string(key) + " must be a number");
      auto d = ParseDecimal(v.dump());
      if (!d.ok()) return (void)Fail(pointer + "/" + key, d.status().message());
      NumberBound b{*d, inclusive};
      const int c = *out ? CompareDecimals(b.value, (*out)->value) : 0;
      if (!*out || (tighter_is_greater ? c > 0 : c < 0) || (c == 0 && !inclusive)) *out = b;
    };
    bound("minimum", !(s.value("exclusiveMinimum", Json(false)) == true), &lo, true);
    bound("exclusiveMinimum", false, &lo, true);
    bound("maximum", !(s.value("exclusiveMaximum", Json(false)) == true), &hi, false);
    bound("exclusiveMaximum", false, &hi, false);
    if (!error_.ok()) return "";
    if (!lo && !hi) return Prim(integer ? "integer" : "number");
    auto rule = AddNumberRange(&b_, name + "-range", lo, hi, integer);
    if (!rule.ok()) return Fail(pointer, rule.status().message()), "";
    return *rule + " " + Space();
  }

  const Json& root_;
  ValueSyntax syntax_;
  std::span<const NamedRule> primitives_;
  std::string prefix_;
  GbnfBuilder b_;
  Status error_;
  std::map<std::string, std::string> prims_;
  std::map<std::string, std::string> refs_;
  int depth_ = 0;                   // Visit calls open
  std::vector<std::string> stops_;  // texts no string holds as written (the JSON syntax only)
  std::set<uint32_t> firsts_;       // their first characters
};

// The deepest nesting of arrays and objects in `value`, counted without recursion (stopping past `limit`).
int JsonDepth(const nlohmann::ordered_json& value, int limit) {
  std::vector<std::pair<const nlohmann::ordered_json*, int>> stack = {{&value, 1}};
  int deepest = 0;
  while (!stack.empty() && deepest <= limit) {
    const auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, depth);
    for (const auto& child : *v) stack.push_back({&child, depth + 1});
  }
  return deepest;
}

}  // namespace

Result<SchemaRules> JsonSchemaRules(const nlohmann::ordered_json& schema, ValueSyntax syntax,
                                    const std::string& prefix, const std::vector<std::string>& stops) {
  if (JsonDepth(schema, kMaxSchemaJsonDepth) > kMaxSchemaJsonDepth) {
    return InvalidArgument("JSON schema nests arrays and objects more than " +
                           std::to_string(kMaxSchemaJsonDepth) + " levels deep");
  }
  return SchemaConverter(schema, syntax, prefix, stops).Convert();
}

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema) {
  LOCKSTEP_ASSIGN_OR_RETURN(SchemaRules rules, JsonSchemaRules(schema, ValueSyntax::kJson, "", {}));
  return std::move(rules.gbnf);
}

std::string JsonObjectGbnf() {
  auto text = JsonSchemaToGbnf(nlohmann::ordered_json{{"type", "object"}});
  LOCKSTEP_CHECK(text.ok());
  return *text;
}

}  // namespace lockstep::grammar
