// End-to-end: the `lockstep` binary's make-model, info and generate subcommands.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/test_models.h"
#include "testing/levels.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

int RunLockstep(const std::string& args, std::string* out = nullptr) {
  return RunCommand(LockstepBinary() + " " + args + " 2>/dev/null", out);
}

std::string TinyModel() {
  static const std::string path = [] {
    const std::string p = ScratchDir("cli") + "/tiny.gguf";
    EXPECT_EQ(RunLockstep("make-model --shape tiny --type q8_0 --seed 3 -o " + p), 0);
    return p;
  }();
  return path;
}

TEST(GenerateCli, PromptIdsGreedyMatchesStoriesGolden) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::ifstream in(TestDataPath("models/stories260K.golden.json"));
  const nlohmann::json golden = nlohmann::json::parse(in)["cases"][0];
  std::string out;
  ASSERT_EQ(RunLockstep("generate -m " + TestDataPath("models/stories260K.gguf") +
                            " --prompt-ids 1 -n 40 --temp 0 --ids --kv-f32 -t 2 --ignore-eos",
                        &out),
            0);
  std::istringstream ids(out);
  std::vector<int32_t> got;
  for (int32_t v; ids >> v;) got.push_back(v);
  const std::vector<int32_t> expected = golden["greedy"].get<std::vector<int32_t>>();
  ASSERT_EQ(got.size(), 40u) << out;
  EXPECT_EQ(got, std::vector<int32_t>(expected.begin(), expected.begin() + 40));
}

TEST(GenerateCli, TimingsJsonHasTheFourFields) {
  const std::string json_path = ScratchDir("cli") + "/t.json";
  ASSERT_EQ(RunLockstep("generate -m " + TinyModel() +
                        " --prompt-ids \"1 2 3\" -n 5 --ids --ignore-eos --seed 1 -t 1 "
                        "--timings-json " +
                        json_path),
            0);
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["prompt_tokens"], 3);
  EXPECT_EQ(j["generated_tokens"], 5);
  EXPECT_TRUE(j["prompt_ms"].is_number());
  EXPECT_TRUE(j["generation_ms"].is_number());
}

TEST(GenerateCli, SameSeedSameTextAndStopStringsCutTheOutput) {
  const std::string base =
      "generate -m " + TinyModel() + " -p \"the cat\" -n 40 --ignore-eos -t 1 --temp 1 --seed 11";
  std::string a, b;
  ASSERT_EQ(RunLockstep(base, &a), 0);
  ASSERT_EQ(RunLockstep(base, &b), 0);
  EXPECT_EQ(a, b);
  ASSERT_GT(a.size(), 12u);
  // A stop string from the middle of the output: the output ends right before its first occurrence.
  const std::string stop = a.substr(6, 3);
  if (stop.find('"') != std::string::npos || stop.find('\\') != std::string::npos ||
      stop.find('\n') != std::string::npos || stop.find('$') != std::string::npos ||
      stop.find('`') != std::string::npos) {
    GTEST_SKIP() << "awkward characters for the shell";
  }
  std::string c;
  ASSERT_EQ(RunLockstep(base + " --stop \"" + stop + "\"", &c), 0);
  EXPECT_EQ(c, a.substr(0, a.find(stop)) + "\n");
}

// make-lora, then generate with --lora / --lora-scaled: adapters keep their command-line order across the two
// flags, scale 0 is the base model, and a bad adapter is refused naming the file.
TEST(GenerateCli, LoraFlags) {
  const std::string dir = ScratchDir("cli-lora");
  const std::string a = dir + "/a.gguf", b = dir + "/b.gguf";
  ASSERT_EQ(RunLockstep("make-lora -m " + TinyModel() + " --rank 4 --alpha 8 -o " + a), 0);
  ASSERT_EQ(RunLockstep("make-lora -m " + TinyModel() +
                        " --rank 2 --type bf16 --targets attn_q,ffn_down,output "
                        "--seed 5 -o " +
                        b),
            0);
  auto ids = [&](const std::string& flags) {
    std::string out;
    EXPECT_EQ(RunLockstep("generate -m " + TinyModel() +
                              " --prompt-ids \"1 2 3 4\" -n 16 --temp 0 --ids "
                              "--ignore-eos -t 1 " +
                              flags,
                          &out),
              0)
        << flags;
    return out;
  };
  const std::string base = ids("");
  EXPECT_EQ(ids("--lora-scaled " + a + " 0"), base);
  const std::string with_a = ids("--lora " + a);
  const std::string with_b = ids("--lora " + b);
  EXPECT_NE(with_a, base);
  EXPECT_NE(with_b, base);
  EXPECT_NE(with_a, with_b);
  EXPECT_EQ(ids("--lora " + a + " --lora-scaled " + b + " 0"), with_a);
  EXPECT_EQ(ids("--lora-scaled " + b + " 0 --lora " + a), with_a);
  EXPECT_EQ(ids("--lora-scaled " + a + " 0 --lora " + b), with_b);
  EXPECT_NE(ids("--lora-scaled " + a + " 0.5"), with_a);
  // Errors: an adapter that is a model, a bad scale, make-lora's bad type and target.
  std::string out;
  const std::string err_path = dir + "/err.txt";
  EXPECT_EQ(RunCommand(LockstepBinary() + " generate -m " + TinyModel() + " -p hi --lora " + TinyModel() +
                           " 2>" + err_path,
                       &out),
            1);
  std::ifstream err(err_path);
  const std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(message.find("LoRA adapter " + TinyModel() + ": has no general.type"), std::string::npos)
      << message;
  EXPECT_NE(RunLockstep("generate -m " + TinyModel() + " -p hi --lora-scaled " + a + " much"), 0);
  EXPECT_NE(RunLockstep("make-lora -m " + TinyModel() + " --type q8_0 -o " + dir + "/c.gguf"), 0);
  EXPECT_NE(RunLockstep("make-lora -m " + TinyModel() + " --targets attn_qkv -o " + dir + "/c.gguf"), 0);
}

TEST(InfoCli, ShowsArchitectureAndTypes) {
  std::string out;
  ASSERT_EQ(RunLockstep("info -m " + TinyModel(), &out), 0);
  EXPECT_NE(out.find("architecture:     llama"), std::string::npos) << out;
  EXPECT_NE(out.find("q8_0"), std::string::npos) << out;
  EXPECT_NE(out.find("gpt2"), std::string::npos) << out;
}

TEST(MakeModelCli, KQuantMixesWriteAndGenerate) {
  for (const auto& [mix, tensors] :
       {std::pair{"q4_k_m", "q4_K: 13, f32: 5, q6_K: 3"}, std::pair{"q5_k_m", "q5_K: 13, f32: 5, q6_K: 3"}}) {
    const std::string path = ScratchDir("cli") + "/" + mix + ".gguf";
    std::string out;
    ASSERT_EQ(
        RunCommand(LockstepBinary() + " make-model --shape tiny-256 --type " + mix + " -o " + path + " 2>&1",
                   &out),
        0);
    EXPECT_NE(out.find(tensors), std::string::npos) << out;
    EXPECT_EQ(RunLockstep("generate -m " + path + " --prompt-ids \"1 2 3\" -n 4 --ids --ignore-eos -t 2"), 0);
  }
}

TEST(Cli, BadInputExitsWithOne) {
  const std::string dir = ScratchDir("cli");
  { std::ofstream(dir + "/junk.gguf") << "not a gguf file at all"; }
  EXPECT_EQ(RunLockstep("info -m " + dir + "/junk.gguf"), 1);
  EXPECT_EQ(RunLockstep("generate -m " + dir + "/missing.gguf --prompt-ids 1"), 1);
  EXPECT_EQ(RunLockstep("generate -m " + TinyModel() + " --prompt-ids \"1 x 3\""), 1);
  EXPECT_EQ(RunLockstep("generate -m " + TinyModel() + " --prompt-ids \"1 999999\""), 1);
  EXPECT_EQ(RunLockstep("generate -m " + TinyModel() + " --prompt-ids 1 --top-p 0"), 1);
  EXPECT_EQ(RunLockstep("make-model --shape nope -o " + dir + "/x.gguf"), 1);
  EXPECT_EQ(RunLockstep("make-model --shape tiny --type q4_1 -o " + dir + "/x.gguf"), 1);
}

// Makes a tiny-smollm2 model of make-model type `type`, expects `composition` in make-model's summary, and
// expects every level this CPU runs to generate the same tokens from it.
void ExpectSmolLM2ShapeRunsAtEveryLevel(const std::string& type, const std::string& composition) {
  const std::string path = ScratchDir("cli") + "/smollm2-" + type + ".gguf";
  std::string out;
  ASSERT_EQ(RunCommand(LockstepBinary() + " make-model --shape tiny-smollm2 --type " + type + " -o " + path +
                           " 2>&1",
                       &out),
            0);
  EXPECT_NE(out.find(composition), std::string::npos) << out;
  const std::string args = "generate -m " + path + " --prompt-ids \"1 2 3\" -n 6 --ids --ignore-eos --temp 0";
  std::string best;
  ASSERT_EQ(RunLockstep(args, &best), 0);
  for (const Kernels& k : RunnableKernels()) {
    std::string tokens;
    ASSERT_EQ(
        RunCommand("LOCKSTEP_CPU=" + LevelName(k) + " " + LockstepBinary() + " " + args + " 2>/dev/null",
                   &tokens),
        0);
    EXPECT_EQ(tokens, best) << LevelName(k);
  }
}

// SmolLM2-135M's widths in q4_k_m: its 576-wide rows are llama.cpp's q5_0 fallback (and q8_0 for q6_K).
TEST(MakeModelCli, SmolLM2ShapeQ4KMHasQ5_0AndRunsAtEveryLevel) {
  ExpectSmolLM2ShapeRunsAtEveryLevel("q4_k_m", "q5_0: 11, f32: 5, q8_0: 2, q4_K: 1, q6_K: 1");
}

// In iq4_xs the 576-wide rows are llama.cpp's iq4_nl fallback, ffn_down (1536 wide) iq4_xs: both IQ4 types.
TEST(MakeModelCli, SmolLM2ShapeIQ4XSHasIQ4_NLAndRunsAtEveryLevel) {
  ExpectSmolLM2ShapeRunsAtEveryLevel("iq4_xs", "iq4_nl: 13, f32: 5, iq4_xs: 2");
}

// In q3_k the 576-wide rows are llama.cpp's iq4_nl fallback, ffn_down (1536 wide) q3_K.
TEST(MakeModelCli, SmolLM2ShapeQ3KHasIQ4_NLAndRunsAtEveryLevel) {
  ExpectSmolLM2ShapeRunsAtEveryLevel("q3_k", "iq4_nl: 13, f32: 5, q3_K: 2");
}

// q2_k the same way (its ffn_down unpacked: Q2_K has no packed tiles).
TEST(MakeModelCli, SmolLM2ShapeQ2KHasIQ4_NLAndRunsAtEveryLevel) {
  ExpectSmolLM2ShapeRunsAtEveryLevel("q2_k", "iq4_nl: 13, f32: 5, q2_K: 2");
}

// mxfp4 (gpt-oss's expert type) in every matrix: 32-element blocks fit every SmolLM2 width.
TEST(MakeModelCli, SmolLM2ShapeMXFP4RunsAtEveryLevel) {
  ExpectSmolLM2ShapeRunsAtEveryLevel("mxfp4", "mxfp4: 15, f32: 5");
}

// LOCKSTEP_CPU forces a kernel level: every level this CPU runs gives the same tokens (and says which level
// ran); an unknown or unavailable level stops the command with a message naming the levels there are.
TEST(GenerateCli, ForcedCpuLevelsGiveTheSameTokensAndBadOnesFail) {
  const std::string args =
      "generate -m " + TinyModel() + " --prompt-ids \"1 2 3\" -n 8 --ids --ignore-eos --temp 0";
  std::string best;
  ASSERT_EQ(RunLockstep(args, &best), 0);
  for (const Kernels& k : RunnableKernels()) {
    std::string out, log;
    EXPECT_EQ(
        RunCommand("LOCKSTEP_CPU=" + LevelName(k) + " " + LockstepBinary() + " " + args + " 2>&1 >/dev/null",
                   &log),
        0);
    EXPECT_NE(log.find("kernels " + LevelName(k)), std::string::npos) << log;
    ASSERT_EQ(
        RunCommand("LOCKSTEP_CPU=" + LevelName(k) + " " + LockstepBinary() + " " + args + " 2>/dev/null",
                   &out),
        0);
    EXPECT_EQ(out, best) << LevelName(k);
  }
  std::string log;
  EXPECT_EQ(RunCommand("LOCKSTEP_CPU=avx1024 " + LockstepBinary() + " " + args + " 2>&1", &log), 1);
  EXPECT_NE(log.find("LOCKSTEP_CPU='avx1024' names no CPU level"), std::string::npos) << log;
#if defined(__x86_64__)
  const char* foreign = "neon";
#else
  const char* foreign = "avx2";
#endif
  EXPECT_EQ(RunCommand(std::string("LOCKSTEP_CPU=") + foreign + " " + LockstepBinary() + " " + args + " 2>&1",
                       &log),
            1);
  EXPECT_NE(log.find("is not available"), std::string::npos) << log;
}

}  // namespace
}  // namespace lockstep::testing
