// Runs tests/web/browser_test.mjs: the dashboard and playground in headless Debian Chromium through
// playwright-core (installed by `npm ci` in tests/web; scripts/test.sh does it). Skipped with a message where
// Chromium or the package is absent — but never under CI (CI=true), where scripts/install_deps.sh installs
// Chromium and its absence is a failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "e2e_util.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

TEST(BrowserTest, DashboardAndPlaygroundInHeadlessChromium) {
  const std::string dir = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/web";
  const bool have_chromium = access(kChromium, X_OK) == 0;
  const bool have_package = access((dir + "/node_modules/playwright-core/package.json").c_str(), R_OK) == 0;
  if (!have_chromium || !have_package) {
    const std::string missing = !have_chromium ? std::string(kChromium) + " (Debian package chromium)"
                                               : "playwright-core (run `npm ci` in tests/web)";
    if (UnderCi()) FAIL() << "CI must run the browser test, but " << missing << " is missing";
    GTEST_SKIP() << "browser test skipped: " << missing << " is not installed";
  }
  std::string output;
  const std::string command = "cd " + dir + " && node browser_test.mjs --binary " +
                              ::lockstep::testing::LockstepBinary() + " --model " + SlowModel() +
                              " --chromium " + kChromium + " 2>&1";
  const int rc = ::lockstep::testing::RunCommand(command, &output);
  std::printf("%s", output.c_str());
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find(" passed, 0 failed"), std::string::npos) << output;
}

}  // namespace
}  // namespace lockstep::server::testing
