// `lockstep chat` end to end, through the real binary with piped input, on a random-weight model with the
// built-in byte-level vocabulary and the default ChatML template: every turn's reply is exactly what
// `generate` writes for the whole conversation rendered by hand (greedy), so the second turn really sees the
// first turn and its reply; the prefix cache changes nothing; /reset starts over; a conversation longer than
// the context drops its oldest turns; a message that cannot fit is refused without ending the chat (the exit
// code is then 1).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

class ChatCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("lockstep-chat"));
    model_ = new std::string(*dir_ + "/tiny.gguf");
    ASSERT_EQ(RunCommand(LockstepBinary() + " make-model --shape tiny --type q8_0 --seed 3 -o " + *model_ +
                         " >/dev/null 2>&1"),
              0);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete model_;
  }

  static std::string Write(const std::string& name, const std::string& text) {
    const std::string path = *dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // `lockstep chat` with `input` on stdin; stdout in *out, stderr in *err.
  static int Chat(const std::string& input, const std::string& flags, std::string* out, std::string* err) {
    const std::string in_path = Write("input.txt", input);
    const std::string err_path = *dir_ + "/stderr.txt";
    const int rc = RunCommand(
        LockstepBinary() + " chat -m " + *model_ + " -t 1 " + flags + " < " + in_path + " 2>" + err_path,
        out);
    std::ifstream in(err_path, std::ios::binary);
    err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return rc;
  }

  // `lockstep generate` on exactly `prompt`, as chat would stop: at the ChatML end-of-turn text.
  static std::string Generate(const std::string& prompt, int n) {
    std::string out;
    EXPECT_EQ(RunCommand(LockstepBinary() + " generate -m " + *model_ + " -t 1 -n " + std::to_string(n) +
                             " --stop '<|im_end|>' -f " + Write("prompt.txt", prompt) + " 2>/dev/null",
                         &out),
              0);
    return out;
  }

  static std::string User(const std::string& text) { return "<|im_start|>user\n" + text + "<|im_end|>\n"; }
  static std::string Assistant(const std::string& reply) {
    return "<|im_start|>assistant\n" + reply + "<|im_end|>\n";
  }
  static constexpr const char* kGenerationPrompt = "<|im_start|>assistant\n";

  static std::string* dir_;
  static std::string* model_;
};
std::string* ChatCliTest::dir_ = nullptr;
std::string* ChatCliTest::model_ = nullptr;

TEST_F(ChatCliTest, EachReplyContinuesTheWholeConversation) {
  // generate prints the reply and a newline, as chat does after each reply.
  const std::string first = Generate(User("Hello") + kGenerationPrompt, 12);
  ASSERT_GE(first.size(), 1u);
  const std::string first_reply = first.substr(0, first.size() - 1);
  const std::string second =
      Generate(User("Hello") + Assistant(first_reply) + User("How are you?") + kGenerationPrompt, 12);

  std::string out, err;
  ASSERT_EQ(Chat("Hello\nHow are you?\n", "-n 12", &out, &err), 0) << err;
  EXPECT_EQ(out, first + second);
  EXPECT_NE(err.find("2 turns"), std::string::npos) << err;

  // The same without the prefix cache, and with the second message split over two lines by a '\'.
  std::string uncached, err2;
  ASSERT_EQ(Chat("Hello\nHow are\\\n you?\n", "-n 12 --no-prefix-cache", &uncached, &err2), 0) << err2;
  const std::string second_split =
      Generate(User("Hello") + Assistant(first_reply) + User("How are\n you?") + kGenerationPrompt, 12);
  EXPECT_EQ(uncached, first + second_split);
}

TEST_F(ChatCliTest, SystemMessageAndResetStartOver) {
  const std::string system = "<|im_start|>system\nBe brief.<|im_end|>\n";
  const std::string first = Generate(system + User("Hi") + kGenerationPrompt, 8);
  std::string out, err;
  ASSERT_EQ(Chat("Hi\n/reset\n\nHi\n/exit\nnever read\n", "-n 8 --system 'Be brief.'", &out, &err), 0) << err;
  EXPECT_EQ(out, first + first);  // after /reset the same message gets the same (greedy) reply
  EXPECT_NE(err.find("2 turns"), std::string::npos) << err;
}

// `--system ""` sends an empty system message (a template that writes a default system message when there is
// none writes nothing then); it was taken as no --system at all.
TEST_F(ChatCliTest, AnEmptySystemMessageIsSent) {
  const std::string empty_system = "<|im_start|>system\n<|im_end|>\n";
  const std::string expected = Generate(empty_system + User("Hi") + kGenerationPrompt, 8);
  std::string out, err;
  ASSERT_EQ(Chat("Hi\n", "-n 8 --system ''", &out, &err), 0) << err;
  EXPECT_EQ(out, expected);
  std::string without, err2;
  ASSERT_EQ(Chat("Hi\n", "-n 8", &without, &err2), 0) << err2;
  EXPECT_EQ(without, Generate(User("Hi") + kGenerationPrompt, 8));
}

TEST_F(ChatCliTest, OldTurnsAreDroppedWhenTheConversationOutgrowsTheContext) {
  // The tiny model's byte-level vocabulary: about a token per byte, and ChatML's markers spelled out (~50
  // tokens a turn). A 160-token context keeps 144 for the prompt when -n is 16: the second message's
  // prompt (~155 tokens with the first turn) no longer fits with the first turn in it.
  std::string out, err;
  ASSERT_EQ(Chat("first message, a long one\nsecond message, also long\nthird\n",
                 "-n 16 -c 160 --verbose-prompt", &out, &err),
            0)
      << err;
  EXPECT_NE(err.find("outgrew the context; dropped its"), std::string::npos) << err;
  // The last prompt no longer holds the first message, and still holds the last.
  const size_t last_prompt = err.rfind("lockstep: prompt (");
  ASSERT_NE(last_prompt, std::string::npos) << err;
  EXPECT_EQ(err.find("first message", last_prompt), std::string::npos) << err;
  EXPECT_NE(err.find("third", last_prompt), std::string::npos) << err;
  EXPECT_NE(err.find("3 turns"), std::string::npos) << err;
}

TEST_F(ChatCliTest, AMessageTooLongForTheContextIsRefusedAndTheChatGoesOnButFails) {
  const std::string first = Generate(User("Hi") + kGenerationPrompt, 8);
  std::string out, err;
  // The failed turn makes the exit code 1 once the chat ends.
  ASSERT_EQ(Chat(std::string(200, 'x') + "\nHi\n", "-n 8 -c 96", &out, &err), 1) << err;
  EXPECT_NE(err.find("input line 1: "), std::string::npos) << err;
  EXPECT_NE(err.find("more than the 88"), std::string::npos) << err;
  EXPECT_NE(err.find("1 turn failed"), std::string::npos) << err;
  EXPECT_EQ(out, first);
}

TEST_F(ChatCliTest, BadInputFailsWithAMessage) {
  std::string out, err;
  EXPECT_EQ(Chat("Hi\n", "-n 0", &out, &err), 1);
  EXPECT_NE(err.find("-n must be"), std::string::npos) << err;
  EXPECT_EQ(Chat("Hi\n", "--chat-template no-such-template", &out, &err), 1);
  EXPECT_NE(err.find("no-such-template"), std::string::npos) << err;
}

}  // namespace
}  // namespace lockstep::testing
