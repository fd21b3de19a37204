// Reasoning on the Responses API (/v1/responses): a reply's <think> block is a reasoning item (output 0,
// reasoning_text) before the message, whole and streamed alike, in the events the official OpenAI client's
// ResponseStream accumulates; reasoning items sent back as input reach the template as the next assistant
// message's reasoning_content. The server's template opens a block in every generation prompt (as
// DeepSeek-R1's does), so the random model's whole reply is reasoning.
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "server/sse.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

const std::string& ThinkingTemplate() {
  static const std::string path = [] {
    const std::string file = ::lockstep::testing::MakeTempDir("lockstep-responses-reasoning") + "/t.jinja";
    std::ofstream(file)
        << "{% if reasoning_effort is defined %}effort={{ reasoning_effort }}\n{% endif %}"
           "{% if extra is defined %}{{ extra }}\n{% endif %}"
           "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['reasoning_content'] %}"
           "<think>{{ m['reasoning_content'] }}</think>{% endif %}{{ m['content'] }}<|im_end|>\n"
           "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
    return file;
  }();
  return path;
}

class ResponsesReasoningTest : public SharedServerTest<ResponsesReasoningTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--chat-template", ThinkingTemplate()}; }

 protected:
  static std::vector<nlohmann::json> StreamEvents(nlohmann::json body) {
    body["stream"] = true;
    const HttpResponse r = Request(port(), "POST", "/v1/responses", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    SseParser parser;
    std::vector<nlohmann::json> events;
    for (const SseParser::Event& e : parser.Feed(r.body)) {
      nlohmann::json data = nlohmann::json::parse(e.data, nullptr, false);
      EXPECT_TRUE(data.is_object()) << e.data;
      if (data.is_object()) events.push_back(std::move(data));
    }
    return events;
  }
};

nlohmann::json Body(uint64_t seed, int max_output_tokens) {
  return {{"input", "Why is the sky blue?"},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_output_tokens", max_output_tokens}};
}

TEST_F(ResponsesReasoningTest, ReasoningItemBeforeTheMessageWholeAndStreamed) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const nlohmann::json body = Body(seed, 16);
    const HttpResponse r = Post(port(), "/v1/responses", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    if (whole["usage"]["output_tokens"] == 0) continue;  // an end-of-text token at once: nothing to check
    ASSERT_EQ(whole["output"].size(), 2u) << r.body;
    const nlohmann::json& item = whole["output"][0];
    EXPECT_EQ(item["type"], "reasoning") << r.body;
    EXPECT_EQ(item["id"].get<std::string>().rfind("rs_", 0), 0u) << r.body;
    EXPECT_EQ(item["summary"], nlohmann::json::array()) << r.body;
    ASSERT_EQ(item["content"].size(), 1u) << r.body;
    EXPECT_EQ(item["content"][0]["type"], "reasoning_text") << r.body;
    const std::string reasoning = item["content"][0]["text"];
    // Never closed: the whole reply is reasoning, cut by max_output_tokens.
    if (whole["status"] == "incomplete") {
      EXPECT_EQ(item["status"], "incomplete") << r.body;
    }
    EXPECT_EQ(whole["output"][1]["type"], "message") << r.body;
    EXPECT_EQ(whole["output"][1]["content"][0]["text"], "") << r.body;
    // Every token is the (unclosed) block's.
    EXPECT_EQ(whole["usage"]["output_tokens_details"]["reasoning_tokens"], whole["usage"]["output_tokens"])
        << r.body;

    const std::vector<nlohmann::json> events = StreamEvents(body);
    std::string streamed;
    std::vector<std::string> order;
    for (const nlohmann::json& e : events) {
      const std::string type = e["type"];
      if (type == "response.reasoning_text.delta") {
        EXPECT_EQ(e["output_index"], 0) << e;
        streamed += e["delta"].get<std::string>();
        if (order.empty() || order.back() != type) order.push_back(type);
      } else if (type.rfind("response.output_item.", 0) == 0) {
        order.push_back(type + " " + e["item"]["type"].get<std::string>() + " " + e["output_index"].dump());
      } else if (type == "response.reasoning_text.done") {
        EXPECT_EQ(e["text"], reasoning) << e;
        order.push_back(type);
      }
    }
    EXPECT_EQ(streamed, reasoning);  // same seed, same tokens
    const std::vector<std::string> expected = {
        "response.output_item.added reasoning 0", "response.reasoning_text.delta",
        "response.reasoning_text.done",           "response.output_item.done reasoning 0",
        "response.output_item.added message 1",   "response.output_item.done message 1"};
    if (!reasoning.empty()) {
      EXPECT_EQ(order, expected);
    }
    const nlohmann::json& last = events.back();
    ASSERT_TRUE(last.contains("response")) << last;
    nlohmann::json output = last["response"]["output"];
    nlohmann::json whole_output = whole["output"];
    for (nlohmann::json* items : {&output, &whole_output}) {
      for (nlohmann::json& o : *items) o.erase("id");  // each response has its own ids
    }
    EXPECT_EQ(output, whole_output);
  }
}

// The chat fields a template reads pass through: reasoning.effort (as reasoning_effort),
// chat_template_kwargs; reasoning_format none keeps the block in the message.
TEST_F(ResponsesReasoningTest, TemplateFieldsPassThrough) {
  const auto input_tokens = [](nlohmann::json body) {
    body["input"] = "Hi";
    body["max_output_tokens"] = 1;
    const HttpResponse r = Post(port(), "/v1/responses", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["usage"]["input_tokens"].get<int>() : -1;
  };
  const int plain = input_tokens(nlohmann::json::object());
  EXPECT_GT(input_tokens({{"reasoning", {{"effort", "high"}}}}), plain);
  EXPECT_GT(input_tokens({{"chat_template_kwargs", {{"extra", "a few more words for the template"}}}}),
            plain + 3);
  for (const nlohmann::json& bad :
       {nlohmann::json{{"reasoning", {{"effort", 3}}}}, nlohmann::json{{"chat_template_kwargs", 3}},
        nlohmann::json{{"reasoning_format", "sometimes"}}}) {
    nlohmann::json body = bad;
    body["input"] = "Hi";
    const HttpResponse r = Post(port(), "/v1/responses", body);
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"],
              bad.begin().key() == "reasoning" ? "reasoning.effort" : bad.begin().key())
        << r.body;
  }
  nlohmann::json body = Body(1, 8);
  body["reasoning_format"] = "none";
  const HttpResponse r = Post(port(), "/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json output = r.Json()["output"];  // a copy: the loop must not outlive a temporary
  for (const nlohmann::json& item : output) EXPECT_NE(item["type"], "reasoning") << r.body;
}

// A reasoning item sent back (as agents send a turn's output items) becomes the next assistant message's
// reasoning_content: the template shows it, so the prompt grows by its tokens.
TEST_F(ResponsesReasoningTest, ReasoningItemsAsInputReachTheTemplate) {
  const auto input_tokens = [](const nlohmann::json& input) {
    const HttpResponse r = Post(port(), "/v1/responses", {{"input", input}, {"max_output_tokens", 1}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["usage"]["input_tokens"].get<int>() : -1;
  };
  nlohmann::json turn = nlohmann::json::parse(R"([
    {"role": "user", "content": "Hi"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "ignored"}],
     "content": [{"type": "reasoning_text", "text": "they greet me so I greet them back"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
    {"role": "user", "content": "Bye"}])");
  const int with = input_tokens(turn);
  nlohmann::json without = turn;
  without.erase(1);
  EXPECT_GT(with, input_tokens(without) + 5);
  // Before a function call, the same.
  nlohmann::json call = nlohmann::json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "call the weather tool for the city"}]},
    {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"}])");
  const int call_with = input_tokens(call);
  call.erase(1);
  EXPECT_GT(call_with, input_tokens(call) + 5);
  for (const char* bad : {R"({"type": "reasoning", "content": [{"type": "output_text", "text": "x"}]})",
                          R"({"type": "reasoning", "content": [{"type": "reasoning_text", "text": 3}]})",
                          R"({"type": "reasoning", "content": "x"})",
                          R"({"type": "reasoning", "summary": [{"type": "summary_text"}]})"}) {
    const HttpResponse r =
        Post(port(), "/v1/responses", {{"input", nlohmann::json::array({nlohmann::json::parse(bad)})}});
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"].get<std::string>().rfind("input[0].", 0), 0u) << r.body;
  }
}

// With reasoning split out, which tokens made the message's text is not kept: no logprobs (documented).
TEST_F(ResponsesReasoningTest, NoTextLogprobsWhenReasoningIsSplit) {
  nlohmann::json body = Body(1, 8);
  body["include"] = {"message.output_text.logprobs"};
  const HttpResponse r = Post(port(), "/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json response = r.Json();  // kept: a loop over a temporary's member would dangle
  for (const nlohmann::json& item : response["output"]) {
    if (item["type"] == "message") {
      EXPECT_FALSE(item["content"][0].contains("logprobs")) << r.body;
    }
  }
}

}  // namespace
}  // namespace lockstep::server::testing
