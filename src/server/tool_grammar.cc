#include "server/tool_grammar.h"

#include <algorithm>
#include <set>

#include "chat/harmony.h"
#include "grammar/gbnf_builder.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_stops.h"
#include "grammar/regex_to_gbnf.h"
#include "server/structured_fields.h"
#include "server/tool_call_deepseek.h"
#include "server/tool_call_dsml.h"
#include "server/tool_call_gemma4.h"
#include "server/tool_call_kimi.h"
#include "server/tool_call_parts.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;
using grammar::GbnfLiteral;

constexpr std::string_view kDsmlPrefix = "<｜DSML｜";
constexpr std::string_view kDsmlParameterEnd = "</｜DSML｜parameter>";

// Rewrites local $refs of a schema embedded at `prefix` ("#/items/anyOf/0/properties/arguments").
void RebaseRefs(Ordered& schema, const std::string& prefix) {
  if (schema.is_object()) {
    for (auto& [key, value] : schema.items()) {
      if (key == "$ref" && value.is_string() && value.get<std::string>().rfind('#', 0) == 0) {
        value = prefix + value.get<std::string>().substr(1);
      } else {
        RebaseRefs(value, prefix);
      }
    }
  } else if (schema.is_array()) {
    for (auto& v : schema) RebaseRefs(v, prefix);
  }
}

std::string ParamName(size_t i) { return "tools[" + std::to_string(i) + "].function.parameters"; }

// The kJson grammar: a JSON array of {name, arguments} (required) or the named function's arguments.
Parsed<std::string> JsonForcedGbnf(const ToolSpec& spec) {
  if (spec.choice == ToolChoice::kNamed) {
    const size_t i = tool_parts::ToolIndex(spec, spec.named);
    return SchemaGbnf(spec.parameters[i], ParamName(i));
  }
  Ordered branches = Ordered::array();
  for (size_t i = 0; i < spec.names.size(); ++i) {
    Ordered params = spec.parameters[i];
    RebaseRefs(params, "#/items/anyOf/" + std::to_string(i) + "/properties/arguments");
    branches.push_back({{"type", "object"},
                        {"properties", {{"name", {{"const", spec.names[i]}}}, {"arguments", params}}},
                        {"required", {"name", "arguments"}},
                        {"additionalProperties", false}});
  }
  const Ordered schema = {{"type", "array"},
                          {"minItems", 1},
                          {"maxItems", spec.parallel ? kMaxParallelToolCalls : 1},
                          {"items", {{"anyOf", branches}}}};
  return SchemaGbnf(schema, "tools");
}

// The texts a syntax's parser searches for inside a call (tool_calls.cc, tool_call_*.cc) before it reads the
// values, so that no raw text and no JSON string may hold them as written: the call would end early.
// (DeepSeek's, Kimi's, Mistral's and Gemma 4's parsers read JSON and Gemma values by their structure.)
std::vector<std::string> StopsOf(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes:
      return {"</tool_call>"};
    case ToolSyntax::kGlm:
      return {"</arg_value>", "</tool_call>"};
    case ToolSyntax::kQwenXml:
      return {"</parameter>", "<parameter=", "</function>", "</tool_call>"};
    case ToolSyntax::kDsml:
    case ToolSyntax::kDsmlV4:
      return {std::string(kDsmlParameterEnd)};
    case ToolSyntax::kHarmony:  // where a message ends (chat/harmony.cc MessageEnd)
      return {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
    default:
      return {};
  }
}

// Collects one grammar from the generated parts: the rules of each schema under its own prefix, then ours.
class ForcedGrammar {
 public:
  explicit ForcedGrammar(ToolSyntax syntax) : stops_(StopsOf(syntax)) {}
  // The texts no value holds as written.
  const std::vector<std::string>& stops() const { return stops_; }
  // The rule producing tool i's arguments (an object valid against its parameters) in `syntax`.
  Parsed<std::string> Arguments(const ToolSpec& spec, size_t i, grammar::ValueSyntax syntax) {
    return Value(spec.parameters[i], ParamName(i), syntax);
  }
  Parsed<std::string> Value(const Ordered& schema, const std::string& param, grammar::ValueSyntax syntax) {
    auto rules = grammar::JsonSchemaRules(schema, syntax, "s" + std::to_string(schemas_++) + "-", stops_);
    if (!rules.ok()) return ApiError::Field(param, param + ": " + rules.status().message());
    text_ += rules->gbnf;
    return rules->root;
  }
  grammar::GbnfBuilder& builder() { return b_; }
  std::string Text(const std::string& root) const { return "root ::= " + root + "\n" + b_.Text() + text_; }

 private:
  std::vector<std::string> stops_;
  grammar::GbnfBuilder b_{"f-"};
  std::string text_;
  int schemas_ = 0;
};

// How a key/value syntax writes one parameter: GBNF before the value (given the key's GBNF and whether the
// value is raw text) and after it, and what ends the key for its parser (no key may hold it).
struct ParamForm {
  std::string (*open)(const std::string& key, bool raw);
  std::string close;
  std::string key_end;
};
std::string DsmlOpen(const std::string& key, bool raw) {
  return GbnfLiteral(std::string(kDsmlPrefix) + "parameter name=\"") + " " + key + " " +
         GbnfLiteral(std::string("\" string=\"") + (raw ? "true" : "false") + "\">");
}
std::string GlmOpen(const std::string& key, bool) {
  return "\"<arg_key>\" " + key + " \"</arg_key>\" \"\\n\"? \"<arg_value>\"";
}
std::string XmlOpen(const std::string& key, bool) { return "\"<parameter=\" " + key + " \">\\n\""; }
ParamForm FormOf(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kGlm:
      return {GlmOpen, "\"</arg_value>\" \"\\n\"?", "</arg_key>"};
    case ToolSyntax::kQwenXml:
      return {XmlOpen, "\"\\n</parameter>\\n\"", ">"};
    default:
      return {DsmlOpen, GbnfLiteral(std::string(kDsmlParameterEnd) + "\n"), "\""};
  }
}

// The parameters of tool i in a key/value syntax (DSML, GLM, Qwen3-Coder's XML): its top-level properties in
// order (the optional ones may be left out).
Parsed<std::string> KeyValueParameters(const ToolSpec& spec, size_t i, ToolSyntax syntax, ForcedGrammar& g) {
  const Ordered& schema = spec.parameters[i];
  const ParamForm form = FormOf(syntax);
  auto open = form.open;
  const std::string& close = form.close;
  const std::string raw_text = g.builder().AddTextWithout("raw-text", g.stops());
  if (!schema.is_object() || !schema.contains("properties") || !schema["properties"].is_object()) {
    // Any names, each value JSON.
    auto value = g.Value(Ordered::object(), ParamName(i), grammar::ValueSyntax::kJson);
    if (!value.ok()) return value.error;
    const std::string one = open("[a-zA-Z0-9_.-]{1,64}", false) + " " + *value.value + " " + close;
    return "( " + one + " )*";
  }
  std::vector<std::string> required;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const Ordered& r : schema["required"]) {
      if (r.is_string()) required.push_back(r.get<std::string>());
    }
  }
  auto holds_stop = [&](const std::string& v) {
    return std::any_of(g.stops().begin(), g.stops().end(),
                       [&](const std::string& stop) { return v.find(stop) != std::string::npos; });
  };
  std::string out;
  for (const auto& [key, property] : schema["properties"].items()) {
    const std::string where = ParamName(i) + ".properties." + key;
    // A name the parser would end early, or read as another, cannot be written: every key/value parser
    // refuses an empty name (the call would be text), and GLM's drops the spaces around a name (as
    // llama.cpp's GLM-4.5 parser strips them).
    std::string unreadable;
    if (key.find(form.key_end) != std::string::npos) {
      unreadable = "holds " + form.key_end;
    } else if (holds_stop(key)) {
      unreadable = "holds a tag";
    } else if (key.empty()) {
      unreadable = "is empty";
    } else if (syntax == ToolSyntax::kGlm && tool_parts::TrimSpace(key).size() != key.size()) {
      unreadable = "begins or ends with whitespace";
    }
    if (!unreadable.empty()) {
      return ApiError::Field(where, where + ": the property name '" + key + "' " + unreadable +
                                        ", which the model's call syntax cannot write in a name");
    }
    std::string value;
    const bool dsml = syntax == ToolSyntax::kDsml || syntax == ToolSyntax::kDsmlV4;
    const tool_parts::ValueForm raw =
        tool_parts::KeyValueForm(property, tool_parts::PropertyTypes(property), /*raw_null=*/!dsml);
    // A constant holding a tag the parser splits on cannot be written as raw text (nor as JSON, which the
    // parser would read back with its quotes): left out, and a 400 when nothing is left.
    const std::string unwritable = where + ": a value holding a tag of the model's call syntax (" +
                                   (g.stops().empty() ? "" : g.stops()[0]) + ", ...) cannot be written";
    const std::string null = raw.nullable ? " | \"null\"" : "";
    if (raw.raw && property.contains("enum")) {
      for (const Ordered& v : property["enum"]) {
        if (v.is_string() && !holds_stop(v.get<std::string>()))
          value += (value.empty() ? "" : " | ") + GbnfLiteral(v.get<std::string>());
        if (v.is_null()) value += std::string(value.empty() ? "" : " | ") + "\"null\"";
      }
      if (value.empty()) return ApiError::Field(where, unwritable);
      value = "( " + value + " )";
    } else if (raw.raw && property.contains("const")) {
      if (property["const"].is_null()) {
        value = "\"null\"";
      } else {
        if (holds_stop(property["const"].get<std::string>())) return ApiError::Field(where, unwritable);
        value = GbnfLiteral(property["const"].get<std::string>());
      }
    } else if (raw.raw && property.contains("pattern") && property["pattern"].is_string()) {
      // The stops' first characters ('<') left out of its classes, so that no tag can be spelled.
      const std::set<uint32_t> firsts = grammar::StopFirsts(g.stops());
      auto expr = grammar::RegexToGbnf(property["pattern"].get<std::string>(), /*json_string=*/false, firsts);
      if (!expr.ok()) return ApiError::Field(where, where + ": " + expr.status().message());
      value = "( " + *expr + null + " )";
    } else if (raw.raw) {  // the text "null" among them
      value = raw_text;
    } else {
      // JSON, its $refs resolved against the whole parameters schema's definitions.
      Ordered sub = property;
      for (const char* defs : {"$defs", "definitions"}) {
        if (sub.is_object() && schema.contains(defs) && !sub.contains(defs)) sub[defs] = schema[defs];
      }
      auto rule = g.Value(sub, where, grammar::ValueSyntax::kJson);
      if (!rule.ok()) return rule.error;
      value = *rule.value;
    }
    const std::string one = open(GbnfLiteral(key), raw.raw) + " " + value + " " + close;
    const bool needed = std::find(required.begin(), required.end(), key) != required.end();
    out += (out.empty() ? "" : " ") + (needed ? one : "( " + one + " )?");
  }
  return out.empty() ? std::string("\"\"") : out;
}

// One call of tool i in `syntax`.
Parsed<std::string> Call(const ToolSpec& spec, size_t i, ToolSyntax syntax, ForcedGrammar& g) {
  const std::string& name = spec.names[i];
  auto json_args = [&]() { return g.Arguments(spec, i, grammar::ValueSyntax::kJson); };
  Parsed<std::string> args = std::string();
  std::string before, after;
  switch (syntax) {
    case ToolSyntax::kHermes:
      args = json_args();
      before = "<tool_call>\n{\"name\": " + Ordered(name).dump() + ", \"arguments\": ";
      after = "}\n</tool_call>";
      break;
    case ToolSyntax::kMistral: {
      // Mistral Small 3.2's and Devstral's templates write the call's id; Ministral 3's does not.
      args = json_args();
      if (!args.ok()) return args;
      return GbnfLiteral("[TOOL_CALLS]" + name) + " ( \"[CALL_ID]\" [a-zA-Z0-9]{9} )? \"[ARGS]\" " +
             *args.value;
    }
    case ToolSyntax::kMistralV3: {
      args = json_args();
      if (!args.ok()) return args;
      return GbnfLiteral("{\"name\": " + Ordered(name).dump() + ", \"arguments\": ") + " " + *args.value +
             " ( \", \\\"id\\\": \\\"\" [a-zA-Z0-9]{9} \"\\\"\" )? \"}\"";
    }
    case ToolSyntax::kDeepSeek:
      args = json_args();
      before = std::string(kDeepSeekCallBegin) + name + std::string(kDeepSeekSep);
      after = std::string(kDeepSeekCallEnd);
      break;
    case ToolSyntax::kDeepSeekR1:
      args = json_args();
      before =
          std::string(kDeepSeekCallBegin) + "function" + std::string(kDeepSeekSep) + name + "\n```json\n";
      after = "\n```" + std::string(kDeepSeekCallEnd);
      break;
    case ToolSyntax::kKimi: {
      args = json_args();
      if (!args.ok()) return args;
      return GbnfLiteral(std::string(kKimiCallBegin) + "functions." + name + ":") + " [0-9]{1,2} " +
             GbnfLiteral(kKimiArgumentBegin) + " " + *args.value + " " + GbnfLiteral(kKimiCallEnd);
    }
    case ToolSyntax::kDsml:
    case ToolSyntax::kDsmlV4:
      args = KeyValueParameters(spec, i, syntax, g);
      before = std::string(kDsmlPrefix) + "invoke name=\"" + name + "\">\n";
      after = "</" + std::string(kDsmlPrefix.substr(1)) + "invoke>\n";
      break;
    case ToolSyntax::kGlm: {  // GLM-4.6 puts newlines between the parts, 4.7 and 5 none
      args = KeyValueParameters(spec, i, syntax, g);
      if (!args.ok()) return args;
      return GbnfLiteral("<tool_call>" + name) + " \"\\n\"? " + *args.value + " \"</tool_call>\"";
    }
    case ToolSyntax::kQwenXml:
      args = KeyValueParameters(spec, i, syntax, g);
      before = "<tool_call>\n<function=" + name + ">\n";
      after = "</function>\n</tool_call>";
      break;
    case ToolSyntax::kGemma4:
      args = g.Arguments(spec, i, grammar::ValueSyntax::kGemma4);
      before = std::string(kGemma4CallBegin) + "call:" + name;
      after = std::string(kGemma4CallEnd);
      break;
    case ToolSyntax::kHarmony: {
      // After the generation prompt's <|start|>assistant: the header as the model writes it, or as the
      // template writes a call; <|call|> ends generation (not in the text).
      args = json_args();
      if (!args.ok()) return args;
      const std::string to = "to=functions." + name;
      return "( " + GbnfLiteral("<|channel|>commentary " + to) + " \" \"? " +
             GbnfLiteral("<|constrain|>json<|message|>") + " | " +
             GbnfLiteral(" " + to + "<|channel|>commentary") +
             " ( \" json\" | \" <|constrain|>json\" ) \"<|message|>\" ) " + *args.value;
    }
    case ToolSyntax::kJson:
      break;
  }
  if (!args.ok()) return args;
  return GbnfLiteral(before) + " " + *args.value + (after.empty() ? "" : " " + GbnfLiteral(after));
}

// The text around the calls and between them, per syntax.
struct Frame {
  std::string open, separator, close;
  bool close_optional = false;
};
Frame FrameOf(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes:
    case ToolSyntax::kQwenXml:
      return {"", "\n", ""};
    case ToolSyntax::kGlm:
      return {"", "\n?", ""};
    case ToolSyntax::kMistralV3:
      return {"[TOOL_CALLS][", ", ", "]"};
    case ToolSyntax::kDeepSeek:
      return {std::string(kDeepSeekCallsBegin), "", std::string(kDeepSeekCallsEnd)};
    case ToolSyntax::kDeepSeekR1:
      // R1's template closes the section only after a second call; the model may close it after one.
      return {std::string(kDeepSeekCallsBegin), "\n", std::string(kDeepSeekCallsEnd), true};
    case ToolSyntax::kKimi:
      return {std::string(kKimiSectionBegin), "", std::string(kKimiSectionEnd)};
    case ToolSyntax::kDsml:
      return {std::string(kDsmlFunctionCallsBegin) + "\n", "",
              "</" + std::string(kDsmlFunctionCallsBegin.substr(1))};
    case ToolSyntax::kDsmlV4:
      return {std::string(kDsmlToolCallsBegin) + "\n", "", "</" + std::string(kDsmlToolCallsBegin.substr(1))};
    default:
      return {};
  }
}

}  // namespace

ToolSyntax DetectToolSyntax(std::string_view source) {
  if (chat::IsHarmonyTemplate(source)) return ToolSyntax::kHarmony;
  auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("<|tool_call>call:")) return ToolSyntax::kGemma4;
  if (has("｜DSML｜")) return has("tool_calls>") ? ToolSyntax::kDsmlV4 : ToolSyntax::kDsml;
  if (has(kDeepSeekCallBegin)) return has("```json") ? ToolSyntax::kDeepSeekR1 : ToolSyntax::kDeepSeek;
  if (has(kKimiSectionBegin)) return ToolSyntax::kKimi;
  // GLM's key/value calls and Qwen3-Coder's XML calls also use <tool_call>.
  if (has("<arg_key>")) return ToolSyntax::kGlm;
  if (has("<function=") && has("<parameter=")) return ToolSyntax::kQwenXml;
  if (has("[TOOL_CALLS]")) return has("[ARGS]") ? ToolSyntax::kMistral : ToolSyntax::kMistralV3;
  if (has("<tool_call>")) return ToolSyntax::kHermes;
  return ToolSyntax::kJson;
}

std::string_view ToolSyntaxName(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kJson:
      return "json";
    case ToolSyntax::kHermes:
      return "hermes";
    case ToolSyntax::kMistral:
      return "mistral";
    case ToolSyntax::kMistralV3:
      return "mistral-v3";
    case ToolSyntax::kDeepSeek:
      return "deepseek";
    case ToolSyntax::kDeepSeekR1:
      return "deepseek-r1";
    case ToolSyntax::kKimi:
      return "kimi";
    case ToolSyntax::kDsml:
      return "dsml";
    case ToolSyntax::kDsmlV4:
      return "dsml-v4";
    case ToolSyntax::kGemma4:
      return "gemma4";
    case ToolSyntax::kGlm:
      return "glm";
    case ToolSyntax::kQwenXml:
      return "qwen-xml";
    case ToolSyntax::kHarmony:
      return "harmony";
  }
  return "json";
}

Parsed<std::string> ForcedToolGbnf(const ToolSpec& spec, const std::optional<chat::ReasoningTags>& reasoning,
                                   bool opened) {
  if (!spec.forced()) return std::string();
  if (spec.syntax == ToolSyntax::kJson) return JsonForcedGbnf(spec);
  ForcedGrammar g(spec.syntax);
  std::string alts;
  for (size_t i = 0; i < spec.names.size(); ++i) {
    if (spec.choice == ToolChoice::kNamed && spec.names[i] != spec.named) continue;
    auto call = Call(spec, i, spec.syntax, g);
    if (!call.ok()) return call;
    alts += (alts.empty() ? "" : " | ") + *call.value;
  }
  const std::string call = g.builder().Add("call", alts);
  const Frame frame = FrameOf(spec.syntax);
  // Harmony's <|call|> ends the reply: one call.
  const int more =
      spec.choice == ToolChoice::kRequired && spec.parallel && spec.syntax != ToolSyntax::kHarmony
          ? kMaxParallelToolCalls - 1
          : 0;
  std::string calls = call;
  if (more > 0) {
    const std::string separator = frame.separator == "\n?"  ? "\"\\n\"? "
                                  : frame.separator.empty() ? ""
                                                            : GbnfLiteral(frame.separator) + " ";
    calls += " ( " + separator + call + " ){0," + std::to_string(more) + "}";
  }
  std::string root = (frame.open.empty() ? "" : GbnfLiteral(frame.open) + " ") + calls;
  if (!frame.close.empty()) root += " " + GbnfLiteral(frame.close) + (frame.close_optional ? "?" : "");
  if (reasoning && spec.syntax == ToolSyntax::kHarmony) {
    // Harmony's reasoning is an analysis message (whatever the tags; the prompt never opens one).
    const std::string text = g.builder().AddTextWithout("thought", g.stops());
    root = "( \"<|channel|>analysis<|message|>\" " + text + " \"<|end|><|start|>assistant\" )? " + root;
  } else if (reasoning) {
    // One reasoning block first (its rest when the prompt opened it), then the calls.
    const std::string text = g.builder().AddTextWithout("thought", reasoning->close);
    const std::string block = text + " " + GbnfLiteral(reasoning->close) + " [ \\n]{0,4}";
    root = (opened ? block : "( " + GbnfLiteral(reasoning->open) + " " + block + " )?") + " " + root;
  }
  return g.Text(root);
}

}  // namespace lockstep::server
