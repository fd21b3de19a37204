// End-to-end: `lockstep tokenize` / `lockstep detokenize` on a suite vocabulary file.
#include <gtest/gtest.h>

#include <fstream>

#include "testing/testdata.h"

namespace lockstep {
namespace {

using testing::LockstepBinary;
using testing::RunCommand;
using testing::TestDataPath;

std::string Vocab(const std::string& name) { return TestDataPath("vocab/ggml-vocab-" + name + ".gguf"); }

int RunLockstep(const std::string& args, std::string* out) {
  return RunCommand(LockstepBinary() + " " + args + " 2>&1", out);
}

TEST(CliTokenizeTest, TokenizePrintsIds) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::string out;
  ASSERT_EQ(RunLockstep("tokenize -m " + Vocab("llama-spm") + " 'Hello world'", &out), 0) << out;
  EXPECT_EQ(out, "1 15043 3186\n");
  out.clear();
  ASSERT_EQ(RunLockstep("tokenize --no-bos -m " + Vocab("llama-spm") + " 'Hello world'", &out), 0) << out;
  EXPECT_EQ(out, "15043 3186\n");
  out.clear();
  ASSERT_EQ(RunLockstep("tokenize -m " + Vocab("llama-spm") + " ''", &out), 0) << out;
  EXPECT_EQ(out, "1\n");  // empty text: just BOS
}

TEST(CliTokenizeTest, SpecialTextAndPieces) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::string out;
  ASSERT_EQ(RunLockstep("tokenize --no-bos -m " + Vocab("gpt-2") + " 'Hi<|endoftext|>'", &out), 0) << out;
  EXPECT_EQ(out, "17250 50256\n");
  out.clear();
  ASSERT_EQ(RunLockstep("tokenize --no-bos --no-special -m " + Vocab("gpt-2") + " '<|endoftext|>'", &out), 0)
      << out;
  EXPECT_EQ(out.find("50256"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(RunLockstep("tokenize --no-bos --pieces -m " + Vocab("gpt-2") + " 'Hello world'", &out), 0)
      << out;
  EXPECT_EQ(out, "15496:'Hello'\n995:'Ġworld'\n");
}

TEST(CliTokenizeTest, FileBytesExactlyIncludingTrailingNewline) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string path = testing::MakeTempDir("tokenize-cli") + "/input.txt";
  std::ofstream(path, std::ios::binary) << "Hello world\n";
  std::string out;
  ASSERT_EQ(RunLockstep("tokenize --no-bos -m " + Vocab("gpt-2") + " -f " + path, &out), 0) << out;
  EXPECT_EQ(out, "15496 995 198\n");  // 198 is "\n"
}

TEST(CliTokenizeTest, DetokenizeRoundTrip) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::string out;
  ASSERT_EQ(RunLockstep("detokenize -m " + Vocab("llama-spm") + " '1 15043 3186'", &out), 0) << out;
  EXPECT_EQ(out, "<s>Hello world\n");
  out.clear();
  ASSERT_EQ(RunLockstep("detokenize --skip-special -m " + Vocab("llama-spm") + " 1,15043 3186", &out), 0)
      << out;
  EXPECT_EQ(out, "Hello world\n");
}

TEST(CliTokenizeTest, LargeFileRoundTripsThroughIdFile) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = testing::MakeTempDir("tokenize-cli");
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "Line " + std::to_string(i) + ": héllo wörld 🦙 我想\n";
  std::ofstream(dir + "/in.txt", std::ios::binary) << text;
  for (const char* vocab : {"llama-spm", "deepseek-coder"}) {
    std::string out;
    ASSERT_EQ(
        RunLockstep("tokenize --no-bos -m " + Vocab(vocab) + " -f " + dir + "/in.txt > " + dir + "/ids.txt",
                    &out),
        0)
        << out;
    ASSERT_EQ(RunLockstep("detokenize -m " + Vocab(vocab) + " -f " + dir + "/ids.txt", &out), 0);
    EXPECT_TRUE(out == text + "\n") << vocab << ": round trip differs (" << out.size() << " vs "
                                    << text.size() + 1 << " bytes)";
  }
}

TEST(CliTokenizeTest, BadInputExitsWithOne) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::string out;
  EXPECT_EQ(RunLockstep("tokenize -m /nonexistent/model.gguf hello", &out), 1);
  EXPECT_NE(out.find("error"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunLockstep("detokenize -m " + Vocab("llama-spm") + " '1 abc'", &out), 1);
  EXPECT_NE(out.find("'abc' is not a token id"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunLockstep("detokenize -m " + Vocab("llama-spm") + " 32000", &out), 1);
  EXPECT_NE(out.find("out of range"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunLockstep("detokenize -m " + Vocab("llama-spm") + " -- -1", &out), 1);
  EXPECT_NE(out.find("out of range"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunLockstep("tokenize -m " + Vocab("llama-spm") + " -f /nonexistent/input.txt", &out), 1);
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunLockstep("tokenize -m " + Vocab("llama-spm"), &out), 1);
  out.clear();
  EXPECT_EQ(RunLockstep("tokenize -m " + Vocab("bert-bge") + " --no-bos \"\xC3\x89t\xC3\xA9!\"", &out), 0);
  EXPECT_NE(out.find("3802 2063 999"), std::string::npos) << out;  // WordPiece: "▁et" "e" "▁!"

  out.clear();
  const std::string bad = testing::MakeTempDir("tokenize-cli") + "/bad.txt";
  std::ofstream(bad, std::ios::binary) << "ok \xFF";
  EXPECT_EQ(RunLockstep("tokenize -m " + Vocab("llama-spm") + " -f " + bad, &out), 1);
  EXPECT_NE(out.find("UTF-8"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep
