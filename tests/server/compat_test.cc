// Runs tests/server/compat/compat_test.mjs — the official OpenAI Node library and @huggingface/inference
// against a real `lockstep serve` — when Node.js and the pinned packages are installed (`npm ci` in
// tests/server/compat); skipped with a message otherwise. The script needs no network: everything talks to
// the local server.
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e_util.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

TEST(ServerCompatTest, OfficialOpenAiAndHuggingFaceClientsAcceptTheResponses) {
  const std::string dir = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/server/compat";
  if (::lockstep::testing::RunCommand("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node is not installed";
  }
  if (!std::filesystem::exists(dir + "/node_modules/openai") ||
      !std::filesystem::exists(dir + "/node_modules/@huggingface/inference")) {
    GTEST_SKIP() << "client packages not installed (run `npm ci` in tests/server/compat)";
  }
  std::string out;
  const int rc = ::lockstep::testing::RunCommand("cd " + dir + " && node compat_test.mjs --binary " +
                                                     ::lockstep::testing::LockstepBinary() + " --model " +
                                                     TinyModel() + " 2>&1",
                                                 &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::server::testing
