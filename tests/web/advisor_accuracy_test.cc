// The latency advisor against a real `lockstep bench compare` run on the same server: after a warm-up run of
// two rounds (which gives the engine's step-time fit steps of 1 and 5 rows), GET /advisor's predictions for
// the same questions and lengths are compared with a measured run.
//
// The model: `make-model --shape smollm2-135m --type q8_0` (2048 context, ~15-40 ms a step on one thread:
// the step time, not HTTP, dominates), served with -t 1 --no-prefix-cache; the 5 built-in questions, 24
// tokens each.
//
// Tolerance (|log(predicted / measured)|, so symmetric as factors): the predicted ratios combined /
// parallel and sequential / parallel within a factor of 1.5 of the measured ones, every mode's predicted wall
// time within a factor of 2. Ratios are what the advice rests on; absolute times drift with the shared
// machine's load between the warm-up that fits the model and the measured run. A run that misses is repeated
// (a noisy neighbour; each try's fit also has the steps of the one before); three tries must miss to fail
// (one miss in a full ctest at load 8 was seen on 2026-12-01). Measured here (Sapphire Rapids, 1 thread, ~20
// compile jobs beside it, ctest -j2): combined / parallel predicted 1.45-2.05 vs 1.99-2.30 measured (-29 % at
// worst), sequential / parallel -17 % to +8 %, wall times -37 % to +52 %. The fit over-prices the wide
// prefill of parallel mode under load (docs/server.md, "Latency advisor").
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "client/bench_compare.h"
#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

using nlohmann::json;

constexpr int kTokens = 24;
constexpr double kRatioTolerance = 0.5;  // a factor of 1.5
constexpr double kWallTolerance = 1.0;   // a factor of 2

int PromptTokens(int port, const std::string& content) {
  const HttpResponse r = Post(port, "/v1/chat/completions",
                              {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.Json()["usage"]["prompt_tokens"].get<int>();
}

json RunBenchCompare(int port, int repeat, const std::string& out) {
  const std::string cmd = ::lockstep::testing::LockstepBinary() +
                          " bench compare --url http://127.0.0.1:" + std::to_string(port) +
                          " --builtin --max-tokens " + std::to_string(kTokens) + " --repeat " +
                          std::to_string(repeat) + " --out " + out + " > " + out + ".log 2>&1";
  EXPECT_EQ(::lockstep::testing::RunCommand(cmd), 0) << cmd;
  std::ifstream in(out + "/result.json");
  return json::parse(in, nullptr, false);
}

// |log(predicted / measured)| within log(1 + tolerance), with a message.
bool Within(double predicted, double measured, double tolerance, const std::string& what, std::string* log) {
  const double ratio = predicted / measured;
  const bool ok = measured > 0 && std::fabs(std::log(ratio)) <= std::log(1 + tolerance);
  *log += what + ": predicted " + std::to_string(predicted) + ", measured " + std::to_string(measured) +
          " (" + std::to_string(int(std::lround((ratio - 1) * 100))) + " %)" + (ok ? "" : "  <-- outside") +
          "\n";
  return ok;
}

TEST(AdvisorAccuracyTest, PredictionsMatchAMeasuredBenchCompareRun) {
  const std::string dir = ::lockstep::testing::MakeTempDir("lockstep-advisor");
  const std::string model = dir + "/smollm2-135m-q8_0.gguf";
  ASSERT_EQ(::lockstep::testing::RunCommand(::lockstep::testing::LockstepBinary() +
                                            " make-model --shape smollm2-135m --type q8_0 -o " + model +
                                            " > /dev/null 2>&1"),
            0);
  // The advisor prices every prompt's prefill in full (it does not model prefix-cache hits yet), and bench
  // compare re-sends the same prompts every round: compare like with like, with the cache off.
  ServerProcess server(model, {"-t", "1", "--no-prefix-cache"});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::vector<std::string> questions = client::BuiltinQuestions();
  int sum = 0;
  for (const std::string& q : questions) sum += PromptTokens(server.port(), q);
  const int prompt_tokens = int(std::lround(double(sum) / double(questions.size())));
  const int combined_tokens = PromptTokens(server.port(), client::CombinedPrompt(questions));
  RunBenchCompare(server.port(), 2, dir + "/warm-up");  // two rounds: enough 5-row steps for a stable fit

  std::string log;
  bool passed = false;
  for (int attempt = 1; attempt <= 3 && !passed; ++attempt) {
    const HttpResponse r =
        Request(server.port(), "GET",
                "/advisor?questions=" + std::to_string(questions.size()) +
                    "&tokens=" + std::to_string(kTokens) + "&prompt_tokens=" + std::to_string(prompt_tokens) +
                    "&combined_prompt_tokens=" + std::to_string(combined_tokens));
    ASSERT_EQ(r.status, 200) << r.body;
    const json advice = r.Json();
    EXPECT_TRUE(advice["confident"].get<bool>()) << advice.dump();
    std::map<std::string, double> predicted;
    for (const json& m : advice["modes"]) predicted[m["name"].get<std::string>()] = m["wall_s"].get<double>();
    const json measured_json = RunBenchCompare(server.port(), 3, dir + "/run" + std::to_string(attempt));
    ASSERT_TRUE(measured_json.is_object());
    std::map<std::string, double> measured;
    for (const char* mode : {"combined", "parallel", "sequential"}) {
      measured[mode] = measured_json["modes"][mode]["median_wall_s"].get<double>();
    }
    log += "attempt " + std::to_string(attempt) + " (fit: " + advice["step_time_model"].dump() + ")\n";
    bool ok =
        Within(predicted["combined"] / predicted["parallel"], measured["combined"] / measured["parallel"],
               kRatioTolerance, "combined / parallel", &log);
    ok &=
        Within(predicted["sequential"] / predicted["parallel"], measured["sequential"] / measured["parallel"],
               kRatioTolerance, "sequential / parallel", &log);
    for (const char* mode : {"combined", "parallel", "sequential"}) {
      ok &= Within(predicted[mode], measured[mode], kWallTolerance, std::string(mode) + " wall s", &log);
    }
    // The advice itself: parallel is recommended, as it measured fastest.
    ok &= advice["recommended"] == "parallel" && measured["parallel"] < measured["combined"];
    passed = ok;
  }
  std::printf("%s", log.c_str());
  EXPECT_TRUE(passed) << log;
}

}  // namespace
}  // namespace lockstep::server::testing
