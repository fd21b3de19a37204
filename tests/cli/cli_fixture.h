// The CLI tests' fixture: the real `lockstep` binary run through the shell, in a scratch directory holding a
// random-weight tiny model (make-model --shape tiny --type q8_0 --seed 3; byte-level vocabulary, 256-token
// context), made once per test suite.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "testing/testdata.h"

namespace lockstep::testing {

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("lockstep-cli"));
    model_ = new std::string(*dir_ + "/tiny.gguf");
    std::string out, err;
    ASSERT_EQ(Lockstep("make-model --shape tiny --type q8_0 --seed 3 -o " + *model_, &out, &err), 0) << err;
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
    model_ = dir_ = nullptr;
  }

  // Writes `bytes` to a file of the scratch directory; returns its path.
  static std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = *dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // `lockstep ARGS` (a shell command line); stdout in *out, stderr in *err; the exit code.
  static int Lockstep(const std::string& args, std::string* out, std::string* err) {
    const std::string err_path = *dir_ + "/stderr.txt";
    const int rc = RunCommand(LockstepBinary() + " " + args + " 2>" + err_path, out);
    std::ifstream in(err_path, std::ios::binary);
    err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return rc;
  }

  static inline std::string* dir_ = nullptr;    // the scratch directory
  static inline std::string* model_ = nullptr;  // the tiny model in it
};

}  // namespace lockstep::testing
