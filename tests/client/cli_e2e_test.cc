// The client subcommands run as the real binary: `ask` against the scripted server (order, JSON output, API
// key from the environment, --dry-run split), and `bench compare` / `bench serve` with -m on a tiny random
// model (the in-process lockstep server): valid JSON and SVG, and parallel requests whose time intervals
// overlap.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/svg_check.h"
#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Bin() { return LockstepBinary(); }

TEST(AskCommandTest, AnswersInOrderAsJsonWithTheEnvApiKey) {
  TestHttpServer server([](const TestRequest& req) {
    if (req.target == "/v1/models") return ModelListResponse("served-model");
    const auto body = nlohmann::json::parse(req.body);
    const std::string q = body["messages"][0]["content"];
    // The first question answers slowest, so completion order differs from question order.
    return ChatSseResponse({"answer to ", q}, 3, q.find("first") != std::string::npos ? 150 : 1);
  });
  std::string out;
  const int rc = RunCommand("LOCKSTEP_API_KEY=k123 " + Bin() + " ask --url " + server.url() +
                                " -q 'first?' -q 'second?' -q 'third?' --json --max-tokens 9",
                            &out);
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][0]["answer"], "answer to first?");
  EXPECT_EQ(j["results"][2]["answer"], "answer to third?");
  EXPECT_EQ(j["results"][1]["completion_tokens"], 3);
  EXPECT_EQ(j["model"], "served-model");
  for (const auto& req : server.seen()) EXPECT_EQ(req.headers.at("authorization"), "Bearer k123");
  // Human-readable output: in question order, then the total.
  ASSERT_EQ(RunCommand(Bin() + " ask --url " + server.url() + " -q 'first?' -q 'second?'", &out), 0) << out;
  const size_t a = out.find("[1/2] first?"), b = out.find("[2/2] second?"), t = out.find("total wall time");
  ASSERT_NE(a, std::string::npos) << out;
  EXPECT_LT(a, b);
  EXPECT_LT(b, t);
  EXPECT_NE(out.find("ttft"), std::string::npos);
}

TEST(AskCommandTest, DryRunSplitsWithoutSending) {
  std::string out;
  ASSERT_EQ(RunCommand("printf 'Answer each separately:\\n1. Why?\\n2. How?\\n' | " + Bin() +
                           " ask --split - --dry-run --json",
                       &out),
            0)
      << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["preamble"], "Answer each separately:");
  EXPECT_EQ(j["questions"], nlohmann::json::array({"Why?", "How?"}));
  EXPECT_EQ(j.size(), 2u);
}

TEST(AskCommandTest, CtrlCCancelsEveryRequest) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r = ChatSseResponse({"never"});
    r.delay_before_head_ms = 30000;  // stalls until the server is destroyed
    return r;
  });
  std::string out;
  // SIGINT after 3 s (all three requests are stalled by then); --preserve-status returns ask's exit code.
  const int rc = RunCommand("timeout --preserve-status -s INT 3 " + Bin() + " ask --url " + server.url() +
                                " --model m -q a -q b -q c 2>&1",
                            &out);
  EXPECT_EQ(rc, 130) << out;
  EXPECT_NE(out.find("cancelled"), std::string::npos) << out;
  EXPECT_EQ(server.requests(), 3);
}

TEST(AskCommandTest, FailsCleanlyWithoutAServer) {
  std::string out;
  EXPECT_EQ(RunCommand(Bin() + " ask --url http://127.0.0.1:1 -q hi --retries 0 2>&1", &out), 1);
  EXPECT_NE(out.find("cannot connect"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(Bin() + " ask --url localhost:8080 -q hi 2>&1", &out), 1);
  EXPECT_NE(out.find("no scheme"), std::string::npos) << out;
}

// Regression (interop with llama.cpp's server): `ask --url https://...` on a plain-http port that never
// answers the TLS handshake waited about 20 min with the default --timeout (600 s for the silent model
// look-up, 600 s for the request). Now it fails after the default connect timeout (15 s), without retries
// and without a second wait, saying the server may speak plain http.
TEST(AskCommandTest, HttpsToAPlainHttpPortFailsSoonWithAHint) {
  SilentListener silent;
  const std::string where = "127.0.0.1:" + std::to_string(silent.port());
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      RunCommand("timeout 300 " + Bin() + " ask --url https://" + where + " -q 'Hi?' --max-tokens 8 2>&1",
                 &out),
      1)
      << out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60) << out;
  EXPECT_NE(out.find("TLS handshake with " + where + " failed"), std::string::npos) << out;
  EXPECT_NE(out.find("does the server speak plain http? try http://" + where), std::string::npos) << out;
}

// Regression (interop with llama.cpp's server): `advise --calibrate` ran its calibration requests and only
// then learnt that the server has no /advisor. It asks the advisor first now.
TEST(AdviseCommandTest, CalibrateAsksTheAdvisorBeforeSendingRequests) {
  TestHttpServer server([](const TestRequest& req) {
    if (req.target == "/v1/models") return ModelListResponse("other-server");
    if (req.target == "/v1/chat/completions") return ChatSseResponse({"one", " two"}, 2);
    TestResponse r;
    r.status = 404;
    r.pieces = {"File Not Found"};
    return r;
  });
  std::string out;
  EXPECT_EQ(RunCommand("timeout 120 " + Bin() + " advise --url " + server.url() +
                           " --questions 3 --tokens 16 --calibrate 2>&1",
                       &out),
            1);
  EXPECT_NE(out.find("needs a lockstep server"), std::string::npos) << out;
  for (const auto& req : server.seen()) {
    EXPECT_NE(req.target, "/v1/chat/completions") << "a calibration request was sent\n" << out;
  }
}

class BenchCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("bench-e2e"));
    std::string out;
    ASSERT_EQ(RunCommand(Bin() + " make-model --shape tiny -o " + *dir_ + "/tiny.gguf 2>&1", &out), 0) << out;
  }
  static std::string* dir_;
};
std::string* BenchCommandTest::dir_ = nullptr;

TEST_F(BenchCommandTest, CompareOnATinyModel) {
  const std::string out_dir = *dir_ + "/compare";
  std::string out;
  ASSERT_EQ(RunCommand("timeout 120 " + Bin() + " bench compare -m " + *dir_ +
                           "/tiny.gguf --builtin --max-tokens 6 --repeat 2 -t 1 --out " + out_dir + " 2>&1",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("| parallel |"), std::string::npos) << out;
  const auto j = nlohmann::json::parse(Slurp(out_dir + "/result.json"));
  for (const char* mode : {"combined", "parallel", "sequential"}) {
    EXPECT_EQ(j["modes"][mode]["walls_s"].size(), 2u) << mode;
    EXPECT_GT(j["modes"][mode]["median_wall_s"].get<double>(), 0) << mode;
    EXPECT_EQ(j["modes"][mode]["output_tokens"], 30) << mode << ": ignore_eos not honoured?";
  }
  EXPECT_GT(j["speedup_parallel_over_combined"].get<double>(), 0);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(CheckSvg(Slurp(out_dir + "/chart.svg")), "");
  // The parallel requests really overlap: every request starts before any ends.
  const auto spans = nlohmann::json::parse(Slurp(out_dir + "/requests.json"));
  for (const auto& run : spans["parallel"]) {
    ASSERT_EQ(run.size(), 5u);
    double latest_start = 0, earliest_end = 1e9;
    for (const auto& s : run) {
      latest_start = std::max(latest_start, s["start_s"].get<double>());
      earliest_end = std::min(earliest_end, s["end_s"].get<double>());
    }
    EXPECT_LT(latest_start, earliest_end);
  }
}

TEST_F(BenchCommandTest, ServeOnATinyModel) {
  const std::string out_dir = *dir_ + "/serve";
  std::string out;
  ASSERT_EQ(RunCommand("timeout 120 " + Bin() + " bench serve -m " + *dir_ +
                           "/tiny.gguf --requests 8 --rate 100 --prompt-len 16:4 --output-len 4 --slo "
                           "ttft=60000,tpot=60000"
                           " -t 1 --out " +
                           out_dir + " 2>&1",
                       &out),
            0)
      << out;
  const auto j = nlohmann::json::parse(Slurp(out_dir + "/result.json"));
  EXPECT_EQ(j["completed"], 8);
  EXPECT_EQ(j["total_output_tokens"], 32);
  EXPECT_GT(j["total_input_tokens"].get<int>(), 8 * 12);  // real prompt_tokens from usage (template included)
  EXPECT_GT(j["goodput"].get<double>(), 0);
  EXPECT_TRUE(j["ttft_ms"].contains("p99"));
  EXPECT_EQ(CheckSvg(Slurp(out_dir + "/latency_cdf.svg")), "");
  EXPECT_EQ(CheckSvg(Slurp(out_dir + "/throughput.svg")), "");
}

}  // namespace
}  // namespace lockstep::testing
