// End-to-end server-side fan-out ("fan_out", server/fan_out.h) through `lockstep serve`: a combined prompt
// is answered as one sequence per question — each answer the same text as that question asked alone —
// as n choices or one stitched message, whole or streamed; the shared part is computed once (cached_tokens).
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "server/sse.h"

namespace lockstep::server::testing {
namespace {

class ServerFanOutTest : public SharedServerTest<ServerFanOutTest> {};

const char* kPreamble =
    "Some shared notes about the harbour light and its keepers, long enough to fill a block.";
const char* kInstruction = "Answer each question separately:";
const std::vector<std::string> kQuestions = {"Why was it raised?", "What did it burn?", "Who kept it?"};

std::string Combined() {
  std::string text = std::string(kPreamble) + "\n\n" + kInstruction;
  for (size_t i = 0; i < kQuestions.size(); ++i) text += "\n" + std::to_string(i + 1) + ". " + kQuestions[i];
  return text;
}

// What the splitter gives each question: the shared part, a blank line, the question.
std::string Alone(size_t i) {
  return std::string(kPreamble) + "\n\n" + kInstruction + "\n\n" + kQuestions[i];
}

nlohmann::json Chat(const std::string& content, const std::string& fan_out) {
  nlohmann::json body = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", content}}}},
      {"max_tokens", 6},
      {"temperature", 0}};
  if (!fan_out.empty()) body["fan_out"] = fan_out;
  return body;
}

std::string Answer(const nlohmann::json& response, size_t choice) {
  return response["choices"][choice]["message"]["content"];
}

TEST_F(ServerFanOutTest, ChoicesAnswerEachQuestionAsIfAskedAlone) {
  auto r = Post(port(), "/v1/chat/completions", Chat(Combined(), "choices"));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.Json();
  ASSERT_EQ(j["choices"].size(), kQuestions.size());
  for (size_t i = 0; i < kQuestions.size(); ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    auto alone = Post(port(), "/v1/chat/completions", Chat(Alone(i), ""));
    ASSERT_EQ(alone.status, 200) << alone.body;
    EXPECT_EQ(Answer(j, i), Answer(alone.Json(), 0)) << "question " << i;
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 6 * 3);
  // The system prompt and the shared notes were computed once: the other questions found them.
  EXPECT_GE(j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 2 * 16);
}

TEST_F(ServerFanOutTest, MessageStitchesEveryAnswerUnderItsQuestion) {
  auto choices = Post(port(), "/v1/chat/completions", Chat(Combined(), "choices"));
  auto message = Post(port(), "/v1/chat/completions", Chat(Combined(), "message"));
  ASSERT_EQ(message.status, 200) << message.body;
  const auto j = message.Json();
  ASSERT_EQ(j["choices"].size(), 1u);
  std::string want;
  for (size_t i = 0; i < kQuestions.size(); ++i) {
    if (i > 0) want += "\n\n";
    want += std::to_string(i + 1) + ". " + kQuestions[i] + "\n" + Answer(choices.Json(), i);
  }
  EXPECT_EQ(Answer(j, 0), want);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  // Streamed: the same text, one choice, in question order.
  nlohmann::json body = Chat(Combined(), "message");
  body["stream"] = true;
  int status = 0;
  auto events = Stream(port(), "/v1/chat/completions", body, nullptr, &status);
  ASSERT_EQ(status, 200);
  bool done = false;
  auto text = CollectOpenAiText(events, true, &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0], want);
  const auto last = nlohmann::json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerFanOutTest, StreamedChoicesCarryPerChoiceDeltas) {
  auto whole = Post(port(), "/v1/chat/completions", Chat(Combined(), "choices"));
  nlohmann::json body = Chat(Combined(), "choices");
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  int status = 0;
  auto events = Stream(port(), "/v1/chat/completions", body, nullptr, &status);
  ASSERT_EQ(status, 200);
  bool done = false;
  auto text = CollectOpenAiText(events, true, &done);
  ASSERT_EQ(text.size(), kQuestions.size());
  for (size_t i = 0; i < kQuestions.size(); ++i) EXPECT_EQ(text[int(i)], Answer(whole.Json(), i));
  const auto usage = nlohmann::json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 18);
}

TEST_F(ServerFanOutTest, CompletionsSplitTheirTextPrompt) {
  nlohmann::json body = {
      {"prompt", Combined()}, {"max_tokens", 5}, {"temperature", 0}, {"fan_out", "choices"}};
  auto r = Post(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.Json()["choices"].size(), 3u);
  auto alone = Post(port(), "/v1/completions", {{"prompt", Alone(1)}, {"max_tokens", 5}, {"temperature", 0}});
  EXPECT_EQ(r.Json()["choices"][1]["text"], alone.Json()["choices"][0]["text"]);
  body["fan_out"] = "message";
  auto m = Post(port(), "/v1/completions", body);
  ASSERT_EQ(m.status, 200) << m.body;
  const std::string text = m.Json()["choices"][0]["text"];
  EXPECT_EQ(text.rfind("1. " + kQuestions[0] + "\n", 0), 0u) << text;
}

TEST_F(ServerFanOutTest, OneQuestionRunsAsUsualAndBadValuesAreRejected) {
  auto one = Post(port(), "/v1/chat/completions", Chat("What is a lighthouse?", "choices"));
  auto plain = Post(port(), "/v1/chat/completions", Chat("What is a lighthouse?", ""));
  ASSERT_EQ(one.status, 200) << one.body;
  ASSERT_EQ(one.Json()["choices"].size(), 1u);
  EXPECT_EQ(Answer(one.Json(), 0), Answer(plain.Json(), 0));
  auto bad = Post(port(), "/v1/chat/completions", Chat(Combined(), "sideways"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("fan_out"), std::string::npos);
  nlohmann::json with_n = Chat(Combined(), "choices");
  with_n["n"] = 2;
  auto n2 = Post(port(), "/v1/chat/completions", with_n);
  EXPECT_EQ(n2.status, 400);
  EXPECT_NE(n2.body.find("n must be 1"), std::string::npos);
  nlohmann::json wrong_type = Chat(Combined(), "");
  wrong_type["fan_out"] = 3;
  EXPECT_EQ(Post(port(), "/v1/chat/completions", wrong_type).status, 400);
  EXPECT_TRUE(WaitForIdleEngine(port()));
}

}  // namespace
}  // namespace lockstep::server::testing
