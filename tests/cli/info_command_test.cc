// `lockstep info`: what it says about a file's architecture.
#include <gtest/gtest.h>

#include "cli/cli_fixture.h"

namespace lockstep::testing {
namespace {

class InfoCommandTest : public CliTest {};

TEST_F(InfoCommandTest, NamesTheFilesArchitectureAndTheLayersThatRunIt) {
  std::string out, err;
  ASSERT_EQ(Lockstep("info -m " + *model_, &out, &err), 0) << err;
  EXPECT_NE(out.find("architecture:     llama  name: "), std::string::npos) << out;
  // A vision-language file's text: its own name, and whose layers run it.
  const std::string vl = *dir_ + "/qwen3vl.gguf";
  ASSERT_EQ(Lockstep("make-model --shape tiny-qwen3vl -o " + vl, &out, &err), 0) << err;
  ASSERT_EQ(Lockstep("info -m " + vl, &out, &err), 0) << err;
  EXPECT_NE(out.find("architecture:     qwen3vl (text only, qwen3's layers)"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::testing
