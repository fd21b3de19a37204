// `generate --prompt-cache FILE` (llama-cli's flag; kv/saved_prefix.h): the first run writes the cached KV of
// its prompt and reply, the next one with a prompt starting the same way restores it, computes only the
// rest and prints exactly what it prints without the file; files of another model or damaged are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_fixture.h"

namespace lockstep::testing {
namespace {

class PromptCacheCliTest : public CliTest {};

std::string Generate(const std::string& model, const std::string& prompt, const std::string& extra) {
  return "generate -m " + model + " -p '" + prompt + "' -n 8 --temp 0 -t 1 --ids " + extra;
}

TEST_F(PromptCacheCliTest, TheSecondRunRestoresTheFirstsKvAndPrintsTheSame) {
  const std::string cache = *dir_ + "/prompt.cache";
  // 120 tokens; with 8 sampled, the KV of 127 is computed: 7 full blocks of 16.
  const std::string document(120, 'a');
  std::string plain, first, second, err;
  ASSERT_EQ(Lockstep(Generate(*model_, document + " and b", ""), &plain, &err), 0) << err;
  ASSERT_EQ(Lockstep(Generate(*model_, document, "--prompt-cache " + cache), &first, &err), 0) << err;
  EXPECT_EQ(err.find("restored"), std::string::npos) << err;  // no file yet
  EXPECT_NE(err.find("prompt cache: 112 tokens saved to " + cache), std::string::npos) << err;
  ASSERT_TRUE(std::filesystem::exists(cache));
  ASSERT_EQ(Lockstep(Generate(*model_, document + " and b", "--prompt-cache " + cache), &second, &err), 0)
      << err;
  EXPECT_NE(err.find("prompt cache: 112 tokens restored from " + cache), std::string::npos) << err;
  EXPECT_EQ(second, plain);
}

TEST_F(PromptCacheCliTest, RefusesAnotherModelsFileAndADamagedOne) {
  const std::string cache = *dir_ + "/other.cache";
  const std::string other = *dir_ + "/other.gguf";
  std::string out, err;
  ASSERT_EQ(Lockstep("make-model --shape tiny --type q8_0 --seed 4 -o " + other, &out, &err), 0) << err;
  ASSERT_EQ(Lockstep(Generate(other, std::string(40, 'a'), "--prompt-cache " + cache), &out, &err), 0) << err;
  EXPECT_NE(Lockstep(Generate(*model_, std::string(40, 'a'), "--prompt-cache " + cache), &out, &err), 0);
  EXPECT_NE(err.find("--prompt-cache: '" + cache + "' was written for another model file"), std::string::npos)
      << err;
  const std::string damaged = Write("damaged.cache", "LSKVSAVE but nothing else");
  EXPECT_NE(Lockstep(Generate(*model_, "hi", "--prompt-cache " + damaged), &out, &err), 0);
  EXPECT_NE(err.find("is not a lockstep saved prefix"), std::string::npos) << err;
  EXPECT_NE(Lockstep(Generate(*model_, "hi", "--prompt-cache " + *dir_), &out, &err), 0);
  EXPECT_NE(err.find("--prompt-cache: '" + *dir_ + "' is a directory"), std::string::npos) << err;
}

}  // namespace
}  // namespace lockstep::testing
