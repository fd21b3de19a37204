// Flag values the CLI changed, cut or checked too late without a word, run through the real binary:
// regression tests for the CLI audit. A refused value exits 1 with a message naming the flag and the value.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_fixture.h"

namespace lockstep::testing {
namespace {

class FlagValuesTest : public CliTest {
 protected:
  // Runs ARGS: exit code 1 and `message` on stderr.
  static void ExpectRefused(const std::string& args, const std::string& message) {
    std::string out, err;
    EXPECT_EQ(Lockstep(args, &out, &err), 1) << args << "\n" << err;
    EXPECT_NE(err.find(message), std::string::npos) << args << "\n" << err;
  }
};

// ask --dry-run printed each question with %s, so a NUL byte (valid UTF-8, sent whole as \u0000) cut it
// short.
TEST_F(FlagValuesTest, AskDryRunShowsAQuestionPastANulByte) {
  const std::string questions = Write("nul_questions.txt", std::string("q1\0hidden\nq2\n", 13));
  std::string out, err;
  EXPECT_EQ(Lockstep("ask --dry-run --file " + questions, &out, &err), 0) << err;
  EXPECT_NE(out.find("1. q1\\0hidden\n2. q2\n"), std::string::npos) << out;
  EXPECT_EQ(Lockstep("ask --dry-run --json --file " + questions, &out, &err), 0) << err;
  EXPECT_NE(out.find("\"q1\\u0000hidden\""), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::testing
