// Test helpers: where the shared test data and the built binary are, and scratch directories.
// The test data lives in ../shared/testdata beside the source tree (override with LOCKSTEP_TESTDATA); tests
// that need it call LOCKSTEP_REQUIRE_TESTDATA() and are skipped with a clear message where it is absent.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace lockstep::testing {

// Absolute path of the shared test data folder ("" if absent).
std::string TestDataDir();
// TestDataDir() + "/" + relative.
std::string TestDataPath(const std::string& relative);
// The `lockstep` binary built alongside the tests, or $LOCKSTEP_BINARY (scripts/check_sanitizers.sh tsan).
std::string LockstepBinary();
// A fresh, empty directory under the system temp folder ($TMPDIR), unique to this test process. All of them
// lie under <temp>/lockstep-tests-<pid>, which is removed when the process exits (kept if LOCKSTEP_KEEP_TEMP
// is set).
std::string MakeTempDir(const std::string& prefix = "lockstep-test");
// Runs a shell command; returns its exit status, and its stdout in *out when given.
int RunCommand(const std::string& command, std::string* out = nullptr);

}  // namespace lockstep::testing

#define LOCKSTEP_REQUIRE_TESTDATA()                                                 \
  do {                                                                              \
    if (::lockstep::testing::TestDataDir().empty())                                 \
      GTEST_SKIP() << "shared test data not found (set LOCKSTEP_TESTDATA or place " \
                      "../shared/testdata beside the source tree)";                 \
  } while (0)
