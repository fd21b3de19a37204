// Conversation: the rendered prompt holds every turn in order, the oldest whole turns go first when the
// budget is exceeded (the system message stays), a message that cannot fit leaves the conversation as it
// was, and Clear() keeps only the system message. The encoder here is one id per byte, so budgets are bytes.
#include "chat/conversation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::chat {
namespace {

Result<std::vector<int32_t>> BytesAsIds(const std::string& text) {
  return std::vector<int32_t>(text.begin(), text.end());
}

std::string User(const std::string& text) { return "<|im_start|>user\n" + text + "<|im_end|>\n"; }
std::string Assistant(const std::string& text) { return "<|im_start|>assistant\n" + text + "<|im_end|>\n"; }
constexpr const char* kGenerationPrompt = "<|im_start|>assistant\n";

TEST(ConversationTest, EveryTurnIsRenderedInOrder) {
  const ChatTemplate chatml = ChatTemplate::Create("", "", "");
  Conversation conversation("Be brief.");
  auto first = conversation.Ask("Hi", chatml, BytesAsIds, 1000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->text, "<|im_start|>system\nBe brief.<|im_end|>\n" + User("Hi") + kGenerationPrompt);
  EXPECT_EQ(first->ids.size(), first->text.size());
  EXPECT_EQ(first->dropped_turns, 0);
  conversation.AddReply("Hello!");
  auto second = conversation.Ask("Bye", chatml, BytesAsIds, 1000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->text, "<|im_start|>system\nBe brief.<|im_end|>\n" + User("Hi") + Assistant("Hello!") +
                              User("Bye") + kGenerationPrompt);
  EXPECT_EQ(conversation.turns(), 2);
}

TEST(ConversationTest, OldestTurnsGoFirstAndTheSystemMessageStays) {
  const ChatTemplate chatml = ChatTemplate::Create("", "", "");
  const std::string system = "<|im_start|>system\nS<|im_end|>\n";
  Conversation conversation("S");
  for (const char* message : {"one", "two"}) {
    ASSERT_TRUE(conversation.Ask(message, chatml, BytesAsIds, 1000).ok());
    conversation.AddReply(std::string("re ") + message);
  }
  // Room for the system message, one old turn and the new message, not two old turns.
  const std::string keeps_two =
      system + User("two") + Assistant("re two") + User("three") + kGenerationPrompt;
  auto prompt = conversation.Ask("three", chatml, BytesAsIds, static_cast<int64_t>(keeps_two.size()));
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(prompt->text, keeps_two);
  EXPECT_EQ(prompt->dropped_turns, 1);
  EXPECT_EQ(conversation.turns(), 2);  // "one" is gone for good
  conversation.AddReply("re three");

  // Too long even alone: an error naming the sizes, and the conversation is unchanged.
  auto refused = conversation.Ask(std::string(500, 'x'), chatml, BytesAsIds, 100);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(refused.status().message().find("more than the 100"), std::string::npos);
  EXPECT_EQ(conversation.turns(), 2);

  conversation.Clear();
  EXPECT_EQ(conversation.turns(), 0);
  auto fresh = conversation.Ask("again", chatml, BytesAsIds, 1000);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->text, system + User("again") + kGenerationPrompt);
}

TEST(ConversationTest, TemplateErrorsPassThrough) {
  const ChatTemplate strict = ChatTemplate::Create("{{ raise_exception('roles must alternate') }}", "", "");
  Conversation conversation;
  auto prompt = conversation.Ask("Hi", strict, BytesAsIds, 1000);
  ASSERT_FALSE(prompt.ok());
  EXPECT_NE(prompt.status().message().find("roles must alternate"), std::string::npos);
  EXPECT_EQ(conversation.turns(), 0);
}

TEST(ConversationTest, EndOfTurnTextPerFamily) {
  EXPECT_EQ(EndOfTurnText("chatml"), "<|im_end|>");
  EXPECT_EQ(EndOfTurnText("default"), "<|im_end|>");
  EXPECT_EQ(EndOfTurnText("llama3"), "<|eot_id|>");
  EXPECT_EQ(EndOfTurnText("gemma"), "<end_of_turn>");
  EXPECT_EQ(EndOfTurnText("phi3"), "<|end|>");
  EXPECT_EQ(EndOfTurnText("custom"), "");
}

}  // namespace
}  // namespace lockstep::chat
