// `lockstep perplexity` through the real binary: llama-perplexity's output lines, the JSON figures, and bad
// input named with exit code 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_fixture.h"

namespace lockstep::testing {
namespace {

class PerplexityCommandTest : public CliTest {};

TEST_F(PerplexityCommandTest, PrintsRunningAndFinalEstimatesAndWritesJson) {
  std::string text;
  for (int i = 0; i < 60; ++i) {
    text += "The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ". ";
  }
  const std::string file = Write("text.txt", text);
  const std::string json = *dir_ + "/ppl.json";
  std::string out, err;
  ASSERT_EQ(Lockstep("perplexity -m " + *model_ + " -f " + file + " -c 64 --chunks 3 -t 1 --json " + json,
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
}

TEST_F(PerplexityCommandTest, BadInputExitsOneNamingIt) {
  std::string out, err;
  // Too short a text, a directory, a bad -c: exit 1, named.
  const std::string short_text = Write("short.txt", "a few words");
  EXPECT_EQ(Lockstep("perplexity -m " + *model_ + " -f " + short_text + " -c 64", &out, &err), 1);
  EXPECT_NE(err.find("fewer than one chunk of 64"), std::string::npos) << err;
  EXPECT_NE(err.find(short_text), std::string::npos) << err;
  std::filesystem::create_directory(*dir_ + "/adir");
  EXPECT_EQ(Lockstep("perplexity -m " + *model_ + " -f " + *dir_ + "/adir", &out, &err), 1);
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  EXPECT_EQ(Lockstep("perplexity -m " + *model_ + " -f " + short_text + " -c 2", &out, &err), 1);
  // A --json that cannot be written is refused before the scoring (the short text is never read).
  EXPECT_EQ(Lockstep("perplexity -m " + *model_ + " -f " + short_text + " --json " + *dir_ + "/no/ppl.json",
                     &out, &err),
            1);
  EXPECT_NE(err.find("--json: cannot write"), std::string::npos) << err;
  EXPECT_EQ(err.find("fewer than one chunk"), std::string::npos) << err;
}

}  // namespace
}  // namespace lockstep::testing
