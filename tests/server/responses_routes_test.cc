// OpenAI's Responses API (POST /v1/responses) end to end on a real `lockstep serve`: the Response object's
// shape and echo, instructions and multi-turn input items rendered as the equivalent chat messages,
// max_output_tokens → incomplete, text.format json_schema, forced function calls and a function_call_output
// round trip, the typed event stream (order, sequence numbers, deltas adding up to the whole response),
// include's output_text logprobs (equal to chat's, and streamed in the deltas), and every bad field refused
// with a 400 naming it. The official client's check is in compat/compat_test.mjs.
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "server/sse.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

class ResponsesRoutesTest : public SharedServerTest<ResponsesRoutesTest> {
 protected:
  static nlohmann::json Ok(const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/v1/responses", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json() : nlohmann::json::object();
  }

  // The prompt tokens the chat route gives `messages` (the chat template applied, as /v1/chat/completions).
  static int ChatPromptTokens(const nlohmann::json& messages) {
    const HttpResponse r = Post(port(), "/tokenize", {{"messages", messages}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["count"].get<int>() : -1;
  }

  // The text of a Response's message items.
  static std::string OutputText(const nlohmann::json& response) {
    std::string text;
    for (const auto& item : response["output"]) {
      if (item["type"] != "message") continue;
      for (const auto& part : item["content"]) text += part["text"].get<std::string>();
    }
    return text;
  }

  // A streamed response's events (data parsed), checking the SSE framing: each `event:` names the data's
  // type, sequence numbers count from 0, no [DONE].
  static std::vector<nlohmann::json> StreamEvents(nlohmann::json body) {
    body["stream"] = true;
    const HttpResponse r = Request(port(), "POST", "/v1/responses", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "text/event-stream");
    SseParser parser;
    std::vector<nlohmann::json> events;
    for (const SseParser::Event& e : parser.Feed(r.body)) {
      EXPECT_NE(e.data, "[DONE]");
      nlohmann::json data = nlohmann::json::parse(e.data, nullptr, false);
      EXPECT_TRUE(data.is_object()) << e.data;
      if (!data.is_object()) continue;
      EXPECT_EQ(e.event, data["type"]) << e.data;
      EXPECT_EQ(data["sequence_number"], events.size()) << e.data;
      events.push_back(std::move(data));
    }
    return events;
  }

  // A 400 invalid_request_error naming `param`.
  static void ExpectRefused(const std::string& body, const std::string& param) {
    const HttpResponse r = Request(port(), "POST", "/v1/responses", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["error"]["param"], param) << body << " -> " << r.body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
  }

  static std::vector<std::string> Types(const std::vector<nlohmann::json>& events) {
    std::vector<std::string> types;
    for (const auto& e : events) types.push_back(e["type"]);
    return types;
  }
};

const nlohmann::json kResponsesSchema = nlohmann::json::parse(R"({
  "type": "object",
  "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}, "tag": {"enum": ["x", "y"]}},
  "required": ["n", "tag"], "additionalProperties": false})");

const nlohmann::json kAddTool = nlohmann::json::parse(R"({"type": "function", "name": "add",
  "description": "adds", "parameters": {"type": "object",
  "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"type": "integer", "minimum": 0, "maximum": 9}},
  "required": ["a", "b"], "additionalProperties": false}})");

TEST_F(ResponsesRoutesTest, PlainTextShapeEchoAndUsage) {
  const nlohmann::json r = Ok({{"model", "tiny"},
                               {"input", "Once upon a time"},
                               {"max_output_tokens", 6},
                               {"temperature", 0},
                               {"metadata", {{"k", "v"}}},
                               {"store", true}});
  ASSERT_TRUE(r.contains("output")) << r;
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u) << r;
  EXPECT_TRUE(r["created_at"].is_number_integer());
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_TRUE(r["error"].is_null());
  EXPECT_EQ(r["max_output_tokens"], 6);
  EXPECT_EQ(r["temperature"], 0);
  EXPECT_EQ(r["top_p"], 1.0);
  EXPECT_EQ(r["tools"], nlohmann::json::array());
  EXPECT_EQ(r["tool_choice"], "auto");
  EXPECT_EQ(r["text"]["format"]["type"], "text");
  EXPECT_EQ(r["parallel_tool_calls"], true);
  EXPECT_EQ(r["metadata"]["k"], "v");
  EXPECT_EQ(r["store"], false);  // nothing is kept
  EXPECT_TRUE(r["instructions"].is_null());
  EXPECT_FALSE(r.contains("output_text"));  // the SDKs compute it
  ASSERT_EQ(r["output"].size(), 1u) << r;
  const nlohmann::json& item = r["output"][0];
  EXPECT_EQ(item["type"], "message");
  EXPECT_EQ(item["role"], "assistant");
  EXPECT_EQ(item["id"].get<std::string>().rfind("msg_", 0), 0u) << r;
  ASSERT_EQ(item["content"].size(), 1u) << r;
  EXPECT_EQ(item["content"][0]["type"], "output_text");
  EXPECT_EQ(item["content"][0]["annotations"], nlohmann::json::array());
  const nlohmann::json& usage = r["usage"];
  EXPECT_EQ(usage["input_tokens"], ChatPromptTokens({{{"role", "user"}, {"content", "Once upon a time"}}}));
  EXPECT_GE(usage["output_tokens"].get<int>(), 1);
  EXPECT_LE(usage["output_tokens"].get<int>(), 6);
  EXPECT_EQ(usage["total_tokens"], usage["input_tokens"].get<int>() + usage["output_tokens"].get<int>());
  EXPECT_TRUE(usage["input_tokens_details"]["cached_tokens"].is_number_integer());
  EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"], 0);
  // The same generation as the chat route's for the same message (greedy).
  const HttpResponse chat = Post(port(), "/v1/chat/completions",
                                 {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                                  {"max_tokens", 6},
                                  {"temperature", 0}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(OutputText(r), chat.Json()["choices"][0]["message"]["content"]);
  EXPECT_EQ(r["status"], chat.Json()["choices"][0]["finish_reason"] == "stop" ? "completed" : "incomplete");
}

TEST_F(ResponsesRoutesTest, InstructionsComeFirstAsASystemMessage) {
  const nlohmann::json r = Ok(
      {{"input", "Hi"}, {"instructions", "Answer briefly."}, {"max_output_tokens", 2}, {"temperature", 0}});
  EXPECT_EQ(r["instructions"], "Answer briefly.");
  EXPECT_EQ(r["usage"]["input_tokens"],
            ChatPromptTokens({{{"role", "system"}, {"content", "Answer briefly."}},
                              {{"role", "user"}, {"content", "Hi"}}}));
  const nlohmann::json plain = Ok({{"input", "Hi"}, {"max_output_tokens", 2}});
  EXPECT_LT(plain["usage"]["input_tokens"].get<int>(), r["usage"]["input_tokens"].get<int>());
}

TEST_F(ResponsesRoutesTest, MultiTurnItemsRenderAsChatMessages) {
  const nlohmann::json input = nlohmann::json::parse(R"([
    {"role": "developer", "content": "Be kind."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Tell me"},
                                                    {"type": "input_text", "text": " a story."}]},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Once upon a time", "annotations": []}]},
    {"role": "user", "content": "Go on."}])");
  const nlohmann::json r = Ok({{"input", input}, {"max_output_tokens", 2}});
  const nlohmann::json messages = nlohmann::json::parse(R"([
    {"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story."},
    {"role": "assistant", "content": "Once upon a time"}, {"role": "user", "content": "Go on."}])");
  EXPECT_EQ(r["usage"]["input_tokens"], ChatPromptTokens(messages)) << r;
}

TEST_F(ResponsesRoutesTest, MaxOutputTokensMakesAnIncompleteResponse) {
  const nlohmann::json r = Ok({{"input", "Once"}, {"max_output_tokens", 3}, {"ignore_eos", true}});
  EXPECT_EQ(r["status"], "incomplete") << r;
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens") << r;
  EXPECT_EQ(r["usage"]["output_tokens"], 3);
  ASSERT_EQ(r["output"].size(), 1u) << r;
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
}

TEST_F(ResponsesRoutesTest, JsonSchemaFormatAlwaysParsesAndMatches) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const nlohmann::json r =
        Ok({{"input", "JSON please"},
            {"temperature", 1.0},
            {"seed", seed},
            {"text", {{"format", {{"type", "json_schema"}, {"name", "r"}, {"schema", kResponsesSchema}}}}}});
    EXPECT_EQ(r["status"], "completed") << r;
    EXPECT_EQ(r["text"]["format"]["name"], "r");
    const nlohmann::json v = nlohmann::json::parse(OutputText(r), nullptr, false);
    ASSERT_TRUE(v.is_object()) << r;
    EXPECT_EQ(v.size(), 2u) << v;
    ASSERT_TRUE(v.contains("n") && v["n"].is_number_integer()) << v;
    EXPECT_GE(v["n"].get<int>(), 0);
    EXPECT_LE(v["n"].get<int>(), 99);
    EXPECT_TRUE(v.contains("tag") && (v["tag"] == "x" || v["tag"] == "y")) << v;
  }
  const nlohmann::json object =
      Ok({{"input", "JSON"}, {"seed", 1}, {"text", {{"format", {{"type", "json_object"}}}}}});
  EXPECT_TRUE(nlohmann::json::parse(OutputText(object), nullptr, false).is_object()) << object;
}

TEST_F(ResponsesRoutesTest, ForcedToolChoiceGivesFunctionCallItems) {
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const nlohmann::json choice =
        seed % 2 == 0 ? nlohmann::json({{"type", "function"}, {"name", "add"}}) : nlohmann::json("required");
    const nlohmann::json r = Ok({{"input", "Add two numbers"},
                                 {"temperature", 1.0},
                                 {"seed", seed},
                                 {"tools", {kAddTool}},
                                 {"tool_choice", choice},
                                 {"parallel_tool_calls", false}});
    EXPECT_EQ(r["status"], "completed") << r;
    EXPECT_EQ(r["tool_choice"], choice);
    EXPECT_EQ(r["tools"][0]["name"], "add");
    ASSERT_EQ(r["output"].size(), 1u) << r;  // the call alone: no message item
    const nlohmann::json& call = r["output"][0];
    EXPECT_EQ(call["type"], "function_call") << r;
    EXPECT_EQ(call["name"], "add");
    EXPECT_EQ(call["status"], "completed");
    EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u) << r;
    EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u) << r;
    const nlohmann::json args = nlohmann::json::parse(call["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << r;
    EXPECT_TRUE(args["a"].is_number_integer() && args["b"].is_number_integer()) << r;
  }
}

// A template that shows the tool calls and results it is given, so the prompt proves they arrived.
TEST(ResponsesRoundTripTest, FunctionCallItemsRenderAsToolCallsAndToolMessages) {
  const std::string dir = lockstep::testing::MakeTempDir("responses-template");
  std::ofstream(dir + "/t.jinja")
      << "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{% if m['tool_calls'] %}{% for c in "
         "m['tool_calls'] %}[call {{ c['id'] }} {{ c['function']['name'] }} {{ c['function']['arguments'] | "
         "tojson }}]{% endfor %}{% endif %}{% if m['tool_call_id'] %}[result of {{ m['tool_call_id'] }}]{% "
         "endif %}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";
  ServerProcess server(TinyModel(), {"-t", "1", "--chat-template", dir + "/t.jinja"});
  ASSERT_TRUE(server.ok()) << server.log();
  const auto items = [](const std::string& city, const std::string& result) {
    return nlohmann::json::array(
        {{{"role", "user"}, {"content", "Weather?"}},
         {{"type", "function_call"}, {"call_id", "call_7"}, {"name", "weather"}, {"arguments", city}},
         {{"type", "function_call_output"}, {"call_id", "call_7"}, {"output", result}}});
  };
  const auto input_tokens = [&](const nlohmann::json& input) {
    const HttpResponse r = Post(server.port(), "/v1/responses", {{"input", input}, {"max_output_tokens", 1}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["usage"]["input_tokens"].get<int>() : -1;
  };
  const nlohmann::json chat = nlohmann::json::parse(R"([{"role": "user", "content": "Weather?"},
    {"role": "assistant", "tool_calls": [{"id": "call_7", "type": "function",
     "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_7", "content": "sunny"}])");
  const HttpResponse rendered = Post(server.port(), "/apply-template", {{"messages", chat}});
  ASSERT_EQ(rendered.status, 200) << rendered.body;
  const std::string prompt = rendered.Json()["prompt"];
  EXPECT_NE(prompt.find("[call call_7 weather {\"city\": \"Paris\"}]"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("tool: sunny[result of call_7]"), std::string::npos) << prompt;
  const HttpResponse tokens = Post(server.port(), "/tokenize", {{"messages", chat}});
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const int expected = tokens.Json()["count"];
  EXPECT_EQ(input_tokens(items("{\"city\": \"Paris\"}", "sunny")), expected);
  // The arguments and the output are in the prompt: longer ones make it longer.
  EXPECT_GT(input_tokens(items("{\"city\": \"Paris, France\"}", "sunny")), expected);
  EXPECT_GT(input_tokens(items("{\"city\": \"Paris\"}", "sunny and warm")), expected);
}

TEST_F(ResponsesRoutesTest, StreamEventsInOrderAndDeltasAddUp) {
  const nlohmann::json body = {{"input", "Once upon a time"}, {"max_output_tokens", 8}, {"seed", 5}};
  const std::vector<nlohmann::json> events = StreamEvents(body);
  const std::vector<std::string> types = Types(events);
  ASSERT_GE(types.size(), 8u);
  EXPECT_EQ(types[0], "response.created");
  EXPECT_EQ(types[1], "response.in_progress");
  EXPECT_EQ(events[0]["response"]["status"], "in_progress");
  EXPECT_EQ(events[0]["response"]["output"], nlohmann::json::array());
  EXPECT_EQ(types[2], "response.output_item.added");
  EXPECT_EQ(types[3], "response.content_part.added");
  const size_t n = types.size();
  EXPECT_EQ(types[n - 4], "response.output_text.done");
  EXPECT_EQ(types[n - 3], "response.content_part.done");
  EXPECT_EQ(types[n - 2], "response.output_item.done");
  EXPECT_TRUE(types[n - 1] == "response.completed" || types[n - 1] == "response.incomplete") << types[n - 1];
  std::string deltas;
  for (size_t i = 4; i + 4 < n; ++i) {
    EXPECT_EQ(types[i], "response.output_text.delta");
    EXPECT_EQ(events[i]["item_id"], events[2]["item"]["id"]);
    EXPECT_EQ(events[i]["output_index"], 0);
    EXPECT_EQ(events[i]["content_index"], 0);
    deltas += events[i]["delta"].get<std::string>();
  }
  const nlohmann::json& final_response = events[n - 1]["response"];
  EXPECT_EQ(events[n - 4]["text"], deltas);
  EXPECT_EQ(events[n - 2]["item"], final_response["output"][0]);
  EXPECT_EQ(OutputText(final_response), deltas);
  EXPECT_EQ(final_response["id"], events[0]["response"]["id"]);
  EXPECT_GE(final_response["usage"]["output_tokens"].get<int>(), 1);
  // The same seed without streaming: the same text, status and usage.
  const nlohmann::json whole = Ok(body);
  EXPECT_EQ(OutputText(whole), deltas);
  EXPECT_EQ(whole["status"], final_response["status"]);
  EXPECT_EQ(whole["usage"]["output_tokens"], final_response["usage"]["output_tokens"]);
}

TEST_F(ResponsesRoutesTest, StreamedFunctionCallArgumentsAddUp) {
  const nlohmann::json body = {{"input", "Add"},
                               {"seed", 3},
                               {"tools", {kAddTool}},
                               {"tool_choice", {{"type", "function"}, {"name", "add"}}}};
  const std::vector<nlohmann::json> events = StreamEvents(body);
  const std::vector<std::string> types = Types(events);
  ASSERT_GE(types.size(), 6u);
  EXPECT_EQ(types[2], "response.output_item.added");
  EXPECT_EQ(events[2]["item"]["type"], "function_call");
  EXPECT_EQ(events[2]["item"]["name"], "add");
  const size_t n = types.size();
  EXPECT_EQ(types[n - 3], "response.function_call_arguments.done");
  EXPECT_EQ(types[n - 2], "response.output_item.done");
  EXPECT_EQ(types[n - 1], "response.completed");
  std::string arguments;
  for (size_t i = 3; i + 3 < n; ++i) {
    EXPECT_EQ(types[i], "response.function_call_arguments.delta");
    EXPECT_EQ(events[i]["item_id"], events[2]["item"]["id"]);
    arguments += events[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(events[n - 3]["arguments"], arguments);
  EXPECT_TRUE(nlohmann::json::parse(arguments, nullptr, false).is_object()) << arguments;
  const nlohmann::json whole = Ok(body);
  ASSERT_EQ(whole["output"].size(), 1u) << whole;
  EXPECT_EQ(whole["output"][0]["arguments"], arguments);
  // Ids differ between responses; within the stream, the final response repeats the streamed item.
  EXPECT_EQ(events[n - 1]["response"]["output"][0], events[n - 2]["item"]);
  EXPECT_EQ(events[n - 2]["item"]["call_id"], events[2]["item"]["call_id"]);
  EXPECT_EQ(events[n - 2]["item"]["arguments"], arguments);
}

TEST_F(ResponsesRoutesTest, BadInputItemsAre400NamingTheItem) {
  ExpectRefused(R"({})", "input");
  ExpectRefused(R"({"input": 5})", "input");
  ExpectRefused(R"({"input": []})", "input");
  ExpectRefused(R"({"input": ["hi"]})", "input[0]");
  ExpectRefused(R"({"input": [{"role": "bot", "content": "x"}]})", "input[0].role");
  ExpectRefused(R"({"input": [{"content": "x"}]})", "input[0].role");
  ExpectRefused(R"({"input": [{"role": "user"}]})", "input[0].content");
  ExpectRefused(R"({"input": [{"role": "user", "content": 3}]})", "input[0].content");
  ExpectRefused(R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})",
                "input[0].content[0].type");
  ExpectRefused(R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})",
                "input[0].content[0].text");
  // A reasoning item is taken (for the assistant message after it), but alone it leaves no message.
  ExpectRefused(R"({"input": [{"type": "reasoning", "summary": []}]})", "input");
  ExpectRefused(R"({"input": [{"type": "reasoning", "content": [{"type": "output_text", "text": "x"}]}]})",
                "input[0].content[0].type");
  ExpectRefused(R"({"input": [{"type": "image_generation_call"}]})", "input[0].type");
  ExpectRefused(R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})",
                "input[0].call_id");
  ExpectRefused(R"({"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]})",
                "input[0].name");
  ExpectRefused(R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{x"}]})",
                "input[0].arguments");
  ExpectRefused(R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output");
  ExpectRefused(R"({"input": [{"type": "function_call_output", "output": "x"}]})", "input[0].call_id");
}

// The tokens and logprobs of logprob entries, checking each top list has `top` alternatives.
std::vector<std::pair<std::string, double>> ResponsesLogprobValues(const nlohmann::json& entries,
                                                                   size_t top) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& e : entries) {
    EXPECT_TRUE(e["bytes"].is_array()) << e;
    EXPECT_EQ(e["top_logprobs"].size(), top) << e;
    for (const auto& t : e["top_logprobs"]) EXPECT_TRUE(t["logprob"].is_number()) << t;
    out.emplace_back(e["token"].get<std::string>(), e["logprob"].get<double>());
  }
  return out;
}

void ExpectSameResponsesLogprobs(const std::vector<std::pair<std::string, double>>& a,
                                 const std::vector<std::pair<std::string, double>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << i;
    EXPECT_NEAR(a[i].second, b[i].second, 1e-4) << i;
  }
}

TEST_F(ResponsesRoutesTest, IncludedLogprobsMatchChatAndTheStream) {
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Once upon a time"}}};
  const nlohmann::json body = {{"input", "Once upon a time"},
                               {"max_output_tokens", 7},
                               {"temperature", 0},
                               {"include", nlohmann::json::array({"message.output_text.logprobs"})},
                               {"top_logprobs", 3}};
  const nlohmann::json r = Ok(body);
  ASSERT_EQ(r["output"].size(), 1u) << r;
  const nlohmann::json& part = r["output"][0]["content"][0];
  ASSERT_TRUE(part.contains("logprobs")) << r;
  const auto values = ResponsesLogprobValues(part["logprobs"], 3);
  EXPECT_EQ(values.size(), r["usage"]["output_tokens"].get<size_t>());  // one per generated token
  // The chat route's logprobs for the same messages (greedy).
  const HttpResponse chat = Post(port(), "/v1/chat/completions",
                                 {{"messages", messages},
                                  {"max_tokens", 7},
                                  {"temperature", 0},
                                  {"logprobs", true},
                                  {"top_logprobs", 3}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  ExpectSameResponsesLogprobs(values,
                              ResponsesLogprobValues(chat.Json()["choices"][0]["logprobs"]["content"], 3));
  // Streamed: the deltas' logprobs add up to the whole response's; .done and the final part hold them all.
  const std::vector<nlohmann::json> events = StreamEvents(body);
  ASSERT_GE(events.size(), 4u);
  nlohmann::json streamed = nlohmann::json::array();
  const nlohmann::json* done = nullptr;
  for (const auto& e : events) {
    if (e["type"] == "response.output_text.delta") {
      for (const auto& lp : e["logprobs"]) streamed.push_back(lp);
    }
    if (e["type"] == "response.output_text.done") done = &e;
  }
  ASSERT_NE(done, nullptr);
  ExpectSameResponsesLogprobs(ResponsesLogprobValues(streamed, 3), values);
  EXPECT_EQ((*done)["logprobs"], streamed);
  EXPECT_EQ(events.back()["response"]["output"][0]["content"][0]["logprobs"], streamed);
  // include without top_logprobs: token logprobs, empty top lists.
  nlohmann::json plain = body;
  plain.erase("top_logprobs");
  const nlohmann::json p = Ok(plain);
  const auto tokens = ResponsesLogprobValues(p["output"][0]["content"][0]["logprobs"], 0);
  ExpectSameResponsesLogprobs(tokens, values);
}

TEST_F(ResponsesRoutesTest, NoLogprobsUnlessIncluded) {
  nlohmann::json body = {{"input", "Once upon a time"}, {"max_output_tokens", 4}, {"top_logprobs", 2}};
  const nlohmann::json r = Ok(body);
  EXPECT_FALSE(r["output"][0]["content"][0].contains("logprobs")) << r;
  body["include"] =
      nlohmann::json::array({"reasoning.encrypted_content"});  // accepted: lockstep has no reasoning items
  EXPECT_FALSE(Ok(body)["output"][0]["content"][0].contains("logprobs"));
  for (const auto& e : StreamEvents(body)) {
    if (e["type"] == "response.output_text.delta") {
      EXPECT_EQ(e["logprobs"], nlohmann::json::array()) << e;
    }
  }
}

TEST_F(ResponsesRoutesTest, BadFieldsAre400NamingTheField) {
  ExpectRefused(R"({"input": "x", "instructions": 5})", "instructions");
  ExpectRefused(R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens");
  ExpectRefused(R"({"input": "x", "max_output_tokens": 100000})", "max_output_tokens");
  ExpectRefused(R"({"input": "x", "temperature": "hot"})", "temperature");
  ExpectRefused(R"({"input": "x", "top_p": 0})", "top_p");
  ExpectRefused(R"({"input": "x", "seed": "s"})", "seed");
  ExpectRefused(R"({"input": "x", "stream": "yes"})", "stream");
  ExpectRefused(R"({"input": "x", "tools": {}})", "tools");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function"}]})", "tools[0].name");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function", "name": "a b"}]})", "tools[0].name");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": 1}]})",
                "tools[0].parameters");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function", "name": "f",
            "parameters": {"type": "object", "patternProperties": {}}}]})",
                "tools[0].parameters");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function", "name": "f", "strict": "yes"}]})",
                "tools[0].strict");
  ExpectRefused(R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice");
  ExpectRefused(R"({"input": "x", "tool_choice": 1})", "tool_choice");
  ExpectRefused(R"({"input": "x", "tool_choice": {"type": "file_search"}})", "tool_choice.type");
  ExpectRefused(R"({"input": "x", "tool_choice": {"type": "function"}})", "tool_choice.name");
  ExpectRefused(R"({"input": "x", "tools": [{"type": "function", "name": "f"}],
            "tool_choice": {"type": "function", "name": "g"}})",
                "tool_choice");
  ExpectRefused(R"({"input": "x", "tool_choice": "required"})", "tool_choice");
  ExpectRefused(R"({"input": "x", "parallel_tool_calls": 1})", "parallel_tool_calls");
  ExpectRefused(R"({"input": "x", "text": "json"})", "text");
  ExpectRefused(R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format.type");
  ExpectRefused(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "r"}}})",
                "text.format.schema");
  ExpectRefused(R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {"type": "strin"}}}})",
                "text.format.schema");
  ExpectRefused(R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {}, "strict": 1}}})",
                "text.format.strict");
  ExpectRefused(R"({"input": "x", "text": {"verbosity": "loud"}})", "text.verbosity");
  ExpectRefused(R"({"input": "x", "metadata": {"k": 1}})", "metadata");
  ExpectRefused(R"({"input": "x", "store": "yes"})", "store");
  ExpectRefused(R"({"input": "x", "reasoning": "high"})", "reasoning");
  ExpectRefused(R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id");
  ExpectRefused(R"({"input": "x", "background": true})", "background");
  ExpectRefused(R"({"input": "x", "conversation": "conv_1"})", "conversation");
  ExpectRefused(R"({"input": "x", "user": 7})", "user");
  ExpectRefused(R"({"input": "x", "include": "message.output_text.logprobs"})", "include");
  ExpectRefused(R"({"input": "x", "include": [3]})", "include[0]");
  ExpectRefused(R"({"input": "x", "include": ["message.output_text.logprobs", "everything"]})", "include[1]");
  ExpectRefused(R"({"input": "x", "top_logprobs": 21})", "top_logprobs");
  ExpectRefused(R"({"input": "x", "top_logprobs": -1})", "top_logprobs");
  ExpectRefused(R"({"input": "x", "top_logprobs": "3"})", "top_logprobs");
  // Accepted and ignored: store, reasoning.effort, include, truncation, unknown fields (as chat).
  EXPECT_EQ(Post(port(), "/v1/responses",
                 {{"input", "x"},
                  {"store", false},
                  {"background", false},
                  {"reasoning", {{"effort", "low"}}},
                  {"include", nlohmann::json::array()},
                  {"truncation", "disabled"},
                  {"max_output_tokens", 1},
                  {"no_such_field", 1}})
                .status,
            200);
  EXPECT_EQ(Post(port(), "/v1/responses", {{"model", "other"}, {"input", "x"}}).status, 404);
  EXPECT_EQ(Request(port(), "POST", "/v1/responses", "{oops").status, 400);
  EXPECT_EQ(Request(port(), "GET", "/v1/responses").status, 405);
}

}  // namespace
}  // namespace lockstep::server::testing
