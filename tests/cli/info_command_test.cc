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

// The KV bytes per token are the paged cache's: deepseek2's latent (27 layers x (80 + 64) f16 values), no
// K/V for qwen35's recurrent layers, whose per-sequence state is its own line.
TEST_F(InfoCommandTest, KvBytesPerTokenAreTheCachesOwn) {
  std::string out, err;
  const std::string deepseek = *dir_ + "/deepseek2.gguf";
  ASSERT_EQ(Lockstep("make-model --shape tiny-deepseek2 -o " + deepseek, &out, &err), 0) << err;
  ASSERT_EQ(Lockstep("info -m " + deepseek, &out, &err), 0) << err;
  EXPECT_NE(out.find("kv per token:     7776 bytes (f16)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("recurrent state:"), std::string::npos) << out;
  const std::string qwen35 = *dir_ + "/qwen35.gguf";
  ASSERT_EQ(Lockstep("make-model --shape tiny-qwen35 -o " + qwen35, &out, &err), 0) << err;
  ASSERT_EQ(Lockstep("info -m " + qwen35, &out, &err), 0) << err;
  EXPECT_NE(out.find("recurrent state:  "), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::testing
