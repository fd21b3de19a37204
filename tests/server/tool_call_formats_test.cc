// The tool-call formats of DeepSeek V3.1 / V3 / R1 (server/tool_call_deepseek.h), DeepSeek V3.2 / V4
// (server/tool_call_dsml.h), Gemma 4 (server/tool_call_gemma4.h), GLM-4.5+ (server/tool_call_glm.h) and Kimi
// K2 (server/tool_call_kimi.h), as the models write them: whole and
// streamed in small pieces (the deltas add up to the whole answer), prose before the calls as content,
// undeclared tools and malformed or cut-off sections as content (never a crash), GLM's values typed by the
// schema, and reasoning split off before the calls are parsed. The templates' own renderings of calls
// parse back in tool_call_goldens_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/reasoning.h"
#include "server/tool_call_deepseek.h"
#include "server/tool_call_dsml.h"
#include "server/tool_call_gemma4.h"
#include "server/tool_call_glm.h"
#include "server/tool_call_kimi.h"
#include "server/tool_calls.h"
#include "tool_stream_check.h"

namespace lockstep::server {
namespace {

ToolSpec Spec() {
  const nlohmann::json body = {{"tools",
                                {{{"type", "function"},
                                  {"function",
                                   {{"name", "get_weather"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties",
                                       {{"location", {{"type", "string"}}},
                                        {"days", {{"type", "integer"}}},
                                        {"metric", {{"type", "boolean"}}},
                                        {"zip", {{"type", "string"}}}}}}}}}},
                                 {{"type", "function"}, {"function", {{"name", "list_dir"}}}}}}};
  auto spec = ReadToolFields(body, body.dump());
  EXPECT_TRUE(spec.ok()) << spec.error.status.message();
  return *spec.value;
}

nlohmann::json Args(const ToolCall& call) { return nlohmann::json::parse(call.arguments); }

void ExpectStreamMatches(const ToolSpec& spec, const std::string& text) {
  testing::ExpectStreamedLikeWhole(spec, text, {1, 2, 5, 13});
}

// Every prefix of `text` (an output cut anywhere) parses without a crash, whole and streamed.
void ExpectEveryPrefixIsSafe(const ToolSpec& spec, const std::string& text) {
  for (size_t n = 0; n <= text.size(); ++n) {
    const std::string cut = text.substr(0, n);
    const ToolOutput out = ParseToolOutput(spec, cut, "seed", false);
    if (out.calls.empty()) {
      EXPECT_EQ(out.content, cut);
    }
    ExpectStreamMatches(spec, cut);
  }
}

const std::string kDeepSeekV31 =
    "Checking both.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": "
    "\"Paris\", \"days\": "
    "2}<｜tool▁call▁end｜><｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    "<｜tool▁calls▁end｜>";
const std::string kDeepSeekR1 =
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": "
    "\"Oslo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>list_dir\n```json\n{}\n```"
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
const std::string kGlm =
    "Let me look.\n<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>metric</arg_key>\n<arg_value>true</"
    "arg_value>\n"
    "<arg_key>zip</arg_key>\n<arg_value>75001</arg_value>\n</tool_call>\n<tool_call>list_dir\n</tool_call>";
const std::string kKimi =
    "On it.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    "{\"location\": \"Rome\"}<|tool_call_end|><|tool_call_begin|>functions.list_dir:1"
    "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";

TEST(DeepSeekToolCalls, V31CallsAfterProse) {
  const ToolOutput out = ParseToolOutput(Spec(), kDeepSeekV31, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "Checking both.");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(Args(out.calls[0]), nlohmann::json({{"location", "Paris"}, {"days", 2}}));
  EXPECT_EQ(out.calls[1].name, "list_dir");
  EXPECT_EQ(out.calls[1].arguments, "{}");
  EXPECT_EQ(out.calls[0].id.size(), 29u);
  ExpectStreamMatches(Spec(), kDeepSeekV31);
}

TEST(DeepSeekToolCalls, R1FencedCalls) {
  const ToolOutput out = ParseToolOutput(Spec(), kDeepSeekR1, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_FALSE(out.content.has_value());
  EXPECT_EQ(Args(out.calls[0]), nlohmann::json({{"location", "Oslo"}}));
  EXPECT_EQ(out.calls[1].name, "list_dir");
  ExpectStreamMatches(Spec(), kDeepSeekR1);
  // Without the section's opening marker, as R1's distillations sometimes write.
  const std::string bare = kDeepSeekR1.substr(kDeepSeekCallsBegin.size());
  EXPECT_EQ(ParseToolOutput(Spec(), "Sure. " + bare, "seed", false).calls.size(), 2u);
}

TEST(DeepSeekToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = Spec();
  for (const std::string& text : {
           // undeclared tool, arguments not an object, no separator, junk after the arguments, junk after a
           // call
           std::string(
               "x<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>rm_rf<｜tool▁sep｜>{}<｜tool▁call▁end｜>"),
           std::string(
               "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>[1]<｜tool▁call▁end｜>"),
           std::string("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>list_dir {}<｜tool▁call▁end｜>"),
           std::string("<｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>{} and more<｜tool▁call▁end｜>"),
           std::string("<｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>{}<｜tool▁call▁end｜>words"),
           std::string("<｜tool▁calls▁begin｜>"),
       }) {
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    ExpectStreamMatches(spec, text);
  }
}

TEST(DeepSeekToolCalls, CutOutputNeverCrashesAndKeepsFinishedCalls) {
  ExpectEveryPrefixIsSafe(Spec(), kDeepSeekV31);
  ExpectEveryPrefixIsSafe(Spec(), kDeepSeekR1);
  // Cut after the first call's arguments: that call is kept.
  const std::string cut = kDeepSeekV31.substr(0, kDeepSeekV31.find("<｜tool▁call▁end｜>"));
  EXPECT_EQ(ParseToolOutput(Spec(), cut, "seed", false).calls.size(), 1u);
}

TEST(GlmToolCalls, CallsAfterProseWithValuesTypedByTheSchema) {
  const ToolOutput out = ParseToolOutput(Spec(), kGlm, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "Let me look.\n");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  // A string-typed "75001" stays a string; integer and boolean parameters take their JSON.
  EXPECT_EQ(out.calls[0].arguments, R"({"location":"Paris","days":3,"metric":true,"zip":"75001"})");
  EXPECT_EQ(out.calls[1].name, "list_dir");
  EXPECT_EQ(out.calls[1].arguments, "{}");
  ExpectStreamMatches(Spec(), kGlm);
}

TEST(GlmToolCalls, OneLineFormAndUntypedValues) {
  std::vector<ToolCall> calls;
  // GLM-4.7 writes no newlines; list_dir's schema types nothing, so JSON values are taken as JSON.
  ASSERT_TRUE(
      GlmToolCallFrom(Spec(),
                      "list_dir<arg_key>depth</arg_key><arg_value>2</arg_value><arg_key>path</arg_key>"
                      "<arg_value>src/a b</arg_value><arg_key>opts</arg_key><arg_value>{\"a\": [1]}"
                      "</arg_value>",
                      &calls));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"depth":2,"path":"src/a b","opts":{"a":[1]}})");
  // An integer parameter whose text is not an integer keeps the text.
  calls.clear();
  ASSERT_TRUE(
      GlmToolCallFrom(Spec(), "get_weather<arg_key>days</arg_key><arg_value>two</arg_value>", &calls));
  EXPECT_EQ(Args(calls[0]), nlohmann::json({{"days", "two"}}));
}

TEST(GlmToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = Spec();
  for (const std::string& text : {
           std::string("<tool_call>rm_rf\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n</tool_call>"),
           std::string(
               "<tool_call>get_weather\nstray<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"),
           std::string("<tool_call>get_weather<arg_key>a</arg_key>b<arg_value>1</arg_value></tool_call>"),
           std::string("<tool_call>get_weather<arg_key>a<arg_value>1</arg_value></tool_call>"),
           std::string("<tool_call>get_weather<arg_key></arg_key><arg_value>1</arg_value></tool_call>"),
           std::string("<tool_call>Paris is sunny.</tool_call>"),
       }) {
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    ExpectStreamMatches(spec, text);
  }
  // Hermes' JSON in the same marker is still Hermes.
  const ToolOutput hermes = ParseToolOutput(
      spec, "<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}</tool_call>", "seed", false);
  ASSERT_EQ(hermes.calls.size(), 1u);
  EXPECT_EQ(hermes.calls[0].name, "list_dir");
}

TEST(GlmToolCalls, CutOutputNeverCrashes) { ExpectEveryPrefixIsSafe(Spec(), kGlm); }

const std::string kDsml =
    "Checking.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"location\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"metric\" string=\"false\">true</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"zip\" string=\"true\">75001</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"list_dir\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";

// string="true" keeps the text (zip stays "75001"), string="false" reads JSON; V4 names the block tool_calls.
TEST(DsmlToolCalls, CallsAfterProseTypedByTheStringAttribute) {
  const ToolOutput out = ParseToolOutput(Spec(), kDsml, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "Checking.\n\n");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"location":"Paris","days":3,"metric":true,"zip":"75001"})");
  EXPECT_EQ(out.calls[1].name, "list_dir");
  EXPECT_EQ(Args(out.calls[1]), nlohmann::json::object());
  ExpectStreamMatches(Spec(), kDsml);
  std::string v4 = kDsml;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"function_calls>", "tool_calls>"}}) {
    for (size_t at = v4.find(from); at != std::string::npos; at = v4.find(from, at + to.size()))
      v4.replace(at, from.size(), to);
  }
  const ToolOutput out4 = ParseToolOutput(Spec(), v4, "seed", false);
  ASSERT_EQ(out4.calls.size(), 2u) << v4;
  EXPECT_EQ(out4.calls[0].arguments, out.calls[0].arguments);
  ExpectStreamMatches(Spec(), v4);
  // Untyped by the schema and not JSON: the text.
  const ToolOutput loose = ParseToolOutput(
      Spec(),
      "<｜DSML｜function_calls><｜DSML｜invoke name=\"list_dir\"><｜DSML｜parameter name=\"path\" "
      "string=\"false\">/tmp</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
      "seed", false);
  ASSERT_EQ(loose.calls.size(), 1u);
  EXPECT_EQ(Args(loose.calls[0]), nlohmann::json({{"path", "/tmp"}}));
}

TEST(DsmlToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = Spec();
  for (const std::string& text : {
           // an undeclared tool
           std::string("<｜DSML｜function_calls><｜DSML｜invoke name=\"rm_rf\"></｜DSML｜invoke>"
                       "</｜DSML｜function_calls>"),
           // no invoke
           std::string("<｜DSML｜function_calls>text</｜DSML｜function_calls>"),
           // something else inside the invoke
           std::string("<｜DSML｜function_calls><｜DSML｜invoke name=\"list_dir\">x</｜DSML｜invoke>"
                       "</｜DSML｜function_calls>"),
           // the other block's closing tag
           std::string("<｜DSML｜tool_calls><｜DSML｜invoke name=\"list_dir\"></｜DSML｜invoke>"
                       "</｜DSML｜function_calls>"),
       }) {
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    ExpectStreamMatches(spec, text);
  }
}

// Cut anywhere: no crash; cut after the first invoke, that call stands.
TEST(DsmlToolCalls, CutOutputNeverCrashesAndKeepsFinishedCalls) {
  ExpectEveryPrefixIsSafe(Spec(), kDsml);
  const size_t second = kDsml.find("<｜DSML｜invoke name=\"list_dir");
  const ToolOutput out = ParseToolOutput(Spec(), kDsml.substr(0, second + 10), "seed", false);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  // Cut inside a value's closing tag: the value so far, without the tag's start.
  const size_t paris = kDsml.find("Paris</") + 7;
  const ToolOutput inside = ParseToolOutput(Spec(), kDsml.substr(0, paris), "seed", false);
  ASSERT_EQ(inside.calls.size(), 1u);
  EXPECT_EQ(inside.calls[0].arguments, R"({"location":"Paris"})");
}

const std::string kGemma4 =
    "Checking.<|tool_call>call:get_weather{days:3,location:<|\"|>Paris, \"FR\"<|\"|>,metric:true,"
    "zip:<|\"|>75001<|\"|>}<tool_call|><|tool_call>call:list_dir{}<tool_call|>";

// Gemma's values: quoted strings stay text (even digits), bare numbers and booleans are JSON; nested values.
TEST(Gemma4ToolCalls, CallsAfterProseWithGemmasValues) {
  const ToolOutput out = ParseToolOutput(Spec(), kGemma4, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "Checking.");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"days":3,"location":"Paris, \"FR\"","metric":true,"zip":"75001"})");
  EXPECT_EQ(out.calls[1].arguments, "{}");
  ExpectStreamMatches(Spec(), kGemma4);
  const ToolOutput nested = ParseToolOutput(
      Spec(),
      "<|tool_call>call:list_dir{opts:{depth:2, <|\"|>hidden<|\"|>:None},paths:[<|\"|>a<|\"|>, 1.5, "
      "false],mode:fast}<tool_call|>",
      "seed", false);
  ASSERT_EQ(nested.calls.size(), 1u) << nested.content.value_or("");
  EXPECT_EQ(nested.calls[0].arguments,
            R"({"opts":{"depth":2,"hidden":null},"paths":["a",1.5,false],"mode":"fast"})");
}

TEST(Gemma4ToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = Spec();
  for (const std::string& text : {
           std::string("<|tool_call>call:rm_rf{}<tool_call|>"),            // undeclared
           std::string("<|tool_call>call:list_dir{a:}<tool_call|>"),       // no value
           std::string("<|tool_call>call:list_dir{a:1 b:2}<tool_call|>"),  // no comma
           std::string("<|tool_call>call:list_dir{}x<tool_call|>"),        // text after the arguments
           std::string("<|tool_call>call:list_dir[1]<tool_call|>"),        // not a dict
       }) {
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    ExpectStreamMatches(spec, text);
  }
}

TEST(Gemma4ToolCalls, CutOutputNeverCrashesAndKeepsFinishedCalls) {
  ExpectEveryPrefixIsSafe(Spec(), kGemma4);
  const size_t second = kGemma4.find("<|tool_call>call:list_dir");
  const ToolOutput out = ParseToolOutput(Spec(), kGemma4.substr(0, second + 20), "seed", false);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
}

TEST(KimiToolCalls, CallsAfterProseKeepTheModelsIds) {
  const ToolOutput out = ParseToolOutput(Spec(), kKimi, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "On it.");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(Args(out.calls[0]), nlohmann::json({{"location", "Rome"}}));
  EXPECT_EQ(out.calls[1].id, "functions.list_dir:1");
  ExpectStreamMatches(Spec(), kKimi);
  // Without the functions. prefix or an index: the name still counts, the server makes the id.
  const ToolOutput bare = ParseToolOutput(
      Spec(),
      "<|tool_calls_section_begin|><|tool_call_begin|>list_dir<|tool_call_argument_begin|>{}<|tool_call_end|>"
      "<|tool_calls_section_end|>",
      "seed", false);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].id.size(), 29u);
}

TEST(KimiToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = Spec();
  for (const std::string& text : {
           std::string("<|tool_calls_section_begin|><|tool_call_begin|>functions.rm_rf:0"
                       "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"),
           std::string(
               "<|tool_calls_section_begin|><|tool_call_begin|>functions.list_dir:0{}<|tool_call_end|>"),
           std::string("<|tool_calls_section_begin|><|tool_call_begin|>functions.list_dir:0"
                       "<|tool_call_argument_begin|>\"x\"<|tool_call_end|>"),
           std::string("<|tool_calls_section_begin|>text<|tool_calls_section_end|>"),
       }) {
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    ExpectStreamMatches(spec, text);
  }
}

TEST(KimiToolCalls, CutOutputNeverCrashes) { ExpectEveryPrefixIsSafe(Spec(), kKimi); }

// The server splits reasoning off first and parses the rest (openai_format.cc): a thinking reply of
// DeepSeek V3.1 (its prompt opened <think>) or GLM (the reply opens it) gives reasoning, content and calls.
TEST(ReasoningThenToolCalls, ThinkingRepliesSplitThenParse) {
  struct Case {
    std::string text;
    bool opened;
    std::string content;
  };
  const std::string v31_calls = kDeepSeekV31.substr(kDeepSeekV31.find("<｜tool▁calls▁begin｜>"));
  const std::string glm_calls = kGlm.substr(kGlm.find("<tool_call>"));
  for (const Case& c : {
           Case{"The user wants weather.</think>Checking both." + v31_calls, true, "Checking both."},
           Case{"<think>The user wants weather.</think>\nLet me look.\n" + glm_calls, false,
                "Let me look.\n"},
       }) {
    const chat::ReasoningSplit split =
        chat::SplitReasoning(c.text, chat::kThinkTags, c.opened, /*final=*/true);
    EXPECT_EQ(split.reasoning, "The user wants weather.");
    const ToolOutput out = ParseToolOutput(Spec(), split.content, "seed", false);
    EXPECT_EQ(out.calls.size(), 2u) << c.text;
    EXPECT_EQ(out.content, c.content);
    // A marker inside the reasoning is not a call: the parser only sees what follows </think>.
    const chat::ReasoningSplit inside =
        chat::SplitReasoning("<think>" + v31_calls + "</think>Done.", chat::kThinkTags, false, true);
    EXPECT_TRUE(ParseToolOutput(Spec(), inside.content, "seed", false).calls.empty());
  }
}

}  // namespace
}  // namespace lockstep::server
