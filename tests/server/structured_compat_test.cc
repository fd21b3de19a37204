// Runs tests/server/compat/structured_test.mjs — the official OpenAI Node library against a real
// `lockstep serve` with a random-weight model (tiny-256 shape, llama-spm vocabulary, temperature 1): JSON
// schema outputs and required tool calls must parse and validate 100 times out of 100, streamed and not.
// Skipped with a message when Node.js or the pinned packages (`npm ci` in tests/server/compat) are absent.
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

TEST(ServerStructuredCompatTest, OpenAiClientGetsValidJsonAndToolCalls100Of100) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/server/compat";
  if (::lockstep::testing::RunCommand("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node is not installed";
  }
  if (!std::filesystem::exists(dir + "/node_modules/openai")) {
    GTEST_SKIP() << "client packages not installed (run `npm ci` in tests/server/compat)";
  }
  const std::string model = ::lockstep::testing::MakeTempDir("lockstep-structured") + "/tiny-256-spm.gguf";
  const std::string make = ::lockstep::testing::LockstepBinary() +
                           " make-model --shape tiny-256 --vocab-from " +
                           ::lockstep::testing::TestDataPath("vocab/ggml-vocab-llama-spm.gguf") + " -o " +
                           model + " > /dev/null 2>&1";
  ASSERT_EQ(::lockstep::testing::RunCommand(make), 0) << make;
  std::string out;
  const int rc = ::lockstep::testing::RunCommand("cd " + dir + " && node structured_test.mjs --binary " +
                                                     ::lockstep::testing::LockstepBinary() + " --model " +
                                                     model + " 2>&1",
                                                 &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("json_schema: 100/100 parsed and validated"), std::string::npos) << out;
  EXPECT_NE(out.find("tool_choice required: 100/100 calls parsed and validated"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::server::testing
