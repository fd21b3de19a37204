// Bad input through CLI flags and files, run through the real binary: regression tests for the CLI audit.
// Every file flag reads through one helper (base/file_util.h), so a directory is refused as "is a directory",
// naming the flag and the file, with exit code 1 (it aborted `generate` and `bench compare`, and read as
// empty elsewhere).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_fixture.h"

namespace lockstep::testing {
namespace {

class FileFlagsTest : public CliTest {
 protected:
  static void SetUpTestSuite() {
    CliTest::SetUpTestSuite();
    std::filesystem::create_directory(Dir());
  }

  static std::string Dir() { return *dir_ + "/adir"; }

  // Runs ARGS: exit code 1 and `message` on stderr.
  static void ExpectRefused(const std::string& args, const std::string& message) {
    std::string out, err;
    EXPECT_EQ(Lockstep(args, &out, &err), 1) << args << "\n" << err;
    EXPECT_NE(err.find(message), std::string::npos) << args << "\n" << err;
  }

  // Runs ARGS, which name Dir() for `flag`: exit code 1 and "<flag>: '<dir>' is a directory".
  static void ExpectDirectoryRefused(const std::string& args, const std::string& flag) {
    ExpectRefused(args, flag + ": '" + Dir() + "' is a directory");
  }
};

TEST_F(FileFlagsTest, EveryFileFlagRefusesADirectory) {
  const std::string m = " -m " + *model_;
  const std::string url = " --url http://127.0.0.1:1 --model x";
  ExpectDirectoryRefused("generate" + m + " -n 3 -t 1 -f " + Dir(), "-f/--file");  // aborted (rc 134)
  ExpectDirectoryRefused("tokenize" + m + " -f " + Dir(), "-f/--file");            // printed BOS, rc 0
  ExpectDirectoryRefused("detokenize" + m + " -f " + Dir(), "-f/--file");
  ExpectDirectoryRefused("batch" + m + " -t 1 --prompts " + Dir(), "--prompts");
  ExpectDirectoryRefused("batch" + m + " -t 1 --prompt-ids-file " + Dir(), "--prompt-ids-file");
  ExpectDirectoryRefused("ask --dry-run --file " + Dir(), "--file");
  ExpectDirectoryRefused("ask --dry-run -q hi --url-file " + Dir(), "--url-file");
  ExpectDirectoryRefused("bench compare" + url + " --builtin --context " + Dir(), "--context");  // aborted
  ExpectDirectoryRefused("bench compare" + url + " --questions " + Dir(), "--questions");
  ExpectDirectoryRefused("bench serve" + url + " --requests 1 --dataset " + Dir(), "--dataset");
  ExpectDirectoryRefused("info" + m + " --chat-template " + Dir(), "--chat-template");
}

TEST_F(FileFlagsTest, ChatRefusesADirectoryOnStandardInput) {
  std::string out, err;
  EXPECT_EQ(Lockstep("chat -m " + *model_ + " -t 1 -n 4 < " + Dir(), &out, &err), 1) << err;
  EXPECT_NE(err.find("standard input is a directory"), std::string::npos) << err;
}

TEST_F(FileFlagsTest, AMissingFileIsNamedWithItsFlag) {
  std::string out, err;
  EXPECT_EQ(Lockstep("tokenize -m " + *model_ + " -f " + *dir_ + "/missing.txt", &out, &err), 1);
  EXPECT_NE(err.find("-f/--file: cannot open '" + *dir_ + "/missing.txt': No such file"), std::string::npos)
      << err;
}

// The tokenizer's "text is not valid UTF-8" did not say which file held the text.
TEST_F(FileFlagsTest, GenerateNamesTheFileThatIsNotUtf8) {
  std::string out, err;
  const std::string bad = Write("bad_prompt.txt", "bad\xff\n");
  EXPECT_EQ(Lockstep("generate -m " + *model_ + " -t 1 -n 2 -f " + bad, &out, &err), 1) << out;
  EXPECT_NE(err.find("-f/--file '" + bad + "' is not valid UTF-8 (byte 0xFF at offset 3)"), std::string::npos)
      << err;
  EXPECT_EQ(Lockstep("generate -m " + *model_ + " -t 1 -n 2 -p \"$(printf 'a\\377')\"", &out, &err), 1);
  EXPECT_NE(err.find("-p/--prompt is not valid UTF-8 (byte 0xFF at offset 1)"), std::string::npos) << err;
}

// Output paths were checked only after the work (a model load, a benchmark run), whose results were lost.
// A missing model or an unreachable server shows the order: the output path's error comes first.
TEST_F(FileFlagsTest, OutputPathsAreCheckedBeforeTheWork) {
  const std::string missing = " -m " + *dir_ + "/missing.gguf";
  const std::string no_folder = *dir_ + "/no/r.json";
  ExpectDirectoryRefused("generate" + missing + " -p hi --timings-json " + Dir(), "--timings-json");
  ExpectRefused("generate" + missing + " -p hi --timings-json " + no_folder,
                "--timings-json: cannot write '" + no_folder + "': no folder '" + *dir_ + "/no'");
  ExpectDirectoryRefused("bench batched" + missing + " --json " + Dir(), "--json");

  const std::string url = " --url http://127.0.0.1:1 --model-name x";
  const std::string file = Write("a_file.txt", "x");
  ExpectRefused("bench compare" + url + " --builtin --out " + file,
                "--out: '" + file + "' is not a directory");
  ExpectRefused("bench serve" + url + " --requests 1 --out " + file + "/sub",
                "--out: cannot create '" + file + "/sub': '" + file + "' is not a directory");
  // Not an output path, but found as late: an unknown --modes.
  ExpectRefused("bench compare" + url + " --builtin --modes combined,bogus", "--modes: unknown mode 'bogus'");

  // The check creates nothing: a new file's path is still free after a later failure.
  const std::string fresh = *dir_ + "/timings.json";
  ExpectRefused("generate" + missing + " -p hi --timings-json " + fresh, "missing.gguf");
  EXPECT_FALSE(std::filesystem::exists(fresh));
}

// A NUL byte inside a token id ended it (strtoll on c_str()): "100\0garbage" read as 100.
TEST_F(FileFlagsTest, DetokenizeReadsPastANulByte) {
  std::string out, err;
  const std::string ids = Write("nul.txt", std::string("100\0garbage 101", 15));
  EXPECT_EQ(Lockstep("detokenize -m " + *model_ + " -f " + ids, &out, &err), 1) << out;
  // The whole word is shown, its NUL as \0 (the message used to stop at the NUL).
  EXPECT_NE(err.find("'100\\0garbage' is not a token id"), std::string::npos) << err;

  const std::string good = Write("ids.txt", "100 101\n");
  std::string from_args;
  ASSERT_EQ(Lockstep("detokenize -m " + *model_ + " 100 101", &from_args, &err), 0) << err;
  EXPECT_EQ(Lockstep("detokenize -m " + *model_ + " -f " + good, &out, &err), 0) << err;
  EXPECT_EQ(out, from_args);
}

// An empty line became a BOS-only request (the empty check came after BOS was added).
TEST_F(FileFlagsTest, BatchRefusesAnEmptyPromptLineByNumber) {
  LOCKSTEP_REQUIRE_TESTDATA();  // a vocabulary with a BOS (the tiny model's has none)
  const std::string model = TestDataPath("models/stories260K.gguf");
  std::string out, err;
  const std::string prompts = Write("prompts.txt", "hello\n\nworld\n");
  EXPECT_EQ(Lockstep("batch -m " + model + " -t 1 -n 2 --prompts " + prompts, &out, &err), 1) << out;
  EXPECT_NE(err.find("--prompts " + prompts + " line 2: the prompt is empty"), std::string::npos) << err;
  EXPECT_EQ(out, "");

  const std::string crlf = Write("crlf_prompts.txt", "hello\r\n\r\n");
  EXPECT_EQ(Lockstep("batch -m " + model + " -t 1 -n 2 --prompts " + crlf, &out, &err), 1) << out;
  EXPECT_NE(err.find("line 2: the prompt is empty"), std::string::npos) << err;

  const std::string ok = Write("ok_prompts.txt", "hello\nworld");
  EXPECT_EQ(Lockstep("batch -m " + model + " -t 1 -n 2 --prompts " + ok, &out, &err), 0) << err;
}

// A failed rename left DIR.tmp behind; -o '' wrote ./.tmp. And -o was checked only at that rename, after the
// whole model was written: an unknown --shape, refused before the writing, shows the order now.
TEST_F(FileFlagsTest, MakeModelChecksTheOutputFirstAndLeavesNoTemporaryFile) {
  std::string out, err;
  ExpectDirectoryRefused("make-model --shape tiny -o " + Dir(), "-o/--output");
  EXPECT_FALSE(std::filesystem::exists(Dir() + ".tmp"));
  ExpectDirectoryRefused("make-model --shape bogus -o " + Dir(), "-o/--output");
  const std::string no_folder = *dir_ + "/no/m.gguf";
  ExpectRefused("make-model --shape bogus -o " + no_folder,
                "-o/--output: cannot write '" + no_folder + "': no folder '" + *dir_ + "/no'");

  const std::string work = MakeTempDir("lockstep-make-model-empty");
  EXPECT_EQ(
      RunCommand("cd " + work + " && " + LockstepBinary() + " make-model --shape tiny -o '' 2>&1", &err), 1);
  EXPECT_NE(err.find("-o/--output: the path is empty"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(work + "/.tmp"));
}

// chat exited 0 whatever its turns did.
TEST_F(FileFlagsTest, ChatExitsOneAfterAFailedTurn) {
  std::string out, err;
  const std::string input = Write("chat_in.txt",
                                  "a\xff"
                                  "b\nHi\n");
  EXPECT_EQ(Lockstep("chat -m " + *model_ + " -t 1 -n 4 < " + input, &out, &err), 1) << err;
  EXPECT_NE(err.find("input line 1: "), std::string::npos) << err;  // the turn is named by its line
  EXPECT_NE(err.find("1 turn failed"), std::string::npos) << err;
  EXPECT_FALSE(out.empty());  // the second turn was still answered

  const std::string raise = Write("raise.jinja", "{{ raise_exception('no chats today') }}");
  EXPECT_EQ(
      Lockstep("chat -m " + *model_ + " -t 1 -n 4 --chat-template " + raise + " < " + input, &out, &err), 1);
  EXPECT_NE(err.find("no chats today"), std::string::npos) << err;
  EXPECT_NE(err.find("2 turns failed"), std::string::npos) << err;
}

TEST_F(FileFlagsTest, ChatRefusesAnUnusableSystemMessageAtTheStart) {
  std::string out, err;
  const std::string input = Write("chat_hi.txt", "Hi\n");
  EXPECT_EQ(
      Lockstep("chat -m " + *model_ + " -t 1 -n 4 --system \"$(printf 'x\\377')\" < " + input, &out, &err),
      1);
  EXPECT_NE(err.find("--system: "), std::string::npos) << err;
  EXPECT_EQ(out, "");  // refused before any turn
}

}  // namespace
}  // namespace lockstep::testing
