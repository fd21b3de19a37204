// Runs tests/deploy/kubernetes/check_manifests.mjs: deploy/kubernetes/*.yaml against the Kubernetes and KEDA
// schemas of the pinned npm packages (installed by `npm ci` there; scripts/test.sh does it), the probes,
// ports, preStop and scaling metric against each other, and a live `lockstep serve` with the Deployment's own
// arguments. Skipped with a message where Node.js or the packages are missing, except in CI, where that
// fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "deploy_util.h"
#include "testing/testdata.h"

namespace lockstep::deploy::testing {
namespace {

TEST(KubernetesManifestsTest, ValidateAgainstTheSchemasAndTheRealServer) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/deploy/kubernetes";
  std::string missing;
  if (::lockstep::testing::RunCommand("node --version > /dev/null 2>&1") != 0) {
    missing = "node is not installed";
  } else if (!std::filesystem::exists(dir + "/node_modules/kubernetes-models") ||
             !std::filesystem::exists(dir + "/node_modules/@kubernetes-models/keda")) {
    missing = "the schema packages are not installed (run `npm ci` in tests/deploy/kubernetes)";
  }
  if (!missing.empty()) {
    if (std::getenv("CI") != nullptr) FAIL() << missing << ", but CI must run this check";
    GTEST_SKIP() << missing;
  }
  std::string out;
  const int rc = ::lockstep::testing::RunCommand("cd " + dir + " && node check_manifests.mjs --binary " +
                                                     ::lockstep::testing::LockstepBinary() + " --model " +
                                                     StoriesModel() + " 2>&1",
                                                 &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("live: exits 0 after the drain"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::deploy::testing
