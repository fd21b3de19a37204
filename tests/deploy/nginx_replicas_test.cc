// Three replicas of stories260K behind nginx on loopback, started by deploy/run_replicas.sh: requests spread
// over all three (least_conn, counted by each replica's /metrics); with affinity one conversation's requests
// all land on one replica, whose prefix-cache hits rise while the others' stay at 0 (under least_conn the
// same turns spread over several replicas), and different conversations spread; a replica sent SIGTERM
// mid-run finishes its in-flight streams while nginx sends every other request elsewhere, so no request is
// lost or run twice. Needs nginx: skipped with a message where it is not installed, except in CI (CI installs
// it), where its absence fails.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "client/chat_client.h"
#include "client/fan_out.h"
#include "deploy_util.h"
#include "test_client.h"

namespace lockstep::deploy::testing {
namespace {

using client::ChatRequest;
using client::ChatResult;

#define LOCKSTEP_REQUIRE_NGINX_AND_MODEL()                                                               \
  do {                                                                                                   \
    if (StoriesModel().empty()) GTEST_SKIP() << "shared test data (stories260K) not found";              \
    if (NginxBinary().empty()) {                                                                         \
      if (std::getenv("CI") != nullptr)                                                                  \
        FAIL() << "nginx is not installed, but CI must run this test (scripts/install_deps.sh installs " \
                  "it)";                                                                                 \
      GTEST_SKIP() << "nginx is not installed (apt-get install nginx, or bash scripts/install_deps.sh)"; \
    }                                                                                                    \
  } while (0)

std::unique_ptr<client::OpenAiClient> ClientFor(const std::string& url) {
  client::ClientOptions options;
  options.base_url = *client::ApiBaseUrl(url);
  options.timeout_s = 120;
  auto c = client::OpenAiClient::Create(options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

ChatRequest Story(const std::string& text, int max_tokens) {
  ChatRequest r;
  r.messages = {{"user", text}};
  r.max_tokens = max_tokens;
  r.temperature = 0;
  r.ignore_eos = true;
  return r;
}

std::vector<ChatResult> RunAll(const client::OpenAiClient& c, const std::vector<ChatRequest>& requests,
                               int concurrency) {
  client::CancellationToken token;
  return client::RunFanOut(c, requests, concurrency, &token);
}

// Each replica's finished-generation count, waiting (up to 5 s) until they add up to `total`.
std::vector<double> Finished(const ReplicaSet& set, double total) {
  std::vector<double> counts;
  for (int attempt = 0; attempt < 250; ++attempt) {
    counts.clear();
    double sum = 0;
    for (int i = 0; i < set.size(); ++i) sum += counts.emplace_back(FinishedRequests(set.port(i)));
    if (sum >= total) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return counts;
}

// Each replica's prefix-cache hits (prompt tokens whose KV was reused).
std::vector<double> CacheHits(const ReplicaSet& set) {
  std::vector<double> hits;
  for (int i = 0; i < set.size(); ++i) {
    hits.push_back(server::testing::MetricValue(server::testing::Request(set.port(i), "GET", "/metrics").body,
                                                "lockstep_prefix_cache_hits_total"));
  }
  return hits;
}

// Twelve later turns of one conversation: one opening, so one X-Affinity-Key.
std::vector<ChatRequest> ConversationTurns() {
  std::vector<ChatRequest> turns;
  for (int i = 0; i < 12; ++i) {
    ChatRequest r = Story("", 8);
    r.messages = {{"system", "You tell short stories to children."},
                  {"user", "Tell me a story about a cat named Tom who lives by the sea."},
                  {"assistant", "Tom the cat lived in a small house by the sea."},
                  {"user", "What did Tom do on day " + std::to_string(i) + "?"}};
    turns.push_back(std::move(r));
  }
  return turns;
}

TEST(NginxReplicasTest, LeastConnSpreadsRequestsOverEveryReplica) {
  LOCKSTEP_REQUIRE_NGINX_AND_MODEL();
  ReplicaSet set(StoriesModel(), 3, {"--no-affinity"}, {});
  ASSERT_TRUE(set.ok()) << set.output();
  auto c = ClientFor(set.url());
  std::vector<ChatRequest> requests;
  for (int i = 0; i < 60; ++i)
    requests.push_back(Story("Story " + std::to_string(i) + ": once upon a time", 16));
  const auto results = RunAll(*c, requests, 6);
  for (const ChatResult& r : results) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto counts = Finished(set, 60);
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(counts[i], 5) << "replica " << i << " got too few of the 60 requests";
    sum += counts[i];
  }
  EXPECT_EQ(sum, 60) << "each request ran exactly once";
  std::printf("least_conn: 60 requests -> %g / %g / %g\n", counts[0], counts[1], counts[2]);

  // The control for the affinity test: without it, one conversation's turns spread too, and each replica
  // computes the conversation's opening for itself.
  const auto hits_before = CacheHits(set);
  for (const ChatResult& r : RunAll(*c, ConversationTurns(), 3))
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto after = Finished(set, 72);
  const auto hits_after = CacheHits(set);
  int replicas_used = 0;
  double hits = 0;
  for (int i = 0; i < 3; ++i) {
    replicas_used += after[i] > counts[i];
    hits += hits_after[i] - hits_before[i];
  }
  EXPECT_GE(replicas_used, 2) << "least_conn kept one conversation on one replica";
  std::printf("least_conn: 12 turns of one conversation -> %g / %g / %g, %g prefix-cache hit tokens\n",
              after[0] - counts[0], after[1] - counts[1], after[2] - counts[2], hits);
}

TEST(NginxReplicasTest, AffinityKeepsAConversationOnOneReplica) {
  LOCKSTEP_REQUIRE_NGINX_AND_MODEL();
  ReplicaSet set(StoriesModel(), 3, {}, {});
  ASSERT_TRUE(set.ok()) << set.output();
  auto c = ClientFor(set.url());
  for (const ChatResult& r : RunAll(*c, ConversationTurns(), 3))
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto after_turns = Finished(set, 12);
  const auto hits = CacheHits(set);
  int replicas_used = 0;
  double total_hits = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(after_turns[i] == 0 || after_turns[i] == 12) << "replica " << i << ": " << after_turns[i];
    replicas_used += after_turns[i] > 0;
    total_hits += hits[i];
    // The replica with the conversation reuses its opening for the later turns; the others saw nothing.
    if (after_turns[i] == 12) {
      EXPECT_GT(hits[i], 11 * 16) << "replica " << i << " served the turns without prefix-cache hits";
    } else {
      EXPECT_EQ(hits[i], 0) << "replica " << i;
    }
  }
  EXPECT_EQ(replicas_used, 1) << "one conversation went to several replicas";
  std::printf("affinity: 12 turns of one conversation -> %g / %g / %g, %g prefix-cache hit tokens\n",
              after_turns[0], after_turns[1], after_turns[2], total_hits);

  // Twelve different conversations: different keys, spread by the hash.
  std::vector<ChatRequest> others;
  for (int i = 0; i < 12; ++i) others.push_back(Story("Tell me story number " + std::to_string(i), 8));
  for (const ChatResult& r : RunAll(*c, others, 3)) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto after_all = Finished(set, 24);
  int got_others = 0;
  for (int i = 0; i < 3; ++i) got_others += after_all[i] - after_turns[i] > 0;
  EXPECT_GE(got_others, 2) << "different conversations all hashed to one replica";
  std::printf("affinity: then 12 other conversations -> %g / %g / %g\n", after_all[0] - after_turns[0],
              after_all[1] - after_turns[1], after_all[2] - after_turns[2]);
}

TEST(NginxReplicasTest, SigtermOnOneReplicaMidRunLosesNoRequest) {
  LOCKSTEP_REQUIRE_NGINX_AND_MODEL();
  ReplicaSet set(StoriesModel(), 3, {"--no-affinity"}, {"--drain-grace", "0.3"});
  ASSERT_TRUE(set.ok()) << set.output();
  auto c = ClientFor(set.url());
  constexpr int kRequests = 90;
  constexpr int kTokens = 64;
  std::vector<ChatRequest> requests;
  for (int i = 0; i < kRequests; ++i) requests.push_back(Story("Story " + std::to_string(i), kTokens));
  std::vector<ChatResult> results;
  std::thread load([&] { results = RunAll(*c, requests, 9); });
  // SIGTERM replica 1 mid-run: once it has finished a few requests and while it is generating others.
  const int victim = 1;
  double running = 0, finished_before = 0;
  for (int i = 0; i < 5000 && (running < 1 || finished_before < 5); ++i) {
    const std::string m = server::testing::Request(set.port(victim), "GET", "/metrics").body;
    running = server::testing::MetricValue(m, "lockstep_num_requests_running");
    finished_before = server::testing::MetricValue(m, "lockstep_e2e_request_latency_seconds_count");
    if (running < 1 || finished_before < 5) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(set.pid(victim), SIGTERM);
  load.join();
  ASSERT_GE(running, 1) << "replica " << victim << " was not generating when signalled";
  ASSERT_GE(finished_before, 5) << "replica " << victim << " finished too few requests before the signal";

  ASSERT_EQ(results.size(), static_cast<size_t>(kRequests));
  for (const ChatResult& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.completion_tokens, kTokens);
  }
  // The replica drained: its in-flight requests finished (none cancelled) and it stopped.
  for (int i = 0; i < 3000 && kill(set.pid(victim), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string log = set.replica_log(victim);
  EXPECT_NE(log.find("lockstep: stopped"), std::string::npos) << log;
  EXPECT_EQ(log.find("cancelling"), std::string::npos) << log;

  // nginx's log: every request answered 200 once, by exactly one replica; those that met the stopped replica
  // after it refused were passed on to another.
  auto served = set.AccessLog();
  for (int i = 0; i < 100 && served.size() < static_cast<size_t>(kRequests); ++i) {  // nginx logs at the end
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    served = set.AccessLog();
  }
  ASSERT_EQ(served.size(), static_cast<size_t>(kRequests));
  std::map<std::string, int> by_last;
  int passed_on = 0;
  for (const auto& s : served) {
    EXPECT_EQ(s.status, "200");
    by_last[s.upstreams.back()]++;
    passed_on += s.upstreams.size() > 1;
  }
  const std::string victim_addr = "127.0.0.1:" + std::to_string(set.port(victim));
  const auto survivors = Finished(set, 0);
  EXPECT_EQ(survivors[victim], -1) << "the stopped replica still answers";
  EXPECT_EQ(survivors[0] + survivors[2] + by_last[victim_addr], kRequests)
      << "a request ran twice or not at all";
  EXPECT_GE(by_last[victim_addr], finished_before + 1)
      << "the in-flight requests on the replica finished there";
  std::printf(
      "SIGTERM mid-run: %d requests, %d served by the stopped replica (%g before the signal), %d passed on "
      "to another replica by nginx, survivors %g + %g\n",
      kRequests, by_last[victim_addr], finished_before, passed_on, survivors[0], survivors[2]);
}

}  // namespace
}  // namespace lockstep::deploy::testing
