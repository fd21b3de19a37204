// Structured outputs and tools end to end over real sockets (no Node.js needed; the official-client check
// is structured_compat_test): a random-weight model at temperature 1 answers json_schema, GBNF, regex and
// required / named tool calls that always parse and match, streamed and whole responses agree, and every
// unsupported request is a 400 naming the field.
#include <gtest/gtest.h>

#include <regex>

#include "e2e_util.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

class StructuredRoutesTest : public SharedServerTest<StructuredRoutesTest> {};

const nlohmann::json kSchema = nlohmann::json::parse(R"({
  "type": "object",
  "properties": {"n": {"type": "integer", "minimum": -9, "maximum": 99},
                 "ok": {"type": "boolean"},
                 "tag": {"enum": ["x", "y"]}},
  "required": ["n", "ok", "tag"], "additionalProperties": false})");

nlohmann::json Chat(uint64_t seed) {
  return {{"messages", {{{"role", "user"}, {"content", "JSON please"}}}},
          {"temperature", 1.0},
          {"seed", seed}};  // max_tokens: the room left in the tiny model's 256-token context
}

void ExpectValid(const std::string& text) {
  const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  ASSERT_TRUE(v.is_object()) << text;
  EXPECT_EQ(v.size(), 3u) << text;
  ASSERT_TRUE(v.contains("n") && v["n"].is_number_integer()) << text;
  EXPECT_GE(v["n"].get<int>(), -9);
  EXPECT_LE(v["n"].get<int>(), 99);
  EXPECT_TRUE(v.contains("ok") && v["ok"].is_boolean()) << text;
  EXPECT_TRUE(v.contains("tag") && (v["tag"] == "x" || v["tag"] == "y")) << text;
}

TEST_F(StructuredRoutesTest, JsonSchemaAlwaysValidStreamedAndWhole) {
  ASSERT_TRUE(server().ok()) << server().log();
  for (uint64_t seed = 0; seed < 12; ++seed) {
    nlohmann::json body = Chat(seed);
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "r"}, {"schema", kSchema}}}};
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << r.body;
    const std::string whole = j["choices"][0]["message"]["content"];
    ExpectValid(whole);
    if (seed < 3) {
      body["stream"] = true;
      bool done = false;
      const std::map<int, std::string> text =
          CollectOpenAiText(Stream(port(), "/v1/chat/completions", body), true, &done);
      EXPECT_TRUE(done);
      EXPECT_EQ(text.at(0), whole);  // same seed, same tokens
    }
  }
}

TEST_F(StructuredRoutesTest, GrammarRegexAndTgi) {
  nlohmann::json c = {{"prompt", "x"},
                      {"seed", 1},
                      {"max_tokens", 20},
                      {"grammar", "root ::= \"v\" [0-9]{2} (\"!\" | \"?\")"}};
  const HttpResponse r = Post(port(), "/v1/completions", c);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.Json()["choices"][0]["text"];
  EXPECT_TRUE(std::regex_match(text, std::regex("v[0-9]{2}[!?]"))) << text;
  const HttpResponse t = Post(port(), "/generate",
                              {{"inputs", "x"},
                               {"parameters",
                                {{"max_new_tokens", 20},
                                 {"seed", 2},
                                 {"do_sample", true},
                                 {"details", true},
                                 {"grammar", {{"type", "regex"}, {"value", "[a-c]{3}-\\d"}}}}}});
  ASSERT_EQ(t.status, 200) << t.body;
  const nlohmann::json tj = t.Json();
  EXPECT_TRUE(std::regex_match(tj["generated_text"].get<std::string>(), std::regex("[a-c]{3}-[0-9]")))
      << t.body;
  EXPECT_EQ(tj["details"]["finish_reason"], "eos_token") << t.body;
}

const nlohmann::json kTools = nlohmann::json::parse(R"([
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["a", "b"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "echo", "parameters": {"type": "object",
    "properties": {"s": {"type": "string", "maxLength": 5}}, "required": ["s"], "additionalProperties": false}}}])");

// A streamed choice with one call: the call's name and arguments as the deltas add them up, and the finish
// reason.
struct StreamedCall {
  std::string name, arguments, finish_reason;
};
StreamedCall StreamOneCall(int port, const nlohmann::json& body) {
  StreamedCall out;
  for (const std::string& e : Stream(port, "/v1/chat/completions", body)) {
    if (e == "[DONE]") continue;
    const nlohmann::json c = nlohmann::json::parse(e)["choices"][0];
    if (!c["finish_reason"].is_null()) out.finish_reason = c["finish_reason"];
    if (!c["delta"].contains("tool_calls")) continue;
    for (const auto& d : c["delta"]["tool_calls"]) {
      if (d["function"].contains("name")) out.name = d["function"]["name"];
      out.arguments += d["function"]["arguments"].get<std::string>();
    }
  }
  return out;
}

TEST_F(StructuredRoutesTest, RequiredAndNamedToolCalls) {
  for (uint64_t seed = 0; seed < 8; ++seed) {
    nlohmann::json body = Chat(seed);
    body["tools"] = kTools;
    body["tool_choice"] = "required";
    body["parallel_tool_calls"] = seed % 2 == 0;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json choice = r.Json()["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << r.body;
    const nlohmann::json& calls = choice["message"]["tool_calls"];
    ASSERT_TRUE(calls.is_array() && !calls.empty()) << r.body;
    if (seed % 2 == 1) {
      EXPECT_EQ(calls.size(), 1u) << r.body;
    }
    for (const auto& call : calls) {
      const nlohmann::json args = nlohmann::json::parse(call["function"]["arguments"].get<std::string>());
      if (call["function"]["name"] == "add") {
        EXPECT_TRUE(args["a"].is_number_integer() && args["b"].is_number_integer()) << r.body;
      } else {
        EXPECT_EQ(call["function"]["name"], "echo");
        EXPECT_TRUE(args["s"].is_string()) << r.body;
      }
    }
  }
  nlohmann::json named = Chat(4);
  named["tools"] = kTools;
  named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "echo"}}}};
  const HttpResponse whole = Post(port(), "/v1/chat/completions", named);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const nlohmann::json call = whole.Json()["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "echo");
  named["stream"] = true;
  const StreamedCall streamed = StreamOneCall(port(), named);
  EXPECT_EQ(streamed.name, "echo");
  EXPECT_EQ(streamed.arguments, call["function"]["arguments"]);
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
}

// A named choice cut short by max_tokens: whole and streamed answers agree (the call, its arguments as far as
// they were generated) and finish_reason "length" says they are incomplete. Before, the whole answer made the
// text content while the stream had sent it as the call (found by tool_call_fuzzer), and both said nothing
// of the cut ("tool_calls" would have been the auto-mode answer's).
TEST_F(StructuredRoutesTest, NamedCallCutShortIsTheCallWithFinishReasonLength) {
  nlohmann::json named = Chat(5);
  named["tools"] = kTools;
  named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "echo"}}}};
  named["max_tokens"] = 2;
  const HttpResponse whole = Post(port(), "/v1/chat/completions", named);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const nlohmann::json choice = whole.Json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length") << whole.body;
  EXPECT_TRUE(choice["message"]["content"].is_null()) << whole.body;
  ASSERT_TRUE(choice["message"]["tool_calls"].is_array()) << whole.body;
  const nlohmann::json call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "echo") << whole.body;
  EXPECT_TRUE(
      nlohmann::json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false).is_discarded())
      << "two tokens should not complete the arguments: " << whole.body;
  named["stream"] = true;
  const StreamedCall streamed = StreamOneCall(port(), named);
  EXPECT_EQ(streamed.name, "echo");
  EXPECT_EQ(streamed.arguments, call["function"]["arguments"]);
  EXPECT_EQ(streamed.finish_reason, "length");
}

// Streamed tool calls come as OpenAI sends them: one call per chunk, the finish reason alone in a last chunk
// with an empty delta (the openai client's ChatCompletionStream relies on it; see structured_test.mjs).
TEST_F(StructuredRoutesTest, StreamedCallsComeOnePerChunkThenTheFinishReasonAlone) {
  nlohmann::json body = Chat(21);
  body["tools"] = kTools;
  body["tool_choice"] = "required";
  body["stream"] = true;
  const HttpResponse whole = Post(port(), "/v1/chat/completions", [&] {
    nlohmann::json b = body;
    b.erase("stream");
    return b;
  }());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const size_t want_calls = whole.Json()["choices"][0]["message"]["tool_calls"].size();
  std::vector<nlohmann::json> chunks;
  for (const std::string& e : Stream(port(), "/v1/chat/completions", body)) {
    if (e != "[DONE]") chunks.push_back(nlohmann::json::parse(e)["choices"][0]);
  }
  ASSERT_GE(chunks.size(), 2u);
  std::vector<int> indices;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const nlohmann::json& c = chunks[i];
    if (c["delta"].contains("tool_calls")) {
      ASSERT_EQ(c["delta"]["tool_calls"].size(), 1u) << c.dump();
      EXPECT_TRUE(c["finish_reason"].is_null()) << c.dump();
      indices.push_back(c["delta"]["tool_calls"][0]["index"].get<int>());
    }
    EXPECT_EQ(c["finish_reason"].is_null(), i + 1 < chunks.size()) << c.dump();
  }
  EXPECT_EQ(chunks.back()["finish_reason"], "tool_calls");
  EXPECT_TRUE(chunks.back()["delta"].empty()) << chunks.back().dump();
  ASSERT_EQ(indices.size(), want_calls);
  for (size_t k = 0; k < indices.size(); ++k) EXPECT_EQ(indices[k], int(k));
}

TEST_F(StructuredRoutesTest, UnsupportedIsA400NamingTheField) {
  struct Case {
    nlohmann::json extra;
    const char* param;
    const char* message;
  };
  const Case cases[] = {
      {{{"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"schema", {{"type", "string"}, {"format", "email"}}}}}}}},
       "response_format.json_schema.schema",
       "format 'email' is not supported"},
      {{{"guided_regex", "(?=a)"}}, "guided_regex", "lookaround"},
      {{{"grammar", "root ::= foo"}}, "grammar", "line 1, column 10: undefined rule 'foo'"},
      {{{"tools", kTools}, {"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}},
       "response_format",
       "cannot be combined"},
      {{{"functions", nlohmann::json::array({{{"name", "f"}}})}}, "functions", "deprecated"},
  };
  for (const Case& c : cases) {
    nlohmann::json body = Chat(1);
    body.update(c.extra);
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << r.body;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["error"]["param"], c.param) << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos) << r.body;
  }
  const HttpResponse tgi =
      Post(port(), "/generate",
           {{"inputs", "x"}, {"parameters", {{"grammar", {{"type", "json"}, {"value", {{"not", {}}}}}}}}});
  EXPECT_EQ(tgi.status, 422) << tgi.body;
  EXPECT_NE(tgi.body.find("keyword 'not' is not supported"), std::string::npos) << tgi.body;
}

}  // namespace
}  // namespace lockstep::server::testing
