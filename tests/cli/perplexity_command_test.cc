// `lockstep perplexity` through the real binary: llama-perplexity's output lines, the JSON figures, and bad
// input named with exit code 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

int RunLockstep(const std::string& dir, const std::string& args, std::string* out, std::string* err) {
  const std::string err_path = dir + "/stderr.txt";
  const int rc = RunCommand(LockstepBinary() + " " + args + " 2>" + err_path, out);
  std::ifstream in(err_path, std::ios::binary);
  err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return rc;
}

TEST(PerplexityCommandTest, PrintsRunningAndFinalEstimatesAndWritesJson) {
  const std::string dir = MakeTempDir("lockstep-perplexity");
  const std::string model = dir + "/tiny.gguf";
  std::string out, err;
  ASSERT_EQ(RunLockstep(dir, "make-model --shape tiny --type q8_0 --seed 3 -o " + model, &out, &err), 0)
      << err;
  std::string text;
  for (int i = 0; i < 60; ++i)
    text += "The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ". ";
  const std::string file = dir + "/text.txt";
  std::ofstream(file) << text;
  const std::string json = dir + "/ppl.json";
  ASSERT_EQ(
      RunLockstep(dir, "perplexity -m " + model + " -f " + file + " -c 64 --chunks 3 -t 1 --json " + json,
                  &out, &err),
      0)
      << err;
  EXPECT_EQ(out.rfind("[1]", 0), 0u) << out;
  EXPECT_NE(out.find(",[3]"), std::string::npos) << out;
  EXPECT_EQ(out.find("[4]"), std::string::npos) << out;
  EXPECT_NE(out.find("Final estimate: PPL over 3 chunks for n_ctx=64 = "), std::string::npos) << out;
  std::ifstream in(json);
  const nlohmann::json figures = nlohmann::json::parse(in);
  EXPECT_EQ(figures["chunks"], 3);
  EXPECT_EQ(figures["n_ctx"], 64);
  EXPECT_EQ(figures["tokens_scored"], 3 * 31);
  EXPECT_GT(figures["ppl"].get<double>(), 1.0);
  EXPECT_EQ(figures["running"].size(), 3u);
  EXPECT_EQ(figures["running"].back(), figures["ppl"]);

  // Too short a text, a directory, a missing file: exit 1, named.
  std::ofstream(dir + "/short.txt") << "a few words";
  EXPECT_EQ(RunLockstep(dir, "perplexity -m " + model + " -f " + dir + "/short.txt -c 64", &out, &err), 1);
  EXPECT_NE(err.find("fewer than one chunk of 64"), std::string::npos) << err;
  EXPECT_NE(err.find(dir + "/short.txt"), std::string::npos) << err;
  std::filesystem::create_directory(dir + "/adir");
  EXPECT_EQ(RunLockstep(dir, "perplexity -m " + model + " -f " + dir + "/adir", &out, &err), 1);
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  EXPECT_EQ(RunLockstep(dir, "perplexity -m " + model + " -f " + file + " -c 2", &out, &err), 1);
}

}  // namespace
}  // namespace lockstep::testing
