// Reasoning output and template variables end to end (chat/reasoning.h, --reasoning-format,
// chat_template_kwargs): a random-weight model made to write a <think> block by a GBNF grammar (a raw grammar
// keeps the split; other output constraints turn it off) under a Qwen3-like template; the block comes back as
// reasoning_content, whole and streamed alike; enable_thinking and other variables reach the template, from
// the request and from --chat-template-kwargs / --reasoning-budget.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

// ChatML with Qwen3's enable_thinking switch, gpt-oss's reasoning_effort line, a DeepSeek-R1-like opened
// block (open_think), and the reasoning_content of earlier replies shown (as Qwen3's template shows the last
// turn's).
const char* const kTemplate =
    "{% if reasoning_effort is defined %}effort={{ reasoning_effort }}\n{% endif %}{% for m in messages "
    "%}<|im_start|>{{ m['role'] }}\n{% if m['reasoning_content'] %}<think>{{ "
    "m['reasoning_content'] }}</think>{% endif %}{{ m['content'] }}<|im_end|>\n{% endfor %}{% if "
    "add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is "
    "false %}<think>\n\n</think>\n\n{% endif %}{% if open_think %}<think>\n{% endif %}{% endif %}";

const std::string& TemplateFile() {
  static const std::string path = [] {
    const std::string file = ::lockstep::testing::MakeTempDir("lockstep-reasoning") + "/qwen3ish.jinja";
    std::ofstream(file) << kTemplate;
    return file;
  }();
  return path;
}

class ReasoningRoutesTest : public SharedServerTest<ReasoningRoutesTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--chat-template", TemplateFile()}; }
};

const char* const kBlockGrammar = R"(root ::= "<think>" [a-z ]{3,12} "</think>\n\n" [a-z]{1,8})";

nlohmann::json Chat(uint64_t seed) {
  return {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_tokens", 64}};
}

TEST_F(ReasoningRoutesTest, ThinkBlockIsReasoningContentWholeAndStreamed) {
  for (uint64_t seed = 0; seed < 4; ++seed) {
    nlohmann::json body = Chat(seed);
    body["grammar"] = kBlockGrammar;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json message = r.Json()["choices"][0]["message"];
    ASSERT_TRUE(message["reasoning_content"].is_string()) << r.body;
    const std::string reasoning = message["reasoning_content"];
    const std::string content = message["content"];
    // The tags and the whitespace around the block are gone; what the grammar wrote inside is kept, trimmed.
    EXPECT_TRUE(std::regex_match(reasoning, std::regex("[a-z]([a-z ]*[a-z])?|"))) << r.body;
    EXPECT_TRUE(std::regex_match(content, std::regex("[a-z]{1,8}"))) << r.body;
    const StreamedChat streamed = StreamChat(port(), body);
    EXPECT_TRUE(streamed.has_reasoning);
    EXPECT_EQ(streamed.reasoning, reasoning);  // same seed, same tokens
    EXPECT_EQ(streamed.content, content);
    EXPECT_EQ(streamed.finish_reason, "stop");
  }
}

TEST_F(ReasoningRoutesTest, ReasoningFormatNoneKeepsTheBlockInContent) {
  nlohmann::json body = Chat(1);
  body["grammar"] = kBlockGrammar;
  body["reasoning_format"] = "none";
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json message = r.Json()["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << r.body;
  EXPECT_EQ(message["content"].get<std::string>().rfind("<think>", 0), 0u) << r.body;
  EXPECT_EQ(StreamChat(port(), body).content, message["content"]);
  body["reasoning_format"] = "deepseek-legacy";
  EXPECT_EQ(Post(port(), "/v1/chat/completions", body).status, 400);
}

// The tokens of a reply that end its reasoning block (the one completing </think> included), from its
// logprobs' token texts.
int ReasoningTokensOf(const nlohmann::json& logprobs_content) {
  std::string text;
  int tokens = 0;
  for (const nlohmann::json& entry : logprobs_content) {
    text += entry["token"].get<std::string>();
    ++tokens;
    if (text.find("</think>") != std::string::npos) return tokens;
  }
  return tokens;
}

// usage.completion_tokens_details.reasoning_tokens (OpenAI's): the block's tokens, whole and streamed.
TEST_F(ReasoningRoutesTest, UsageCountsTheReasoningTokens) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    nlohmann::json body = Chat(seed);
    body["grammar"] = kBlockGrammar;
    body["logprobs"] = true;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json whole = r.Json();
    const int expected = ReasoningTokensOf(whole["choices"][0]["logprobs"]["content"]);
    const nlohmann::json usage = whole["usage"];
    EXPECT_EQ(usage["completion_tokens_details"]["reasoning_tokens"], expected) << r.body;
    EXPECT_LT(expected, usage["completion_tokens"].get<int>()) << r.body;  // the answer follows
    EXPECT_GE(expected, 3) << r.body;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    nlohmann::json streamed_usage;
    for (const std::string& data : Stream(port(), "/v1/chat/completions", body)) {
      const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
      if (chunk.is_object() && chunk["usage"].is_object()) streamed_usage = chunk["usage"];
    }
    // The same tokens (the same seed); cached_tokens may differ (the first run left the prompt cached).
    EXPECT_EQ(streamed_usage["completion_tokens"], usage["completion_tokens"]);
    EXPECT_EQ(streamed_usage["completion_tokens_details"], usage["completion_tokens_details"]);
  }
  // No block: 0; the format off: no count at all.
  nlohmann::json body = Chat(2);
  body["grammar"] = R"(root ::= [a-z]{2,6})";
  const HttpResponse plain = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.Json()["usage"]["completion_tokens_details"]["reasoning_tokens"], 0) << plain.body;
  body["grammar"] = kBlockGrammar;
  body["reasoning_format"] = "none";
  const HttpResponse none = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_FALSE(none.Json()["usage"].contains("completion_tokens_details")) << none.body;
}

// A reply without a block is all content, with no reasoning_content.
TEST_F(ReasoningRoutesTest, ReplyWithoutBlockIsContent) {
  nlohmann::json body = Chat(2);
  body["grammar"] = R"(root ::= [a-z]{2,6})";
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json message = r.Json()["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content")) << r.body;
  EXPECT_TRUE(std::regex_match(message["content"].get<std::string>(), std::regex("[a-z]{2,6}"))) << r.body;
  const StreamedChat streamed = StreamChat(port(), body);
  EXPECT_FALSE(streamed.has_reasoning);
  EXPECT_EQ(streamed.content, message["content"]);
}

// The template's generation prompt opened the block (open_think, a request variable): the reply's reasoning
// has no opening tag of its own.
TEST_F(ReasoningRoutesTest, PromptThatOpensTheBlock) {
  nlohmann::json body = Chat(3);
  body["chat_template_kwargs"] = {{"open_think", true}};
  const HttpResponse rendered = Post(port(), "/apply-template", body);
  ASSERT_EQ(rendered.status, 200) << rendered.body;
  EXPECT_NE(rendered.Json()["prompt"].get<std::string>().find("assistant\n<think>\n"), std::string::npos);
  body["grammar"] = R"(root ::= [a-z]{3,10} "</think>" [a-z]{1,8})";
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json message = r.Json()["choices"][0]["message"];
  EXPECT_TRUE(std::regex_match(message["reasoning_content"].get<std::string>(), std::regex("[a-z]{3,10}")))
      << r.body;
  EXPECT_TRUE(std::regex_match(message["content"].get<std::string>(), std::regex("[a-z]{1,8}"))) << r.body;
  const StreamedChat streamed = StreamChat(port(), body);
  EXPECT_EQ(streamed.reasoning, message["reasoning_content"]);
  EXPECT_EQ(streamed.content, message["content"]);
  // A JSON schema constrains the reply from its first token: no reasoning is split out, even here.
  body.erase("grammar");
  body["response_format"] = {{"type", "json_object"}};
  const HttpResponse json = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(json.status, 200) << json.body;
  const nlohmann::json json_message = json.Json()["choices"][0]["message"];
  EXPECT_FALSE(json_message.contains("reasoning_content")) << json.body;
  EXPECT_EQ(json_message["content"].get<std::string>().rfind("{", 0), 0u) << json.body;  // maybe cut short
}

// reasoning_effort (OpenAI's) is the template variable of that name; a request's chat_template_kwargs
// override it.
TEST_F(ReasoningRoutesTest, ReasoningEffortReachesTheTemplate) {
  const auto rendered = [](const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/apply-template", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json()["prompt"].get<std::string>() : "";
  };
  nlohmann::json body = Chat(0);
  EXPECT_EQ(rendered(body).find("effort="), std::string::npos);
  body["reasoning_effort"] = "low";
  EXPECT_EQ(rendered(body).rfind("effort=low\n", 0), 0u);
  body["chat_template_kwargs"] = {{"reasoning_effort", "high"}};
  EXPECT_EQ(rendered(body).rfind("effort=high\n", 0), 0u);
  body.erase("chat_template_kwargs");
  body["reasoning_effort"] = 2;
  const HttpResponse bad = Post(port(), "/v1/chat/completions", body);
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.Json()["error"]["param"], "reasoning_effort") << bad.body;
}

TEST_F(ReasoningRoutesTest, TemplateKwargsReachTheTemplateAndAreChecked) {
  nlohmann::json body = Chat(0);
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const HttpResponse off = Post(port(), "/apply-template", body);
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_NE(off.Json()["prompt"].get<std::string>().find("assistant\n<think>\n\n</think>\n\n"),
            std::string::npos)
      << off.body;
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  const HttpResponse on = Post(port(), "/apply-template", body);
  ASSERT_EQ(on.status, 200) << on.body;
  EXPECT_EQ(on.Json()["prompt"].get<std::string>().find("</think>"), std::string::npos) << on.body;
  // The same prompt reaches the model: one more token per tag and blank line.
  body["max_tokens"] = 1;
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const HttpResponse gen_off = Post(port(), "/v1/chat/completions", body);
  body["chat_template_kwargs"] = nlohmann::json::object();
  const HttpResponse gen_on = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(gen_off.status, 200) << gen_off.body;
  ASSERT_EQ(gen_on.status, 200) << gen_on.body;
  EXPECT_GT(gen_off.Json()["usage"]["prompt_tokens"].get<int>(),
            gen_on.Json()["usage"]["prompt_tokens"].get<int>());
  for (const nlohmann::json& bad : {nlohmann::json("x"), nlohmann::json::array(), nlohmann::json(1),
                                    nlohmann::json{{"messages", nlohmann::json::array()}},
                                    nlohmann::json{{"add_generation_prompt", false}}}) {
    body["chat_template_kwargs"] = bad;
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], "chat_template_kwargs") << r.body;
  }
}

// A tool call after the block: parsed from the content, the reasoning beside it, whole and streamed.
TEST_F(ReasoningRoutesTest, ToolCallAfterTheBlock) {
  nlohmann::json body = Chat(5);
  body["tools"] = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "get",
      "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}])");
  body["grammar"] =
      R"(root ::= "<think>" [a-z ]{3,12} "</think>\n\n{\"name\": \"get\", \"arguments\": {\"x\": 1}}")";
  const HttpResponse r = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json choice = r.Json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  EXPECT_TRUE(choice["message"]["reasoning_content"].is_string()) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get") << r.body;
  EXPECT_EQ(
      nlohmann::json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
      nlohmann::json({{"x", 1}}))
      << r.body;
  nlohmann::json streamed = body;
  streamed["stream"] = true;
  std::string reasoning, name, arguments, finish;
  for (const std::string& data : Stream(port(), "/v1/chat/completions", streamed)) {
    const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
    if (!chunk.is_object() || chunk["choices"].empty()) continue;
    const nlohmann::json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content") && delta["content"].is_string()) {
      EXPECT_EQ(delta["content"], "") << data;  // the call is not content
    }
    for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
      if (call["function"].contains("name")) name += call["function"]["name"].get<std::string>();
      arguments += call["function"].value("arguments", "");
    }
    if (chunk["choices"][0]["finish_reason"].is_string()) finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(reasoning, choice["message"]["reasoning_content"]);
  EXPECT_EQ(name, "get");
  EXPECT_EQ(nlohmann::json::parse(arguments, nullptr, false), nlohmann::json({{"x", 1}})) << arguments;
  EXPECT_EQ(finish, "tool_calls");
}

// An earlier reply's reasoning_content is given to the template; it must be a string.
TEST_F(ReasoningRoutesTest, EarlierReasoningContentReachesTheTemplate) {
  nlohmann::json body = {{"messages",
                          {{{"role", "user"}, {"content", "Hi"}},
                           {{"role", "assistant"}, {"content", "Hello"}, {"reasoning_content", "greet back"}},
                           {{"role", "user"}, {"content", "Bye"}}}}};
  const HttpResponse r = Post(port(), "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.Json()["prompt"].get<std::string>().find("<think>greet back</think>Hello"), std::string::npos)
      << r.body;
  body["messages"][1]["reasoning_content"] = 7;
  const HttpResponse bad = Post(port(), "/v1/chat/completions", body);
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.Json()["error"]["param"], "messages[1].reasoning_content") << bad.body;
}

// The server's own variables (--chat-template-kwargs, --reasoning-budget 0) under a request's; and
// --reasoning-format none as the default.
TEST(ReasoningServerFlagsTest, DefaultsFromTheCommandLine) {
  ServerProcess server(TinyModel(),
                       {"-t", "1", "--chat-template", TemplateFile(), "--chat-template-kwargs",
                        R"({"open_think": true})", "--reasoning-budget", "0", "--reasoning-format", "none"});
  ASSERT_TRUE(server.ok()) << server.log();
  nlohmann::json body = Chat(0);
  const HttpResponse r = Post(server.port(), "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.Json()["prompt"].get<std::string>().find("assistant\n<think>\n\n</think>\n\n<think>\n"),
            std::string::npos)
      << r.body;
  body["chat_template_kwargs"] = {{"open_think", false}, {"enable_thinking", true}};
  const HttpResponse overridden = Post(server.port(), "/apply-template", body);
  ASSERT_EQ(overridden.status, 200) << overridden.body;
  EXPECT_EQ(overridden.Json()["prompt"].get<std::string>().find("<think>"), std::string::npos)
      << overridden.body;
  body["grammar"] = kBlockGrammar;
  const HttpResponse kept = Post(server.port(), "/v1/chat/completions", body);
  ASSERT_EQ(kept.status, 200) << kept.body;
  EXPECT_FALSE(kept.Json()["choices"][0]["message"].contains("reasoning_content")) << kept.body;
  body["reasoning_format"] = "auto";
  const HttpResponse split = Post(server.port(), "/v1/chat/completions", body);
  ASSERT_EQ(split.status, 200) << split.body;
  EXPECT_TRUE(split.Json()["choices"][0]["message"]["reasoning_content"].is_string()) << split.body;
}

}  // namespace
}  // namespace lockstep::server::testing
