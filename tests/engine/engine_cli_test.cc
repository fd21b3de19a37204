// The engine's subcommands through the real binary: `lockstep batch` and `lockstep bench batched`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine_testing.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

std::string Stories() { return testing::TestDataPath("models/stories260K.gguf"); }

TEST(EngineCliTest, BatchPrintsGoldenIdsInInputOrder) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("lockstep-batch");
  {
    std::ofstream prompts(dir + "/prompts.txt");
    prompts << "1 300 400 12 77\n1 259 260 261 262 263 264 265\n1 300 400 12 77\n";
  }
  std::string out;
  const int rc =
      testing::RunCommand(testing::LockstepBinary() + " batch -m " + Stories() + " --prompt-ids-file " + dir +
                              "/prompts.txt -n 8 --ids --ignore-eos --kv-type f32 -t 1 2>" + dir + "/err.txt",
                          &out);
  EXPECT_EQ(rc, 0);
  // The first 8 greedy ids of golden cases 1 and 2 (case 1 twice).
  EXPECT_EQ(
      out,
      "422 466 333 292 438 339 303 283\n472 477 477 477 407 465 466 465\n422 466 333 292 438 339 303 283\n");
  std::ifstream err(dir + "/err.txt");
  std::stringstream timings;
  timings << err.rdbuf();
  EXPECT_NE(timings.str().find("request 3: prompt 5 tokens, generated 8, finish length"), std::string::npos)
      << timings.str();
}

TEST(EngineCliTest, BatchTextModePrintsOneLinePerPrompt) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("lockstep-batch");
  {
    std::ofstream prompts(dir + "/prompts.txt");
    prompts << "Once upon a time\nThe cat\nA dog\n";  // (an empty line is refused: file_flags_test.cc)
  }
  std::string out;
  EXPECT_EQ(testing::RunCommand(testing::LockstepBinary() + " batch -m " + Stories() + " --prompts " + dir +
                                    "/prompts.txt -n 6 -t 1 --temp 0.8 --seed 3 2>/dev/null",
                                &out),
            0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
}

TEST(EngineCliTest, BatchRejectsBadInput) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("lockstep-batch");
  {
    std::ofstream prompts(dir + "/bad.txt");
    prompts << "1 2 3\n1 x 3\n";
  }
  std::string err;
  EXPECT_EQ(testing::RunCommand(testing::LockstepBinary() + " batch -m " + Stories() + " --prompt-ids-file " +
                                    dir + "/bad.txt 2>&1",
                                &err),
            1);
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
  EXPECT_NE(err.find("'x'"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(testing::RunCommand(testing::LockstepBinary() + " batch -m " + Stories() + " --prompt-ids-file " +
                                    dir + "/missing.txt 2>&1",
                                &err),
            1);
  EXPECT_NE(err.find("missing.txt"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(testing::RunCommand(testing::LockstepBinary() + " batch -m " + Stories() + " --prompt-ids-file " +
                                    dir + "/bad.txt --kv-memory 12Q 2>&1",
                                &err),
            1);
  EXPECT_NE(err.find("--kv-memory"), std::string::npos) << err;
}

TEST(EngineCliTest, BenchBatchedWritesTheJsonShape) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("lockstep-bench");
  std::string out;
  ASSERT_EQ(
      testing::RunCommand(testing::LockstepBinary() + " bench batched -m " + Stories() +
                              " --prompt-len 8 --gen-len 4 --batches 1,3 -t 1 --json " + dir + "/b.json",
                          &out),
      0);
  EXPECT_NE(out.find("prefill tok/s"), std::string::npos) << out;
  std::ifstream in(dir + "/b.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc.size(), 1u);
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["batch"], 1);
  EXPECT_EQ(doc["results"][1]["batch"], 3);
  for (const auto& r : doc["results"]) {
    EXPECT_EQ(r.size(), 4u);
    EXPECT_GT(r["prefill_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(r["decode_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(r["total_s"].get<double>(), 0);
  }
  std::string err;
  EXPECT_EQ(testing::RunCommand(
                testing::LockstepBinary() + " bench batched -m " + Stories() + " --batches 1,0 2>&1", &err),
            1);
  EXPECT_NE(err.find("--batches"), std::string::npos) << err;
}

// --embeddings (implied for an encoder): embedding requests, prefill only; decode reads 0.
TEST(EngineCliTest, BenchBatchedEmbeddingsArePrefillOnly) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("lockstep-bench-embed");
  const testing::TestModel bert = testing::MakeRandomTestModel("tiny-bert", "f32");
  ASSERT_NE(bert.file, nullptr);
  const std::pair<std::string, std::string> runs[] = {{Stories() + " --embeddings", "stories.json"},
                                                      {bert.file->path(), "bert.json"}};
  for (const auto& [model, json] : runs) {
    std::string out;
    ASSERT_EQ(
        testing::RunCommand(testing::LockstepBinary() + " bench batched -m " + model +
                                " --prompt-len 12 --batches 1,2 -t 1 --json " + dir + "/" + json + " 2>&1",
                            &out),
        0)
        << out;
    EXPECT_NE(out.find("G=0"), std::string::npos) << out;
    EXPECT_NE(out.find("embeddings"), std::string::npos) << out;
    std::ifstream in(dir + "/" + json);
    const nlohmann::json doc = nlohmann::json::parse(in);
    ASSERT_EQ(doc["results"].size(), 2u) << doc.dump();
    for (const auto& r : doc["results"]) {
      EXPECT_GT(r["prefill_tokens_per_s"].get<double>(), 0) << model;
      EXPECT_EQ(r["decode_tokens_per_s"].get<double>(), 0) << model;
    }
  }
  // An encoder's context bounds the prompt alone (tiny-bert: 512 positions), not prompt + --gen-len.
  std::string out;
  EXPECT_EQ(testing::RunCommand(testing::LockstepBinary() + " bench batched -m " + bert.file->path() +
                                    " --prompt-len 500 --batches 1 -t 1 2>&1",
                                &out),
            0)
      << out;
}

}  // namespace
}  // namespace lockstep
