// Structured-output and tool fields of the request bodies: every flavour maps to the grammar it should,
// wrong types and unsupported features are 400s naming the field, and tool output in each model family's
// format parses into OpenAI tool calls (streamed and whole responses agreeing on what is content).
#include "server/structured_fields.h"

#include <gtest/gtest.h>

#include <map>

#include "grammar_check.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"

namespace lockstep::server {
namespace {

Parsed<std::optional<OutputConstraint>> OpenAi(const std::string& body) {
  return ReadOpenAiConstraint(nlohmann::json::parse(body), body);
}

bool Matches(const std::string& gbnf, const std::string& text) { return testing::GbnfAccepts(gbnf, text); }

TEST(StructuredFields, EveryFlavourMapsToItsGrammar) {
  struct Case {
    const char* body;
    const char* param;
    const char* yes;
    const char* no;
  };
  const Case cases[] = {
      {R"({"response_format": {"type": "json_object"}})", "response_format", R"({"a": [1]})", "[1]"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
          "schema": {"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "boolean"}},
          "required": ["z", "a"], "additionalProperties": false}}}})",
       "response_format.json_schema.schema", R"({"z": 1, "a": true})", R"({"a": true, "z": 1})"},
      {R"({"response_format": {"type": "json_object", "schema": {"type": "array"}}})",
       "response_format.schema", "[]", "{}"},
      {R"({"grammar": "root ::= \"yes\" | \"no\""})", "grammar", "yes", "maybe"},
      {R"({"json_schema": {"type": "string", "maxLength": 2}})", "json_schema", R"("ab")", R"("abc")"},
      {R"({"guided_json": "{\"type\": \"boolean\"}"})", "guided_json", "false", "0"},
      {R"({"guided_regex": "[a-c]{2}\\d"})", "guided_regex", "ab1", "ad1"},
      {R"({"guided_choice": ["red", "green"]})", "guided_choice", "green", "blue"},
      {R"({"guided_grammar": "root ::= [0-9]+", "guided_decoding_backend": "xgrammar"})", "guided_grammar",
       "42", "x"},
      {R"({"structured_outputs": {"regex": "a+"}})", "structured_outputs.regex", "aaa", "b"},
  };
  for (const Case& c : cases) {
    auto r = OpenAi(c.body);
    ASSERT_TRUE(r.ok()) << c.body << ": " << r.error.status.message();
    ASSERT_TRUE(r.value->has_value()) << c.body;
    EXPECT_EQ((**r.value).param, c.param);
    EXPECT_TRUE(Matches((**r.value).gbnf, c.yes)) << c.body << " should accept " << c.yes;
    EXPECT_FALSE(Matches((**r.value).gbnf, c.no)) << c.body << " should reject " << c.no;
  }
  auto text = OpenAi(R"({"response_format": {"type": "text"}, "guided_json": null})");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text.value->has_value());
}

TEST(StructuredFields, BadFieldsAre400sNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"response_format": {"type": 5}})", "response_format.type must be one of"},
      {R"({"response_format": "json"})", "response_format must be an object"},
      {R"({"response_format": {"type": "yaml"}})", "got \"yaml\""},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "array", "uniqueItems": true}}}})",
       "response_format.json_schema.schema: JSON schema: keyword 'uniqueItems' is not supported"},
      {R"({"response_format": {"type": "json_schema", "json_schema": []}})",
       "must be an object {name, schema"},
      {R"({"grammar": 3})", "grammar must be a non-empty string"},
      {R"({"guided_json": "{not json"})", "guided_json is a string but not valid JSON"},
      {R"({"guided_regex": "(a"})", "guided_regex: regex at character 1: unbalanced '('"},
      {R"({"guided_choice": [1]})", "guided_choice must be a non-empty array of strings"},
      {R"({"guided_whitespace_pattern": " *"})", "guided_whitespace_pattern is not supported"},
      {R"({"guided_decoding_backend": 1})", "guided_decoding_backend must be a string"},
      {R"({"grammar": "root ::= \"a\"", "guided_regex": "a"})",
       "only one output constraint may be given; got both grammar and guided_regex"},
      {R"({"structured_outputs": {"xml": "a"}})", "structured_outputs.xml is not supported"},
  };
  for (const auto& [body, want] : cases) {
    auto r = OpenAi(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error.status.message().find(want), std::string::npos)
        << body << "\n got: " << r.error.status.message() << "\n want: " << want;
    EXPECT_FALSE(r.error.param.empty()) << body;
  }
}

TEST(StructuredFields, TgiGrammar) {
  const std::string body =
      R"({"inputs": "x", "parameters": {"grammar": {"type": "json", "value": {"properties": {"b": {"type": "integer"}, "a": {"type": "null"}}, "required": ["b", "a"]}}}})";
  const nlohmann::json j = nlohmann::json::parse(body);
  auto r = ReadTgiConstraint(&j["parameters"], body);
  ASSERT_TRUE(r.ok()) << r.error.status.message();
  EXPECT_TRUE(Matches((**r.value).gbnf, R"({"b": 7, "a": null})"));
  const std::string regex = R"({"parameters": {"grammar": {"type": "regex", "value": "\\d{3}"}}})";
  const nlohmann::json jr = nlohmann::json::parse(regex);
  auto rr = ReadTgiConstraint(&jr["parameters"], regex);
  ASSERT_TRUE(rr.ok());
  EXPECT_TRUE(Matches((**rr.value).gbnf, "123"));
  const std::string bad = R"({"parameters": {"grammar": {"type": "ebnf", "value": "x"}}})";
  const nlohmann::json jb = nlohmann::json::parse(bad);
  auto rb = ReadTgiConstraint(&jb["parameters"], bad);
  ASSERT_FALSE(rb.ok());
  EXPECT_NE(rb.error.status.message().find("parameters.grammar.type must be"), std::string::npos);
}

constexpr char kTools[] = R"({"tools": [
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 10}}, "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#/$defs/n"}}, "required": ["a", "b"],
    "additionalProperties": false, "$defs": {"n": {"type": "integer"}}}}}]})";

ToolSpec Tools(const std::string& extra) {
  std::string body = kTools;
  body.insert(body.size() - 1, extra);
  auto spec = ReadToolFields(nlohmann::json::parse(body), body);
  EXPECT_TRUE(spec.ok()) << spec.error.status.message();
  return spec.ok() ? *spec.value : ToolSpec{};
}

TEST(ToolCalls, ForcedChoicesHaveGrammars) {
  const ToolSpec required = Tools(R"(, "tool_choice": "required", "parallel_tool_calls": false)");
  EXPECT_EQ(required.choice, ToolChoice::kRequired);
  auto gbnf = ForcedToolGbnf(required);
  ASSERT_TRUE(gbnf.ok()) << gbnf.error.status.message();
  EXPECT_TRUE(Matches(*gbnf.value, R"([{"name": "add", "arguments": {"a": 1, "b": 2}}])"));
  EXPECT_TRUE(Matches(*gbnf.value, R"([{"name": "get_weather", "arguments": {"city": "Lima"}}])"));
  EXPECT_FALSE(Matches(
      *gbnf.value,
      R"([{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "add", "arguments": {"a": 1, "b": 2}}])"));
  EXPECT_FALSE(Matches(*gbnf.value, R"([{"name": "add", "arguments": {"city": "Lima"}}])"));
  EXPECT_FALSE(Matches(*gbnf.value, "[]"));
  const ToolSpec named = Tools(R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})");
  auto args = ForcedToolGbnf(named);
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(Matches(*args.value, R"({"a": -3, "b": 0})"));
  EXPECT_FALSE(Matches(*args.value, R"({"a": 1.5, "b": 0})"));
  EXPECT_EQ(*ForcedToolGbnf(Tools(R"(, "tool_choice": "auto")")).value, "");
}

TEST(ToolCalls, BadToolFieldsAre400s) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"tools": {}})", "tools must be an array"},
      {R"({"tools": [{"type": "function"}]})", "tools[0] must be {\"type\": \"function\""},
      {R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name must be"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"not": {}}}}]})",
       "tools[0].function.parameters: JSON schema: keyword 'not' is not supported"},
      {R"({"tool_choice": "required"})", "tool_choice \"required\" needs tools"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice names \"g\", which is not among the tools"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "always"})",
       "got \"always\""},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": "yes"})",
       "parallel_tool_calls must be a boolean"},
      {R"({"functions": [{"name": "f"}]})",
       "functions (the deprecated function-calling API) is not supported"},
  };
  for (const auto& [body, want] : cases) {
    auto r = ReadToolFields(nlohmann::json::parse(body), body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error.status.message().find(want), std::string::npos)
        << body << "\n got: " << r.error.status.message() << "\n want: " << want;
  }
}

TEST(ToolCalls, ParsesEachFamilysFormat) {
  const ToolSpec spec = Tools("");
  struct Case {
    const char* text;
    std::vector<std::pair<std::string, std::string>> calls;
    std::optional<std::string> content;
  };
  const Case cases[] = {
      {"Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Oslo\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
       {{"get_weather", R"({"city":"Oslo"})"}, {"add", R"({"a":1,"b":2})"}},
       "Let me look.\n"},
      {"{\"name\": \"add\", \"parameters\": {\"b\": 2, \"a\": 1}}; {\"name\": \"get_weather\", "
       "\"parameters\": {\"city\": \"Rome\"}}",
       {{"add", R"({"b":2,"a":1})"}, {"get_weather", R"({"city":"Rome"})"}},
       std::nullopt},
      {"<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}",
       {{"add", R"({"a":1,"b":2})"}},
       std::nullopt},
      {"[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 5, \"b\": 6}, \"id\": \"abcdefghi\"}]",
       {{"add", R"({"a":5,"b":6})"}},
       std::nullopt},
      // Mistral v11 (Small 3.2, Devstral, Ministral 3): NAME[ARGS]{...}, with or without [CALL_ID], after
      // prose too.
      {"[TOOL_CALLS]add[ARGS]{\"a\": 5, \"b\": 6}", {{"add", R"({"a":5,"b":6})"}}, std::nullopt},
      {"Checking.[TOOL_CALLS]get_weather[CALL_ID]abcDEF123[ARGS]{\"city\": \"Oslo\"}[TOOL_CALLS]add[ARGS]{}",
       {{"get_weather", R"({"city":"Oslo"})"}, {"add", "{}"}},
       "Checking."},
      {"[TOOL_CALLS]nope[ARGS]{}", {}, "[TOOL_CALLS]nope[ARGS]{}"},
      {"[TOOL_CALLS]add[ARGS]{\"a\": 1} and more", {}, "[TOOL_CALLS]add[ARGS]{\"a\": 1} and more"},
      {"[TOOL_CALLS]add[ARGS][1, 2]", {}, "[TOOL_CALLS]add[ARGS][1, 2]"},
      {"[TOOL_CALLS]add", {}, "[TOOL_CALLS]add"},
      {"```json\n{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 1, \\\"b\\\": 1}\"}\n```",
       {{"add", R"({"a": 1, "b": 1})"}},
       std::nullopt},
      {"The answer is 3.", {}, "The answer is 3."},
      {"{\"name\": \"delete_all\", \"arguments\": {}}", {}, "{\"name\": \"delete_all\", \"arguments\": {}}"},
      {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1",
       {},
       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1"},
  };
  for (const Case& c : cases) {
    const ToolOutput out = ParseToolOutput(spec, c.text, "chatcmpl-1#0", false);
    ASSERT_EQ(out.calls.size(), c.calls.size()) << c.text;
    for (size_t k = 0; k < c.calls.size(); ++k) {
      EXPECT_EQ(out.calls[k].name, c.calls[k].first) << c.text;
      EXPECT_EQ(out.calls[k].arguments, c.calls[k].second) << c.text;
      EXPECT_EQ(out.calls[k].id.rfind("call_", 0), 0u);
      EXPECT_EQ(out.calls[k].id.size(), 29u);
    }
    EXPECT_EQ(out.content, c.content) << c.text;
  }
  EXPECT_EQ(ToolCallId("x", 0, true).size(), 9u);
  EXPECT_NE(ToolCallId("x", 0, false), ToolCallId("x", 1, false));
  EXPECT_EQ(ToolCallId("x", 0, false), ToolCallId("x", 0, false));
}

TEST(ToolCalls, OutputNestedTooDeeplyIsContentNotACrash) {
  // A model's output is JSON text no body check has seen: 200 000 levels of brackets (a prompt may ask for
  // them, and vocabularies have tokens of several brackets) were parsed, then copied and dumped recursively
  // — a stack overflow. Output nested deeper than kMaxJsonDepth is not a call; it stays content.
  const ToolSpec spec = Tools("");
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& text : {deep, R"({"name": "add", "arguments": {"a": )" + deep + "}}",
                                  "<tool_call>\n" + deep + "\n</tool_call>"}) {
    const ToolOutput out = ParseToolOutput(spec, text, "id", false);
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.content, text);
    const ToolStreamDelta last = ToolStreamStep(spec, "", text, true, true, "id", false);
    EXPECT_FALSE(last.called);
    EXPECT_EQ(last.content, text);
  }
  // Within the bound, a call as usual.
  const std::string nested = std::string(100, '[') + std::string(100, ']');
  const ToolOutput out =
      ParseToolOutput(spec, R"({"name": "add", "arguments": {"a": )" + nested + "}}", "id", false);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, R"({"a":)" + nested + "}");
}

TEST(ToolCalls, StreamedContentNeverIncludesACallStart) {
  // Whatever the split, the streamable prefix of a partial text is a prefix of the final content.
  const ToolSpec spec = Tools("");
  const std::string text =
      "Sure <tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
  const ToolOutput whole = ParseToolOutput(spec, text, "id", false);
  ASSERT_EQ(whole.calls.size(), 1u);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const size_t region = ToolRegionStart(std::string_view(text).substr(0, cut), /*final=*/false);
    const size_t streamable = std::min(cut, region);
    EXPECT_LE(streamable, std::string("Sure ").size()) << cut;
  }
  EXPECT_EQ(ToolRegionStart("  {\"name\"", false), 2u);
  EXPECT_EQ(ToolRegionStart("Hello <tool_", false), 6u);
  EXPECT_EQ(ToolRegionStart("Hello <tool_", true), std::string::npos);
  EXPECT_EQ(ToolRegionStart("[TOOL_", false), 0u);
  EXPECT_EQ(ToolRegionStart("Sure [TOOL_CA", false), 5u);
  EXPECT_EQ(ToolRegionStart("Sure [TOOL_CALLS]add", true), 5u);
  EXPECT_EQ(ToolRegionStart("Sure [TOOL_CA", true), std::string::npos);
  EXPECT_EQ(ToolRegionStart("Plain text", false), std::string::npos);
}

// Streaming a choice in pieces (every split point pattern) gives what the whole response gives.
TEST(ToolCalls, StreamDeltasAddUpToTheWholeResponse) {
  struct Case {
    std::string extra;
    std::string text;
  };
  const Case cases[] = {
      {"", "Sure.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"},
      {"", "  {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"},
      {"", "No tools needed <tool but prose."},
      {"", "[TOOL_CALLS][{\"name\": \"nope\", \"arguments\": {}}]"},
      {"", "Let me see. [TOOL_CALLS]add[ARGS]{\"a\": 1, \"b\": 2}[TOOL_CALLS]get_weather[ARGS]{}"},
      {"", "Not a call: [TOOL_CALLS]nope[ARGS]{}"},
      {R"(, "tool_choice": "required")", "[{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}]"},
      {R"(, "tool_choice": "required")", "[{\"name\": \"add\", \"argu"},
      {R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})", "{\"a\": 1, \"b\":  2} \n "},
      // Found by tool_call_fuzzer: a named choice cut short (max_tokens) was content whole but a call
      // streamed, and leading space was in the streamed arguments but not the whole ones.
      {R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})", "{\"a\": 1, \"b"},
      {R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})", " \n {\"a\": 1}"},
      {R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})", "  "},
  };
  for (const Case& c : cases) {
    const ToolSpec spec = Tools(c.extra);
    const ToolOutput whole = ParseToolOutput(spec, c.text, "seed", false);
    for (size_t step : {size_t(1), size_t(3), size_t(7), c.text.size()}) {
      std::string content;
      std::map<int, nlohmann::json> calls;
      bool called = false;
      for (size_t at = 0; at < c.text.size() || at == 0;) {
        const size_t next = std::min(c.text.size(), at + step);
        const bool last = next == c.text.size();
        ToolStreamDelta d =
            ToolStreamStep(spec, std::string_view(c.text).substr(0, at),
                           std::string_view(c.text).substr(0, next), at == 0, last, "seed", false);
        content += d.content;
        if (d.tool_calls.is_array()) {
          for (const auto& tc : d.tool_calls) {
            nlohmann::json& acc = calls[tc["index"].get<int>()];
            if (tc.contains("id")) acc["id"] = tc["id"];
            if (tc["function"].contains("name")) acc["name"] = tc["function"]["name"];
            acc["arguments"] = acc.value("arguments", "") + tc["function"]["arguments"].get<std::string>();
          }
        }
        called = d.called;
        at = next;
        if (last) break;
      }
      const std::string where = c.text + " step " + std::to_string(step);
      EXPECT_EQ(called, !whole.calls.empty()) << where;
      EXPECT_EQ(content, whole.content.value_or(whole.calls.empty() ? c.text : "")) << where;
      if (!whole.calls.empty() || spec.choice == ToolChoice::kNamed) {
        ASSERT_EQ(calls.size(), std::max<size_t>(1, whole.calls.size())) << where;
      }
      for (size_t k = 0; k < whole.calls.size(); ++k) {
        EXPECT_EQ(calls[int(k)]["id"], whole.calls[k].id) << where;
        EXPECT_EQ(calls[int(k)]["name"], whole.calls[k].name) << where;
        EXPECT_EQ(calls[int(k)]["arguments"], whole.calls[k].arguments) << where;
      }
    }
  }
}

TEST(ToolCalls, TemplateToolCallsParseArguments) {
  auto calls = TemplateToolCalls(
      nlohmann::ordered_json::parse(
          R"([{"id": "abc", "type": "function", "function": {"name": "add", "arguments": "{\"b\": 1, \"a\": 2}"}}])"),
      "messages[1].tool_calls");
  ASSERT_TRUE(calls.ok());
  EXPECT_EQ((*calls.value)[0]["function"]["arguments"].dump(), R"({"b":1,"a":2})");
  auto bad = TemplateToolCalls(
      nlohmann::ordered_json::parse(R"([{"function": {"name": "add", "arguments": "{oops"}}])"),
      "messages[1].tool_calls");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.param, "messages[1].tool_calls[0].function.arguments");
}

}  // namespace
}  // namespace lockstep::server
