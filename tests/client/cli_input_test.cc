// Regressions from the CLI audit: bad input to the client commands (ask, advise, bench compare, bench serve)
// gets a message that names the flag or question and what it allows, and a non-zero exit code; never an
// abort, a hang or a silent success. Runs the real binary; the servers are the scripted ones
// (client/test_server.h) or none at all, since these checks come before any request.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

// Runs `lockstep ARGS` under a generous timeout (a hang fails the test, not the suite), stderr included.
int Lockstep(const std::string& args, std::string* out) {
  return RunCommand("timeout 120 " + LockstepBinary() + " " + args + " 2>&1", out);
}

// The model list, and an answer to any chat request (which these tests count: the checks come first).
TestResponse ModelsOrAnswer(const TestRequest& req) {
  if (req.target != "/v1/models") return ChatSseResponse({"answered"}, 1);
  return ModelListResponse("m");
}

size_t ChatRequestsSeen(const TestHttpServer& server) {
  size_t n = 0;
  for (const auto& req : server.seen()) n += req.target == "/v1/chat/completions";
  return n;
}

// Regression (audit C3 and W1): `ask --dry-run --json` aborted (rc 134) on a question that is not UTF-8;
// against a server the request was dropped and `ask` said "0 failed" with exit code 0.
TEST(ClientInputTest, AskRefusesQuestionsAndModelNamesThatAreNotUtf8) {
  std::string out;
  EXPECT_EQ(Lockstep("ask --dry-run --json -q \"$(printf 'a\\377')\"", &out), 1) << out;
  EXPECT_NE(out.find("question 1 (of -q) is not valid UTF-8 (byte 0xFF at offset 1)"), std::string::npos)
      << out;
  TestHttpServer server(ModelsOrAnswer);
  const std::string url = " --url " + server.url();
  EXPECT_EQ(Lockstep("ask" + url + " -q fine -q \"$(printf 'bad\\377')\" --max-tokens 3", &out), 1) << out;
  EXPECT_NE(out.find("question 2 (of -q) is not valid UTF-8"), std::string::npos) << out;
  EXPECT_EQ(Lockstep("ask" + url + " -q fine --model-name \"$(printf 'a\\377')\" --json", &out), 1) << out;
  EXPECT_NE(out.find("--model-name is not valid UTF-8"), std::string::npos) << out;
  const std::string file = MakeTempDir("cli-input") + "/qbad.txt";
  std::ofstream(file, std::ios::binary) << "good\nbad\xff\n";
  EXPECT_EQ(Lockstep("ask" + url + " --file " + file + " --json", &out), 1) << out;
  EXPECT_NE(out.find("question 2 (of --file '" + file + "') is not valid UTF-8"), std::string::npos) << out;
  EXPECT_EQ(Lockstep("bench compare" + url + " --questions " + file + " --repeat 1", &out), 1) << out;
  EXPECT_NE(out.find("question 2 (of --questions '" + file + "') is not valid UTF-8"), std::string::npos)
      << out;
  EXPECT_EQ(ChatRequestsSeen(server), 0u);
}

// Regression (audit C5, W7, M3): `bench serve --rate nan` hung for ever; `--rate inf` printed DBL_MAX in
// 309 digits; `ask --timeout nan` failed every request at once as "timed out"; `ask --temperature -1` and
// `nan` were silently dropped. Each is refused, naming the flag and its range.
TEST(ClientInputTest, NumericFlagsMustBeFiniteAndInRange) {
  TestHttpServer server(ModelsOrAnswer);
  const std::string url = " --url " + server.url();
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"bench serve" + url + " --requests 2 --output-len 2 --rate nan",
       "--rate: must be a finite number >= 0"},
      {"bench serve" + url + " --requests 2 --rate inf", "--rate: must be a finite number >= 0, got 'inf'"},
      {"bench serve" + url + " --burstiness inf", "--burstiness: must be a finite number > 0"},
      {"bench serve" + url + " --requests 0", "--requests: must be a finite number >= 1"},
      {"ask" + url + " -q hi --timeout nan", "--timeout: must be a finite number > 0 and <= 1000000"},
      {"ask" + url + " -q hi --timeout 0", "--timeout: must be a finite number > 0 and <= 1000000, got '0'"},
      {"ask" + url + " -q hi --connect-timeout inf", "--connect-timeout: must be a finite number > 0"},
      {"ask" + url + " -q hi --temperature -1",
       "--temperature: must be a finite number from 0 to 2, got '-1'"},
      {"ask" + url + " -q hi --temperature nan", "--temperature: must be a finite number from 0 to 2"},
      {"ask" + url + " -q hi --max-tokens 0", "--max-tokens: must be a finite number >= 1, got '0'"},
      {"bench compare" + url + " --builtin --temperature nan",
       "--temperature: must be a finite number from 0"},
      {"advise" + url + " --tokens 0", "--tokens: must be a finite number >= 1"},
  };
  for (const Case& c : cases) {
    std::string out;
    const int rc = Lockstep(c.args, &out);
    EXPECT_NE(rc, 0) << c.args << "\n" << out;
    EXPECT_NE(rc, 124) << c.args << ": hung\n" << out;
    EXPECT_NE(out.find(c.expected), std::string::npos) << c.args << "\n" << out;
    EXPECT_EQ(out.find("179769"), std::string::npos) << c.args << ": DBL_MAX in full\n" << out;
  }
  EXPECT_EQ(ChatRequestsSeen(server), 0u);
  // In range they still work: a temperature is sent as given.
  std::string out;
  ASSERT_EQ(Lockstep("ask" + url + " -q hi --temperature 0.5 --timeout 30 --json", &out), 0) << out;
  bool sent = false;
  for (const auto& req : server.seen()) {
    if (req.target == "/v1/chat/completions") sent = nlohmann::json::parse(req.body)["temperature"] == 0.5;
  }
  EXPECT_TRUE(sent);
}

// Audit: the client commands' --help gave no defaults for --timeout (600 s, so a silent listener blocks for
// about 10 min), --retries and --max-tokens.
TEST(ClientInputTest, HelpShowsTheDefaults) {
  for (const std::string command : {"ask", "advise", "bench compare", "bench serve"}) {
    std::string out;
    ASSERT_EQ(Lockstep(command + " --help", &out), 0) << out;
    for (const std::string flag : {"--timeout", "--retries"}) {
      const size_t line = out.find("  " + flag + " ");
      ASSERT_NE(line, std::string::npos) << command << ": " << flag << "\n" << out;
      const std::string text = out.substr(line, out.find('\n', line) - line);
      EXPECT_NE(text.find(flag == "--timeout" ? "=600" : "=3"), std::string::npos) << command << ": " << text;
    }
  }
  std::string out;
  ASSERT_EQ(Lockstep("ask --help", &out), 0) << out;
  EXPECT_NE(out.find("--max-tokens INT:[1, inf)=256"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::testing
