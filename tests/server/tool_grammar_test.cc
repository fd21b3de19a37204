// Forced tool-call grammars in each model family's syntax (server/tool_grammar.h): texts generated at random
// from the grammar parse back, through the real parser (ParseToolOutput), into calls of the declared tools
// whose arguments validate against their schemas; texts the parser would not read as those calls (the old
// plain-JSON form, a wrong name, broken values) are rejected by the grammar. Gemma 4's value syntax is
// checked on its own schema walk (grammar/json_schema.h ValueSyntax::kGemma4).
#include "server/tool_grammar.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "chat/reasoning.h"
#include "grammar/gemma4_value.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar_check.h"
#include "server/harmony_reply.h"
#include "tokenizer/utf8.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;

constexpr const char* kBody = R"({"tools": [
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
    "note": {"type": ["string", "null"], "pattern": "^[a-z]{0,5}$"}, "code": {"enum": ["1", "22", "x"]},
    "extra": {"anyOf": [{"type": "string", "pattern": "^[a-z]{0,5}$"}, {"type": "integer"}, {"type": "null"}]},
    "ref": {"type": ["string", "integer"], "maxLength": 2}},
    "required": ["location"]}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"b": {"type": "number"}, "a": {"type": "number"}}, "required": ["a", "b"]}}},
  {"type": "function", "function": {"name": "set_mode", "parameters": {"type": "object", "properties": {
    "Mode": {"const": "fast"}, "opts": {"type": "object", "properties": {"loud": {"type": "boolean"},
    "level": {"type": ["integer", "null"]}}, "required": ["loud", "level"]}}, "required": ["opts"]}}}]})";

constexpr ToolSyntax kSyntaxes[] = {ToolSyntax::kHermes,   ToolSyntax::kMistral,    ToolSyntax::kMistralV3,
                                    ToolSyntax::kDeepSeek, ToolSyntax::kDeepSeekR1, ToolSyntax::kKimi,
                                    ToolSyntax::kDsml,     ToolSyntax::kDsmlV4,     ToolSyntax::kGemma4,
                                    ToolSyntax::kGlm,      ToolSyntax::kQwenXml,    ToolSyntax::kHarmony};

ToolSpec Spec(ToolSyntax syntax, const std::string& choice) {
  Ordered body = Ordered::parse(kBody);
  body["tool_choice"] = Ordered::parse(choice);
  const std::string raw = body.dump();
  auto spec = ReadToolFields(nlohmann::json::parse(raw), raw);
  EXPECT_TRUE(spec.ok()) << spec.error.status.message();
  ToolSpec out = spec.ok() ? *spec.value : ToolSpec{};
  out.syntax = syntax;
  return out;
}

bool Accepts(const std::string& gbnf, std::string_view text) { return testing::GbnfAccepts(gbnf, text); }

// Random texts of a grammar: each rule expands to a random alternative until the text is long, then to
// its shortest (so every walk ends); character classes give a random member, negated ones one of a pool
// of awkward characters (markup, quotes, newlines, non-ASCII) outside the class.
class Generator {
 public:
  explicit Generator(const grammar::Grammar& g) : g_(g), shortest_(g.rules.size(), kInf) {
    for (bool changed = true; changed;) {  // the shortest expansion of each rule, to a fixed point
      changed = false;
      for (size_t r = 0; r < g_.rules.size(); ++r) {
        for (const grammar::Sequence& alt : g_.rules[r].alternatives) {
          const size_t n = Length(alt);
          if (n < shortest_[r]) shortest_[r] = n, changed = true;
        }
      }
    }
  }

  std::string Text(std::mt19937& rng) {
    std::string out;
    Expand(g_.root, rng, &out);
    return out;
  }

 private:
  static constexpr size_t kInf = size_t(1) << 40;

  size_t Length(const grammar::Sequence& alt) const {
    size_t n = 0;
    for (const grammar::Symbol& s : alt)
      n = std::min(kInf, n + (s.kind == grammar::Symbol::Kind::kRule ? shortest_[s.rule] : 1));
    return n;
  }

  void Expand(uint32_t rule, std::mt19937& rng, std::string* out) {
    const auto& alts = g_.rules[rule].alternatives;
    size_t pick = std::uniform_int_distribution<size_t>(0, alts.size() - 1)(rng);
    if (out->size() > 120 || Length(alts[pick]) >= kInf) {
      for (size_t a = 0; a < alts.size(); ++a) {
        if (Length(alts[a]) < Length(alts[pick])) pick = a;
      }
    }
    for (const grammar::Symbol& s : alts[pick]) {
      if (s.kind == grammar::Symbol::Kind::kRule) {
        Expand(s.rule, rng, out);
      } else {
        utf8::Append(Char(s, rng), out);
      }
    }
  }

  static bool In(const grammar::Symbol& s, uint32_t c) {
    for (const grammar::CodepointRange& r : s.ranges) {
      if (c >= r.first && c <= r.last) return !s.negated;
    }
    return s.negated;
  }

  static uint32_t Char(const grammar::Symbol& s, std::mt19937& rng) {
    static const std::u32string kPool = U"<|\">/{}[]:,\\ \n_aZ09é｜";
    if (!s.negated) {
      const auto& r = s.ranges[std::uniform_int_distribution<size_t>(0, s.ranges.size() - 1)(rng)];
      return std::uniform_int_distribution<uint32_t>(r.first, r.last)(rng);
    }
    for (int tries = 0; tries < 64; ++tries) {
      const uint32_t c = kPool[std::uniform_int_distribution<size_t>(0, kPool.size() - 1)(rng)];
      if (In(s, c)) return c;
    }
    for (uint32_t c = 'a';; ++c) {
      if (In(s, c)) return c;
    }
  }

  const grammar::Grammar& g_;
  std::vector<size_t> shortest_;
};

// Whether `v` is valid against `schema` (the keywords the tools above use).
bool Valid(const Ordered& schema, const Ordered& v) {
  if (schema.contains("anyOf") && std::none_of(schema["anyOf"].begin(), schema["anyOf"].end(),
                                               [&](const Ordered& s) { return Valid(s, v); }))
    return false;
  if (schema.contains("pattern") && v.is_string() &&
      !std::regex_search(v.get<std::string>(), std::regex(schema["pattern"].get<std::string>())))
    return false;
  if (schema.contains("const") && v != schema["const"]) return false;
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    return false;
  if (schema.contains("type")) {
    const Ordered types = schema["type"].is_array() ? schema["type"] : Ordered::array({schema["type"]});
    bool typed = false;
    for (const Ordered& t : types) {
      typed = typed || (t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) ||
              (t == "number" && v.is_number()) || (t == "boolean" && v.is_boolean()) ||
              (t == "null" && v.is_null()) || (t == "object" && v.is_object()) ||
              (t == "array" && v.is_array());
    }
    if (!typed) return false;
  }
  if (schema.contains("minimum") && v.get<double>() < schema["minimum"].get<double>()) return false;
  if (schema.contains("maximum") && v.get<double>() > schema["maximum"].get<double>()) return false;
  if (schema.contains("maxLength") && v.is_string()) {
    const std::string text = v.get<std::string>();
    size_t n = 0;
    for (size_t p = 0; p < text.size(); ++n) utf8::DecodeAt(text, &p);
    if (n > schema["maxLength"].get<size_t>()) return false;
  }
  if (v.is_array()) {
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) return false;
    for (const Ordered& item : v) {
      if (schema.contains("items") && !Valid(schema["items"], item)) return false;
    }
  }
  if (v.is_object() && schema.contains("properties")) {
    for (const auto& [key, value] : v.items()) {
      if (!schema["properties"].contains(key) || !Valid(schema["properties"][key], value)) return false;
    }
    for (const Ordered& r : schema.value("required", Ordered::array())) {
      if (!v.contains(r.get<std::string>())) return false;
    }
  }
  return true;
}

TEST(ToolGrammar, GeneratedCallsParseBackIntoValidArguments) {
  for (ToolSyntax syntax : kSyntaxes) {
    for (const std::string choice :
         {R"("required")", R"({"type": "function", "function": {"name": "set_mode"}})"}) {
      const ToolSpec spec = Spec(syntax, choice);
      for (bool thinking : {false, true}) {
        auto gbnf = thinking ? ForcedToolGbnf(spec, chat::kThinkTags, false) : ForcedToolGbnf(spec);
        ASSERT_TRUE(gbnf.ok()) << gbnf.error.status.message();
        auto parsed = grammar::ParseGbnf(*gbnf.value);
        ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
        auto compiled = grammar::CompiledGrammar::FromGbnf(*gbnf.value);  // once: the texts' matcher
        ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
        Generator gen(*parsed);
        std::mt19937 rng(7);
        std::map<std::string, int> called;
        for (int i = 0; i < 60; ++i) {
          std::string text = gen.Text(rng);
          const std::string where = std::string(ToolSyntaxName(syntax)) + " " + choice + ": " + text;
          grammar::GrammarMatcher matcher(*compiled);
          ASSERT_TRUE(matcher.AcceptBytes(text) && matcher.accepting()) << where;
          // The server splits the reasoning block off before the parser sees the rest (Harmony's replies
          // whole: server/harmony_reply.h).
          const bool harmony = syntax == ToolSyntax::kHarmony;
          if (thinking && !harmony) text = chat::SplitReasoning(text, chat::kThinkTags, false, true).content;
          const ToolOutput out = thinking && harmony ? HarmonyWhole(spec, text, "seed", false).output
                                                     : ParseToolOutput(spec, text, "seed", false);
          ASSERT_FALSE(out.calls.empty()) << where;
          EXPECT_FALSE(out.content.has_value()) << where;
          for (const ToolCall& call : out.calls) {
            const size_t k =
                size_t(std::find(spec.names.begin(), spec.names.end(), call.name) - spec.names.begin());
            ASSERT_LT(k, spec.names.size()) << where;
            if (spec.choice == ToolChoice::kNamed) {
              EXPECT_EQ(call.name, spec.named) << where;
            }
            const Ordered args = Ordered::parse(call.arguments, nullptr, false);
            EXPECT_TRUE(Valid(spec.parameters[k], args)) << where << "\n" << call.arguments;
            ++called[call.name];
          }
        }
        if (spec.choice == ToolChoice::kRequired) {
          EXPECT_EQ(called.size(), 3u) << ToolSyntaxName(syntax);
        }
      }
    }
  }
}

TEST(ToolGrammar, TextsThatAreNotCallsInTheSyntaxAreRejected) {
  const std::map<ToolSyntax, std::vector<std::string>> good = {
      {ToolSyntax::kHermes,
       {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"b\": 2, \"a\": 1}}\n</tool_call>"}},
      {ToolSyntax::kMistral, {R"([TOOL_CALLS]add[ARGS]{"b": 2, "a": 1})"}},
      {ToolSyntax::kMistralV3, {R"([TOOL_CALLS][{"name": "add", "arguments": {"b": 2, "a": 1}}])"}},
      {ToolSyntax::kDeepSeek,
       {"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>add<｜tool▁sep｜>{\"b\": 2, \"a\": 1}<｜tool▁call▁end｜>"
        "<｜tool▁calls▁end｜>"}},
      {ToolSyntax::kKimi,
       {"<|tool_calls_section_begin|><|tool_call_begin|>functions.add:0<|tool_call_argument_begin|>"
        "{\"b\": 2, \"a\": 1}<|tool_call_end|><|tool_calls_section_end|>"}},
      {ToolSyntax::kDsml,
       {"<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"add\">\n<｜DSML｜parameter name=\"b\" "
        "string=\"false\">2</｜DSML｜parameter>\n<｜DSML｜parameter name=\"a\" string=\"false\">1"
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"}},
      {ToolSyntax::kGemma4, {"<|tool_call>call:add{a:1,b:2}<tool_call|>"}},
      {ToolSyntax::kGlm,
       {"<tool_call>add\n<arg_key>b</arg_key>\n<arg_value>2</arg_value>\n<arg_key>a</arg_key>\n"
        "<arg_value>1</arg_value>\n</tool_call>"}},
      {ToolSyntax::kQwenXml,
       {"<tool_call>\n<function=add>\n<parameter=b>\n2\n</parameter>\n<parameter=a>\n1\n"
        "</parameter>\n</function>\n</tool_call>"}},
      {ToolSyntax::kHarmony,
       {R"(<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"b": 2, "a": 1})",
        R"( to=functions.add<|channel|>commentary json<|message|>{"b": 2, "a": 1})"}},
  };
  for (const auto& [syntax, texts] : good) {
    const ToolSpec spec = Spec(syntax, R"("required")");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    for (const std::string& text : texts) {
      EXPECT_TRUE(Accepts(gbnf, text)) << ToolSyntaxName(syntax) << ": " << text;
      ASSERT_EQ(ParseToolOutput(spec, text, "seed", false).calls.size(), 1u) << text;
      // An undeclared tool, a missing required argument, a wrong type: the parser's call would be wrong.
      for (auto [from, to] :
           std::vector<std::pair<std::string, std::string>>{{"add", "sub"}, {"1", "\"1\""}, {"1", "true"}}) {
        std::string broken = text;
        const size_t at = broken.rfind(from);
        broken.replace(at, from.size(), to);
        EXPECT_FALSE(Accepts(gbnf, broken)) << ToolSyntaxName(syntax) << ": " << broken;
      }
    }
    // The old plain-JSON forced output is not this syntax, nor is prose before the calls.
    EXPECT_FALSE(Accepts(gbnf, R"([{"name": "add", "arguments": {"b": 2, "a": 1}}])"))
        << ToolSyntaxName(syntax);
    EXPECT_FALSE(Accepts(gbnf, "Sure. " + texts[0])) << ToolSyntaxName(syntax);
  }
}

// The texts the parsers split on (a closing tag, another parameter's tag, the call's or the block's end)
// cannot be written inside a value, raw text or JSON string: the grammar rejects them (the old grammars took
// them, and the parser then lost or cut the call); the same value with JSON's \u003c or \/ escape, or with
// the tag only begun, is accepted and parses back to the value.
TEST(ToolGrammar, ValuesCannotHoldTheTagsTheParserSplitsOn) {
  struct Case {
    ToolSyntax syntax;
    std::string before, after;  // a get_weather call around its location's value (a JSON string or raw text)
    std::vector<std::string> bad;
    std::vector<std::pair<std::string, std::string>> good;  // written -> parsed location
  };
  const std::string q = "<tool_call>\n<function=get_weather>\n<parameter=location>\n";
  const std::string dsml =
      "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
      "name=\"location\" string=\"true\">";
  const std::vector<Case> cases = {
      {ToolSyntax::kQwenXml,
       q,
       "\n</parameter>\n</function>\n</tool_call>",
       {"Lima <parameter=days>\n3", "Lima <parameter=days>", "Lima</function>", "x</tool_call>",
        "</parameter>"},
       {{"a < b <parameter x </function </tool_call", "a < b <parameter x </function </tool_call"},
        {"<<</parameter", "<<</parameter"}}},
      {ToolSyntax::kGlm,
       "<tool_call>get_weather<arg_key>location</arg_key><arg_value>",
       "</arg_value></tool_call>",
       {"Lima</arg_value>", "x</tool_call>", "a</tool_call><tool_call>add"},
       {{"<arg_key>x</arg_key> </arg_value </tool_call", "<arg_key>x</arg_key> </arg_value </tool_call"}}},
      {ToolSyntax::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"",
       "\"}}\n</tool_call>",
       {"x</tool_call>", "</tool_call><tool_call>"},
       {{R"(x<\/tool_call>)", "x</tool_call>"},
        {R"(x\u003c/tool_call>)", "x</tool_call>"},
        {"a < b", "a < b"}}},
      {ToolSyntax::kDsml,
       dsml,
       "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
       {"x</｜DSML｜parameter>"},
       {{"x</｜DSML｜invoke></｜DSML｜function_calls>", "x</｜DSML｜invoke></｜DSML｜function_calls>"}}},
  };
  for (const Case& c : cases) {
    const ToolSpec spec = Spec(c.syntax, R"("required")");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    for (const std::string& value : c.bad) {
      EXPECT_FALSE(Accepts(gbnf, c.before + value + c.after)) << ToolSyntaxName(c.syntax) << ": " << value;
    }
    for (const auto& [value, parsed] : c.good) {
      const std::string text = c.before + value + c.after;
      ASSERT_TRUE(Accepts(gbnf, text)) << ToolSyntaxName(c.syntax) << ": " << value;
      const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
      ASSERT_EQ(out.calls.size(), 1u) << text;
      EXPECT_EQ(Ordered::parse(out.calls[0].arguments)["location"], parsed) << text;
    }
  }
  // JSON strings of bounded length (tags' items) never hold '<' raw: \u003c writes it.
  const ToolSpec qwen = Spec(ToolSyntax::kQwenXml, R"("required")");
  const std::string gbnf = *ForcedToolGbnf(qwen).value;
  const std::string tags = q + "x\n</parameter>\n<parameter=tags>\n";
  EXPECT_FALSE(Accepts(gbnf, tags + R"(["<a"])" + "\n</parameter>\n</function>\n</tool_call>"));
  const std::string escaped = tags + R"(["\u003ca"])" + "\n</parameter>\n</function>\n</tool_call>";
  ASSERT_TRUE(Accepts(gbnf, escaped));
  EXPECT_EQ(Ordered::parse(ParseToolOutput(qwen, escaped, "seed", false).calls.at(0).arguments)["tags"][0],
            "<a");
}

// A type list mixing string with another type (get_weather's "ref": ["string", "integer"]) is JSON in the
// key/value syntaxes, so its strings are JSON strings, and the parsers read them back as the strings they
// hold (they kept the quotes: "\"ab\"").
TEST(ToolGrammar, MixedStringTypesAreJsonAndParseBackUnquoted) {
  const std::map<ToolSyntax, std::pair<std::string, std::string>> around = {
      {ToolSyntax::kQwenXml,
       {"<tool_call>\n<function=get_weather>\n<parameter=location>\nLima\n</parameter>\n<parameter=ref>\n",
        "\n</parameter>\n</function>\n</tool_call>"}},
      {ToolSyntax::kGlm,
       {"<tool_call>get_weather<arg_key>location</arg_key><arg_value>Lima</arg_value><arg_key>ref</arg_key>"
        "<arg_value>",
        "</arg_value></tool_call>"}},
  };
  for (const auto& [syntax, text] : around) {
    const ToolSpec spec = Spec(syntax, R"("required")");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    for (const auto& [written, parsed] :
         std::vector<std::pair<std::string, Ordered>>{{R"("ab")", "ab"}, {"12", 12}, {R"("7")", "7"}}) {
      const std::string call = text.first + written + text.second;
      EXPECT_TRUE(Accepts(gbnf, call)) << ToolSyntaxName(syntax) << ": " << written;
      const ToolOutput out = ParseToolOutput(spec, call, "seed", false);
      ASSERT_EQ(out.calls.size(), 1u) << call;
      EXPECT_EQ(Ordered::parse(out.calls[0].arguments)["ref"], parsed)
          << ToolSyntaxName(syntax) << ": " << written;
    }
    EXPECT_FALSE(Accepts(gbnf, text.first + "ab" + text.second)) << ToolSyntaxName(syntax);
  }
}

// A function's arguments are a JSON object: with parameters {} (or properties alone) the forced grammar
// writes an object, never a bare value (it took any JSON: 5, "x", [1]).
TEST(ToolGrammar, ParametersThatSayNoTypeAreStillAnObject) {
  for (const std::string params : {"{}", R"({"properties": {"n": {"type": "integer"}}})"}) {
    const std::string raw =
        R"({"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f",
        "parameters": )" +
        params + "}}]}";
    auto read = ReadToolFields(nlohmann::json::parse(raw), raw);
    ASSERT_TRUE(read.ok()) << raw;
    const std::map<ToolSyntax, std::pair<std::string, std::string>> around = {
        {ToolSyntax::kHermes, {"<tool_call>\n{\"name\": \"f\", \"arguments\": ", "}\n</tool_call>"}},
        {ToolSyntax::kMistral, {"[TOOL_CALLS]f[ARGS]", ""}},
        {ToolSyntax::kHarmony, {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>", ""}},
    };
    for (const auto& [syntax, text] : around) {
      ToolSpec spec = *read.value;
      spec.syntax = syntax;
      const std::string gbnf = *ForcedToolGbnf(spec).value;
      EXPECT_TRUE(Accepts(gbnf, text.first + "{}" + text.second)) << ToolSyntaxName(syntax) << " " << params;
      for (const std::string bare : {"5", R"("x")", "[1]", "null"}) {
        EXPECT_FALSE(Accepts(gbnf, text.first + bare + text.second)) << ToolSyntaxName(syntax) << " " << bare;
      }
    }
  }
}

// Constants holding a tag are left out of a raw value (a 400 when none is left); a raw value's pattern
// leaves '<' out of its classes and may not spell it; JSON constants, keys and patterns write '<' escaped.
TEST(ToolGrammar, ConstantsKeysAndPatternsKeepOutTheTags) {
  auto spec_of = [](const std::string& properties) {
    const std::string raw =
        R"({"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": )" +
        properties + R"(, "additionalProperties": false}}}]})";
    auto spec = ReadToolFields(nlohmann::json::parse(raw), raw);
    EXPECT_TRUE(spec.ok()) << raw;
    ToolSpec out = *spec.value;
    out.syntax = ToolSyntax::kQwenXml;
    return out;
  };
  const std::string call = "<tool_call>\n<function=f>\n<parameter=k>\n";
  const std::string end = "\n</parameter>\n</function>\n</tool_call>";
  {
    const ToolSpec spec = spec_of(R"({"k": {"type": "string", "enum": ["a</parameter>", "b"]}})");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    EXPECT_TRUE(Accepts(gbnf, call + "b" + end));
    EXPECT_FALSE(Accepts(gbnf, call + "a</parameter>" + end));
  }
  for (const char* unwritable : {R"({"k": {"const": "x</function>"}})", R"({"k": {"enum": ["<parameter="]}})",
                                 R"({"k": {"type": "string", "pattern": "^<a>$"}})"}) {
    const auto gbnf = ForcedToolGbnf(spec_of(unwritable));
    ASSERT_FALSE(gbnf.ok()) << unwritable;
    EXPECT_EQ(gbnf.error.param, "tools[0].function.parameters.properties.k") << unwritable;
  }
  {
    const ToolSpec spec = spec_of(R"({"k": {"type": "string", "pattern": "^[^x]+$"}})");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    EXPECT_TRUE(Accepts(gbnf, call + "a/b>" + end));
    EXPECT_FALSE(Accepts(gbnf, call + "a</function>" + end));
  }
  {  // JSON: a constant, a key and a pattern that hold '<'
    const ToolSpec spec = spec_of(
        R"({"k": {"type": "object", "properties": {"</tool_call>": {"const": "</parameter>"},
        "p": {"type": "string", "pattern": "^<[a-z/]+>$"}}, "required": ["</tool_call>", "p"]}})");
    const std::string gbnf = *ForcedToolGbnf(spec).value;
    const std::string good =
        call + R"({"\u003c/tool_call>": "\u003c/parameter>", "p": "\u003c/function>"})" + end;
    ASSERT_TRUE(Accepts(gbnf, good));
    const Ordered args = Ordered::parse(ParseToolOutput(spec, good, "seed", false).calls.at(0).arguments);
    EXPECT_EQ(args["k"]["</tool_call>"], "</parameter>");
    EXPECT_EQ(args["k"]["p"], "</function>");
    EXPECT_FALSE(Accepts(gbnf, call + R"({"</tool_call>": "\u003c/parameter>", "p": "\u003cp>"})" + end));
    EXPECT_FALSE(Accepts(gbnf, call + R"({"\u003c/tool_call>": "</parameter>", "p": "\u003cp>"})" + end));
    EXPECT_FALSE(Accepts(gbnf, call + R"({"\u003c/tool_call>": "\u003c/parameter>", "p": "<p>"})" + end));
  }
}

// A property name the key/value syntax cannot write (it holds the key's end or a tag the parser splits on) is
// a 400 naming the property, in each of the three syntaxes; other names, '<' and '>' included where they end
// nothing, are written as they are and read back.
TEST(ToolGrammar, PropertyNamesHoldingATagAreRefused) {
  auto spec_of = [](ToolSyntax syntax, const std::string& name) {
    const Ordered body = {{"tool_choice", "required"},
                          {"tools",
                           {{{"type", "function"},
                             {"function",
                              {{"name", "f"},
                               {"parameters",
                                {{"type", "object"},
                                 {"properties", {{name, {{"type", "integer"}}}}},
                                 {"required", {name}}}}}}}}}};
    const std::string raw = body.dump();
    auto spec = ReadToolFields(nlohmann::json::parse(raw), raw);
    EXPECT_TRUE(spec.ok()) << raw;
    ToolSpec out = *spec.value;
    out.syntax = syntax;
    return out;
  };
  const std::vector<std::pair<ToolSyntax, std::vector<std::string>>> refused = {
      {ToolSyntax::kGlm, {"a</arg_key>b", "x</arg_value>", "</tool_call>", " a", "a\n", ""}},
      {ToolSyntax::kQwenXml, {"a>b", "x</parameter>", "<parameter=y", ""}},
      {ToolSyntax::kDsml, {"a\"b", "x</｜DSML｜parameter>", ""}},
      {ToolSyntax::kDsmlV4, {"a\"b"}}};
  for (const auto& [syntax, names] : refused) {
    for (const std::string& name : names) {
      const auto gbnf = ForcedToolGbnf(spec_of(syntax, name));
      ASSERT_FALSE(gbnf.ok()) << ToolSyntaxName(syntax) << " " << name;
      EXPECT_EQ(gbnf.error.status.code(), StatusCode::kInvalidArgument) << name;
      EXPECT_EQ(gbnf.error.param, "tools[0].function.parameters.properties." + name) << name;
      EXPECT_NE(std::string(gbnf.error.status.message()).find(name), std::string::npos)
          << gbnf.error.status.message();
    }
  }
  const std::vector<std::pair<ToolSyntax, std::string>> written = {
      {ToolSyntax::kGlm, "<tool_call>f<arg_key>a<b</arg_key><arg_value>7</arg_value></tool_call>"},
      {ToolSyntax::kQwenXml,
       "<tool_call>\n<function=f>\n<parameter=a<b>\n7\n</parameter>\n</function>\n</tool_call>"}};
  for (const auto& [syntax, text] : written) {
    const ToolSpec spec = spec_of(syntax, "a<b");
    const auto gbnf = ForcedToolGbnf(spec);
    ASSERT_TRUE(gbnf.ok()) << gbnf.error.status.message();
    EXPECT_TRUE(Accepts(*gbnf.value, text)) << text;
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    ASSERT_EQ(out.calls.size(), 1u) << text;
    EXPECT_EQ(Ordered::parse(out.calls[0].arguments), Ordered({{"a<b", 7}})) << text;
  }
}

// gpt-oss's template is found to write Harmony, and its own call turns (after the generation prompt's
// <|start|>assistant, before the <|call|> that ends generation) are accepted, with the analysis message
// before them where reasoning is split; they parse back (whole, as the server splits Harmony replies) into
// the call. A value cannot end the message early.
TEST(ToolGrammar, HarmonyAcceptsItsTemplatesCallTurns) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/harmony_template_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::ordered_json goldens = nlohmann::ordered_json::parse(in);
  EXPECT_EQ(DetectToolSyntax(goldens["templates"]["gpt-oss"].get<std::string>()), ToolSyntax::kHarmony);
  const std::string raw =
      nlohmann::ordered_json{{"tools", goldens["variants"][0]["tools"]}, {"tool_choice", "required"}}.dump();
  auto read = ReadToolFields(nlohmann::json::parse(raw), raw);
  ASSERT_TRUE(read.ok()) << read.error.status.message();
  ToolSpec spec = *read.value;
  spec.syntax = ToolSyntax::kHarmony;
  const std::string plain = *ForcedToolGbnf(spec).value;
  const std::string thinking = *ForcedToolGbnf(spec, chat::kThinkTags, false).value;
  constexpr std::string_view kTurn = "<|start|>assistant", kAnalysis = "<|channel|>analysis<|message|>";
  int checked = 0, with_analysis = 0;
  for (const auto& c : goldens["cases"]) {
    if (!c.contains("expected")) continue;
    const std::string text = c["expected"];
    for (size_t call = text.find("<|call|>"); call != std::string::npos;
         call = text.find("<|call|>", call + 1)) {
      const size_t start = text.rfind(kTurn, call);
      ASSERT_NE(start, std::string::npos);
      const std::string turn = text.substr(start + kTurn.size(), call - start - kTurn.size());
      EXPECT_TRUE(Accepts(plain, turn)) << turn;
      EXPECT_TRUE(Accepts(thinking, turn)) << turn;
      const ToolOutput out = ParseToolOutput(spec, turn, "seed", false);
      ASSERT_EQ(out.calls.size(), 1u) << turn;
      EXPECT_EQ(out.calls[0].name, "get_weather");
      EXPECT_FALSE(out.content.has_value()) << turn;
      ++checked;
      const size_t before = start == 0 ? std::string::npos : text.rfind(kTurn, start - 1);
      if (before == std::string::npos ||
          text.compare(before + kTurn.size(), kAnalysis.size(), kAnalysis) != 0)
        continue;
      const std::string both = text.substr(before + kTurn.size(), call - before - kTurn.size());
      EXPECT_TRUE(Accepts(thinking, both)) << both;
      EXPECT_FALSE(Accepts(plain, both)) << both;
      const HarmonyReply reply = HarmonyWhole(spec, both, "seed", false);
      ASSERT_EQ(reply.output.calls.size(), 1u) << both;
      EXPECT_TRUE(reply.reasoning.has_value()) << both;
      ++with_analysis;
    }
  }
  EXPECT_GE(checked, 4);
  EXPECT_GE(with_analysis, 2);
  // A value or a thought holding where a message ends (<|end|>, <|call|>, <|start|>, <|return|>): rejected;
  // the JSON value escaped, accepted.
  const std::string head = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>";
  EXPECT_FALSE(Accepts(plain, head + R"({"location": "x<|end|>"})"));
  EXPECT_FALSE(Accepts(plain, head + R"({"location": "x<|call|>"})"));
  EXPECT_TRUE(Accepts(plain, head + R"({"location": "x\u003c|end|> <|x"})"));
  EXPECT_FALSE(Accepts(thinking, "<|channel|>analysis<|message|>a<|start|>b<|end|><|start|>assistant" + head +
                                     R"({"location": "x"})"));
  // Only one call: <|call|> ends the reply.
  EXPECT_FALSE(Accepts(plain, head + R"({"location": "x"})" + "<|call|>" + head + R"({"location": "y"})"));
}

TEST(ToolGrammar, Gemma4ValuesFollowItsTemplate) {
  const Ordered schema = Ordered::parse(R"({"type": "object", "properties": {
    "zeta": {"type": "string"}, "Alpha": {"type": "array", "items": {"type": "string", "maxLength": 3}},
    "mid": {"type": ["null", "number"]}, "odd key": {"enum": ["x", 1, null]}}, "required": ["zeta"]})");
  auto rules = grammar::JsonSchemaRules(schema, grammar::ValueSyntax::kGemma4, "g-");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  const std::string gbnf = "root ::= " + rules->root + "\n" + rules->gbnf;
  // Keys sorted as dictsort sorts them (Alpha before mid), bare unless not an identifier; strings in
  // <|"|> quotes with any text but the quote; None for null.
  EXPECT_TRUE(Accepts(
      gbnf,
      R"({Alpha:[<|"|>a<|"|>,<|"|>b>|<|"|>],mid:None,<|"|>odd key<|"|>:None,zeta:<|"|>x "y" {z}<|"|>})"));
  EXPECT_TRUE(Accepts(gbnf, R"({zeta:<|"|><|"|>})"));
  EXPECT_TRUE(Accepts(gbnf, R"({mid:-1.5,zeta:<|"|>x<|"|>})"));
  EXPECT_TRUE(Accepts(gbnf, R"({<|"|>odd key<|"|>:<|"|>x<|"|>,zeta:<|"|>x<|"|>})"));
  EXPECT_FALSE(Accepts(gbnf, R"({zeta:"x"})"));                                 // JSON's quotes
  EXPECT_FALSE(Accepts(gbnf, R"({"zeta":<|"|>x<|"|>})"));                       // a JSON key
  EXPECT_FALSE(Accepts(gbnf, R"({mid:null,zeta:<|"|>x<|"|>})"));                // JSON's null
  EXPECT_FALSE(Accepts(gbnf, R"({zeta:<|"|>x<|"|>,mid:1})"));                   // unsorted
  EXPECT_FALSE(Accepts(gbnf, R"({zeta:<|"|>a<|"|>b<|"|>})"));                   // a quote inside
  EXPECT_FALSE(Accepts(gbnf, R"({Alpha:[<|"|>abcd<|"|>],zeta:<|"|>x<|"|>})"));  // maxLength
  EXPECT_FALSE(Accepts(gbnf, R"({zeta: <|"|>x<|"|>})"));                        // whitespace
  EXPECT_EQ(grammar::Gemma4ValueText(Ordered::parse(R"({"b": [1, "x", null, true], "A": {"k": "v"}})")),
            R"({A:{k:<|"|>v<|"|>},b:[1,<|"|>x<|"|>,None,true]})");
}

TEST(ToolGrammar, ReasoningMayComeFirstWhereTheTemplateWritesIt) {
  const ToolSpec spec = Spec(ToolSyntax::kGemma4, R"({"type": "function", "function": {"name": "add"}})");
  const std::string call = "<|tool_call>call:add{a:1,b:2}<tool_call|>";
  const std::string gbnf = *ForcedToolGbnf(spec, chat::kGemma4ThoughtTags, false).value;
  EXPECT_TRUE(Accepts(gbnf, call));
  EXPECT_TRUE(Accepts(gbnf, "<|channel>thought\nAdd them.<channel|>" + call));
  EXPECT_FALSE(Accepts(gbnf, "<|channel>thought\nAdd <channel|> them.<channel|>" + call));
  EXPECT_FALSE(Accepts(gbnf, "Add them." + call));
  const std::string opened = *ForcedToolGbnf(spec, chat::kThinkTags, true).value;
  EXPECT_TRUE(Accepts(opened, "Add them.</think>\n" + call));
  EXPECT_FALSE(Accepts(opened, call));
  EXPECT_FALSE(Accepts(*ForcedToolGbnf(spec).value, "<|channel>thought\nAdd them.<channel|>" + call));
}

}  // namespace
}  // namespace lockstep::server
