// Every subcommand's --help, through the real binary: it exits 0 and speaks the one flag vocabulary
// (cli/common_flags.h): -m,--model is always a FILE, -t,--threads is worded the same everywhere, required
// options say REQUIRED, and no deprecated spelling is advertised. Subcommands are discovered from the help
// itself, so a new one is covered without editing this test.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

std::string Help(const std::string& command) {
  std::string out;
  const int rc = RunCommand(LockstepBinary() + " " + command + " --help 2>&1", &out);
  EXPECT_EQ(rc, 0) << command << " --help:\n" << out;
  return out;
}

// The names listed under "Subcommands:" in a help text.
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  bool listing = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0 || line.rfind("SUBCOMMANDS:", 0) == 0) {
      listing = true;
    } else if (listing && line.size() > 2 && line[0] == ' ' && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (listing && line.empty() && !names.empty()) {
      listing = false;
    }
  }
  return names;
}

// Every option line of a help text ("  -m,--model FILE REQUIRED  GGUF model file").
std::vector<std::string> OptionLines(const std::string& help) {
  std::vector<std::string> lines;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  -", 0) == 0) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> AllCommands() {
  std::vector<std::string> commands;
  for (const std::string& top : Subcommands(Help(""))) {
    const std::vector<std::string> nested = Subcommands(Help(top));
    if (nested.empty()) commands.push_back(top);
    for (const std::string& sub : nested) commands.push_back(top + " " + sub);
  }
  return commands;
}

TEST(HelpTest, EveryCommandHasHelpInTheOneVocabulary) {
  const std::vector<std::string> commands = AllCommands();
  const std::set<std::string> listed(commands.begin(), commands.end());
  for (const char* expected :
       {"info", "generate", "chat", "make-model", "tokenize", "detokenize", "batch", "bench batched",
        "bench compare", "bench serve", "ask", "advise", "pull", "serve"}) {
    EXPECT_TRUE(listed.count(expected)) << expected << " is not listed";
  }
  std::string threads_wording;
  for (const std::string& command : commands) {
    const std::string help = Help(command);
    EXPECT_NE(help.find("Usage:"), std::string::npos) << command;
    for (const std::string& line : OptionLines(help)) {
      SCOPED_TRACE(command + ": " + line);
      // --model alone (a server's model name, the old spelling) is not advertised: that is --model-name.
      EXPECT_EQ(line.find("  --model "), std::string::npos);
      if (line.find("-m,--model ") != std::string::npos) {
        EXPECT_NE(line.find("FILE"), std::string::npos);
      }
      if (line.find("-t,--threads") != std::string::npos) {
        const std::string wording = line.substr(line.find("Compute"));
        if (threads_wording.empty()) threads_wording = wording;
        EXPECT_EQ(wording, threads_wording);
      }
      for (const char* old : {"--model-path", "--kv-f32", "--prompt-len-words"}) {
        EXPECT_EQ(line.find(old), std::string::npos) << old << " is deprecated and must not be advertised";
      }
      if (line.find("--temp") != std::string::npos) {
        EXPECT_NE(line.find("--temperature"), std::string::npos);
      }
    }
  }
  EXPECT_FALSE(threads_wording.empty());
  EXPECT_NE(Help("generate").find("-m,--model FILE REQUIRED"), std::string::npos);
  EXPECT_NE(Help("ask").find("REQUIRED unless --dry-run"), std::string::npos);
  const std::string serve = Help("serve");
  EXPECT_NE(serve.find("--chat-template FILE|NAME"), std::string::npos);
  // The other engineers' flags, in the same vocabulary: scale-out, prefix cache, shared-context benches.
  for (const char* flag :
       {"--drain-grace", "--drain-timeout", "--no-prefix-cache", "--kv-type", "--model-name"}) {
    EXPECT_NE(serve.find(flag), std::string::npos) << "serve lacks " << flag;
  }
  EXPECT_NE(Help("batch").find("--no-prefix-cache"), std::string::npos);
  for (const char* client : {"ask", "advise", "bench compare", "bench serve"}) {
    const std::string help = Help(client);
    EXPECT_NE(help.find("--url TEXT ..."), std::string::npos) << client << ": --url is repeatable";
    EXPECT_NE(help.find("--url-file"), std::string::npos) << client;
    EXPECT_NE(help.find("--model-name NAME"), std::string::npos) << client;
  }
  const std::string compare = Help("bench compare");
  EXPECT_NE(compare.find("--context"), std::string::npos);
  EXPECT_NE(compare.find("fan-out"), std::string::npos);
  EXPECT_NE(Help("bench serve").find("Random prompt length in tokens"), std::string::npos);
}

TEST(HelpTest, OldSpellingsStillWorkWithADeprecationNote) {
  std::string out;
  // ask --model NAME with --dry-run: nothing is sent; the note is printed.
  ASSERT_EQ(RunCommand(LockstepBinary() + " ask --model x -q hi --dry-run 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("note: ask --model NAME is deprecated and will be removed; use --model-name NAME"),
            std::string::npos)
      << out;
  EXPECT_NE(
      RunCommand(LockstepBinary() + " bench compare --model-path /nonexistent.gguf --builtin 2>&1", &out), 0);
  EXPECT_NE(out.find("note: --model-path FILE is deprecated"), std::string::npos) << out;
  // advise --model NAME (no server at this port: the note comes first, then the connection error).
  EXPECT_NE(
      RunCommand(LockstepBinary() + " advise --url http://127.0.0.1:1 --retries 0 --model x --calibrate 2>&1",
                 &out),
      0);
  EXPECT_NE(out.find("note: advise --model NAME is deprecated"), std::string::npos) << out;
}

TEST(HelpTest, AnUnknownCommandIsNamedWithTheKnownOnes) {
  std::string out;
  EXPECT_EQ(RunCommand(LockstepBinary() + " nosuch 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("unknown command 'nosuch'"), std::string::npos) << out;
  EXPECT_NE(out.find("generate"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(LockstepBinary() + " --version 2>&1", &out), 0) << out;
  // A bad flag is an error like the others: exit code 1 (CLI11's own codes are 104-114).
  EXPECT_EQ(RunCommand(LockstepBinary() + " generate --no-such-flag 2>&1", &out), 1) << out;
  EXPECT_EQ(RunCommand(LockstepBinary() + " ask -q hi --temperature nan 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("--temperature"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::testing
