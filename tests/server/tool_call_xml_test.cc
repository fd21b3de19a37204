// Qwen3-Coder's XML tool calls (server/tool_call_xml.h), as a model writes them after the template's
// instructions: whole and streamed, values typed by the tools' schemas, and what is not a call stays content.
// The template's own renderings of calls parse back in tool_call_goldens_test.cc.
#include "server/tool_call_xml.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_calls.h"
#include "tool_stream_check.h"

namespace lockstep::server {
namespace {

ToolSpec XmlSpec() {
  const nlohmann::json body = {{"tools",
                                {{{"type", "function"},
                                  {"function",
                                   {{"name", "write_file"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties",
                                       {{"path", {{"type", "string"}}},
                                        {"content", {{"type", "string"}}},
                                        {"mode", {{"type", "integer"}}},
                                        {"append", {{"type", "boolean"}}},
                                        {"options", {{"type", "object"}}},
                                        {"tags", {{"type", "array"}}},
                                        {"ratio", {{"type", {"number", "null"}}}}}}}}}}},
                                 {{"type", "function"}, {"function", {{"name", "list_dir"}}}}}}};
  auto spec = ReadToolFields(body, body.dump());
  EXPECT_TRUE(spec.ok()) << spec.error.status.message();
  return *spec.value;
}

nlohmann::json Arguments(const ToolCall& call) { return nlohmann::json::parse(call.arguments); }

TEST(XmlToolCalls, ProseThenCallsWithTypedValues) {
  const std::string text =
      "I will write the file.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
      "<parameter=content>\ndef f():\n    return 1\n\n</parameter>\n<parameter=mode>\n420\n</parameter>\n"
      "<parameter=append>\nFalse\n</parameter>\n<parameter=options>\n{\"encoding\": "
      "\"utf-8\"}\n</parameter>\n"
      "<parameter=tags>\n[1, \"x\"]\n</parameter>\n<parameter=ratio>\nnull\n</parameter>\n</function>\n"
      "</tool_call>\n<tool_call>\n<function=list_dir>\n</function>\n</tool_call>";
  const ToolOutput out = ParseToolOutput(XmlSpec(), text, "seed", false);
  ASSERT_EQ(out.calls.size(), 2u) << out.content.value_or("");
  EXPECT_EQ(out.content, "I will write the file.\n");
  EXPECT_EQ(out.calls[0].name, "write_file");
  // Keys in the order written; one newline after each opening tag and one before each closing tag dropped.
  EXPECT_EQ(out.calls[0].arguments,
            R"({"path":"src/a.py","content":"def f():\n    return 1\n","mode":420,"append":false,)"
            R"("options":{"encoding":"utf-8"},"tags":[1,"x"],"ratio":null})");
  EXPECT_EQ(out.calls[1].name, "list_dir");
  EXPECT_EQ(out.calls[1].arguments, "{}");
  EXPECT_EQ(out.calls[0].id.size(), 29u);
}

TEST(XmlToolCalls, TextThatIsNotOfTheSchemasTypeStaysText) {
  std::vector<ToolCall> calls;
  ASSERT_TRUE(XmlToolCallsFrom(XmlSpec(),
                               "<function=write_file>\n<parameter=mode>\nrw-r--r--\n</parameter>\n"
                               "<parameter=path>\n42\n</parameter>\n<parameter=append>\n1\n</parameter>\n"
                               "<parameter=undeclared>\n[1]\n</parameter>\n</function>",
                               &calls));
  ASSERT_EQ(calls.size(), 1u);
  // An integer that is not one, a string that looks like a number, a boolean written as 1 and a parameter
  // the schema does not name all keep their text.
  EXPECT_EQ(Arguments(calls[0]),
            nlohmann::json({{"mode", "rw-r--r--"}, {"path", "42"}, {"append", "1"}, {"undeclared", "[1]"}}));
}

// What the forced grammar writes reads back as it meant it (server/tool_grammar.h): a property with no type
// as JSON (a JSON string as the string), an untyped string enum's value as text however it looks, and a
// string-or-null property as its text, the text null as null.
TEST(XmlToolCalls, UntypedValuesAreJsonStringEnumsAndNullableStringsText) {
  const nlohmann::json body = {{"tools",
                                {{{"type", "function"},
                                  {"function",
                                   {{"name", "f"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties",
                                       {{"any", nlohmann::json::object()},
                                        {"anyof", {{"anyOf", {{{"type", "string"}}, {{"type", "integer"}}}}}},
                                        {"code", {{"enum", {"1", "22"}}}},
                                        {"note", {{"type", {"string", "null"}}}}}}}}}}}}}};
  auto spec = ReadToolFields(body, body.dump());
  ASSERT_TRUE(spec.ok()) << spec.error.status.message();
  const auto parse = [&](const std::string& any, const std::string& anyof, const std::string& note) {
    std::vector<ToolCall> calls;
    EXPECT_TRUE(XmlToolCallsFrom(*spec.value,
                                 "<function=f>\n<parameter=any>\n" + any +
                                     "\n</parameter>\n<parameter=anyof>\n" + anyof +
                                     "\n</parameter>\n<parameter=code>\n1\n</parameter>\n<parameter=note>\n" +
                                     note + "\n</parameter>\n</function>",
                                 &calls));
    return calls.size() == 1 ? Arguments(calls[0]) : nlohmann::json();
  };
  EXPECT_EQ(parse(R"({"a": [1]})", R"("x")", "null"),
            nlohmann::json({{"any", {{"a", {1}}}}, {"anyof", "x"}, {"code", "1"}, {"note", nullptr}}));
  EXPECT_EQ(parse("plain words", "7", R"("quoted")"),
            nlohmann::json({{"any", "plain words"}, {"anyof", 7}, {"code", "1"}, {"note", "\"quoted\""}}));
}

TEST(XmlToolCalls, UnclosedTagsEndAtTheNextTagOrTheEnd) {
  std::vector<ToolCall> calls;
  // No </parameter> before the next <parameter=, no </function> at the end (an output cut short).
  ASSERT_TRUE(XmlToolCallsFrom(XmlSpec(),
                               "<function=write_file>\n<parameter=path>\na.txt\n<parameter=mode>\n7\n"
                               "</parameter>\n<parameter=content>\nhalf",
                               &calls));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(Arguments(calls[0]), nlohmann::json({{"path", "a.txt"}, {"mode", 7}, {"content", "half"}}));
}

TEST(XmlToolCalls, WhatIsNotACallStaysContent) {
  const ToolSpec spec = XmlSpec();
  for (const std::string text : {
           "<tool_call>\n<function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
           "<tool_call>\nsome words <function=list_dir>\n</function>\n</tool_call>",
           "<tool_call>\n<function=write_file>\nstray text\n<parameter=path>\na\n</parameter>\n</function>"
           "\n</tool_call>",
           "<tool_call>\n<function=write_file\n</tool_call>",
           "<tool_call>\n<function=write_file>\n<parameter=>\nx\n</parameter>\n</function>\n</tool_call>",
       }) {
    std::vector<ToolCall> calls;
    const size_t open = std::string("<tool_call>").size();
    EXPECT_FALSE(XmlToolCallsFrom(spec, text.substr(open, text.find("</tool_call>") - open), &calls)) << text;
    EXPECT_TRUE(calls.empty());
    const ToolOutput out = ParseToolOutput(spec, text, "seed", false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
}

TEST(XmlToolCalls, StreamedDeltasAddUpToTheWholeAnswer) {
  const ToolSpec spec = XmlSpec();
  const std::string text =
      "Listing.\n<tool_call>\n<function=list_dir>\n</function>\n</tool_call>\n<tool_call>\n"
      "<function=write_file>\n<parameter=path>\nb\n</parameter>\n</function>\n</tool_call>";
  const ToolOutput whole = ParseToolOutput(spec, text, "seed", false);
  ASSERT_EQ(whole.calls.size(), 2u);
  testing::ExpectStreamedLikeWhole(spec, text, {1, 3, 7});
}

}  // namespace
}  // namespace lockstep::server
