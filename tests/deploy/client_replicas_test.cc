// The client spreading over three replicas with no balancer in between (`lockstep bench serve --url-file`):
// requests land on every replica, and when one replica is sent SIGTERM mid-run the client moves what has not
// started there to the others (connection refused after the drain grace), its in-flight streams finish, and
// the benchmark completes every request. Runs wherever the shared test data is (no nginx needed).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "deploy_util.h"
#include "e2e_util.h"
#include "testing/testdata.h"

namespace lockstep::deploy::testing {
namespace {

using server::testing::ServerProcess;

TEST(ClientReplicasTest, BenchOverAUrlFileSurvivesASigtermMidRun) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  const std::string dir = ::lockstep::testing::MakeTempDir("lockstep-client-replicas");
  {
    std::ofstream urls(dir + "/urls.txt");
    urls << "# three replicas\n";
    for (int i = 0; i < 3; ++i) {
      replicas.push_back(std::make_unique<ServerProcess>(
          StoriesModel(), std::vector<std::string>{"-t", "1", "--drain-grace", "0.3"}));
      ASSERT_TRUE(replicas.back()->ok()) << replicas.back()->log();
      urls << "http://127.0.0.1:" << replicas.back()->port() << "/v1\n";
    }
  }
  constexpr int kRequests = 90;
  const std::string command =
      ::lockstep::testing::LockstepBinary() + " bench serve --url-file " + dir +
      "/urls.txt --requests 90 --concurrency 9 --prompt-len 8 --output-len 48 --warmup 0 "
      "--out " +
      dir + "/bench > " + dir + "/bench.log 2>&1";
  int rc = -1;
  std::thread bench([&] { rc = ::lockstep::testing::RunCommand(command); });
  ServerProcess& victim = *replicas[1];
  // Mid-run: once replica 1 has finished a few requests and while it is generating others.
  double running = 0, finished = 0;
  for (int i = 0; i < 5000 && (running < 1 || finished < 5); ++i) {
    const std::string m = server::testing::Request(victim.port(), "GET", "/metrics").body;
    running = server::testing::MetricValue(m, "lockstep_num_requests_running");
    finished = server::testing::MetricValue(m, "lockstep_e2e_request_latency_seconds_count");
    if (running < 1 || finished < 5) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  victim.Signal(SIGTERM);
  bench.join();
  ASSERT_GE(running, 1) << "replica 1 was not generating when signalled";
  ASSERT_GE(finished, 5) << "replica 1 finished too few requests before the signal";
  EXPECT_EQ(rc, 0) << ReadFile(dir + "/bench.log");
  EXPECT_EQ(victim.Wait(), 0) << victim.log();
  EXPECT_EQ(victim.log().find("cancelling"), std::string::npos) << victim.log();

  const auto result = nlohmann::json::parse(ReadFile(dir + "/bench/result.json"), nullptr, false);
  ASSERT_TRUE(result.is_object()) << ReadFile(dir + "/bench.log");
  EXPECT_EQ(result["completed"], kRequests);
  EXPECT_EQ(result["failed"], 0);
  const auto& by_endpoint = result["completed_by_endpoint"];
  ASSERT_EQ(by_endpoint.size(), 3u) << by_endpoint.dump();  // every replica served some
  int sum = 0;
  for (const auto& [url, n] : by_endpoint.items()) sum += n.get<int>();
  EXPECT_EQ(sum, kRequests);
  // The survivors ran exactly what the client says they served: nothing twice.
  for (int i : {0, 2}) {
    const std::string url = "http://127.0.0.1:" + std::to_string(replicas[i]->port()) + "/v1";
    EXPECT_EQ(FinishedRequests(replicas[i]->port()), by_endpoint.value(url, -1)) << url;
  }
  std::printf("client over 3 URLs, SIGTERM mid-run: %s\n", by_endpoint.dump().c_str());
}

}  // namespace
}  // namespace lockstep::deploy::testing
