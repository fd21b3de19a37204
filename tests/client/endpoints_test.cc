// The client over several endpoints: EndpointSet's choice (least in flight, turns, backoff, waiting when all
// are down), the URL file, the affinity key, and OpenAiClient against scripted servers — a refused
// connection, a connection not made in time, a host name that does not resolve in time and a 503 skipped for
// a healthy endpoint, requests spread over equal endpoints, and a stream that breaks off after content not
// re-sent.
#include "client/endpoints.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>

#include "client/affinity_key.h"
#include "client/chat_client.h"
#include "client/fan_out.h"
#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::client {
namespace {

using testing::ChatSsePieces;
using testing::ChatSseResponse;
using testing::TestHttpServer;
using testing::TestRequest;
using testing::TestResponse;

std::vector<Url> Urls(int n) {
  std::vector<Url> urls;
  for (int i = 0; i < n; ++i) urls.push_back(*ParseUrl("http://127.0.0.1:" + std::to_string(9000 + i)));
  return urls;
}

RetryPolicy FastBackoff() {
  RetryPolicy p;
  p.base_delay_s = 1;
  p.max_delay_s = 8;
  return p;
}

Clock::time_point At(double seconds) {
  return Clock::time_point{} + std::chrono::hours(1) +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

TEST(EndpointSetTest, PicksTheLeastInFlightAndTakesTurnsOnTies) {
  auto set = *EndpointSet::Create(Urls(3), FastBackoff(), 1);
  // Nothing in flight: consecutive picks rotate over all three.
  std::set<size_t> first_three;
  for (int i = 0; i < 3; ++i) first_three.insert(set->Pick({}, At(0)).index);
  EXPECT_EQ(first_three.size(), 3u);
  // Two in flight on 0, one on 1: 2 is the least loaded, whatever the rotation.
  set->Begin(0);
  set->Begin(0);
  set->Begin(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(set->Pick({}, At(0)).index, 2u);
  set->Begin(2);
  set->Begin(2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(set->Pick({}, At(0)).index, 1u);
  set->End(0);
  set->End(0);
  EXPECT_EQ(set->in_flight(0), 0);
  EXPECT_EQ(set->Pick({}, At(0)).index, 0u);
}

TEST(EndpointSetTest, PrefersEndpointsTheRequestHasNotTried) {
  auto set = *EndpointSet::Create(Urls(3), FastBackoff(), 2);
  set->Begin(1);
  set->Begin(1);  // 1 is busy, but 0 and 2 were tried by this request already
  EXPECT_EQ(set->Pick({0, 2}, At(0)).index, 1u);
  EXPECT_EQ(set->Pick({0, 1, 2}, At(0)).wait_s, 0);  // all tried: still a pick, no wait
}

TEST(EndpointSetTest, SkipsAnEndpointInBackoffUntilItEnds) {
  auto set = *EndpointSet::Create(Urls(2), FastBackoff(), 3);
  set->MarkDown(0, /*retry_after=*/10, At(0));
  EXPECT_TRUE(set->down(0, At(5)));
  for (int i = 0; i < 6; ++i) {
    const auto c = set->Pick({}, At(5));
    EXPECT_EQ(c.index, 1u);
    EXPECT_EQ(c.wait_s, 0);
  }
  set->Begin(1);
  set->Begin(1);  // busy, but 0 is still in backoff
  EXPECT_EQ(set->Pick({}, At(9.9)).index, 1u);
  EXPECT_FALSE(set->down(0, At(10.1)));
  EXPECT_EQ(set->Pick({}, At(10.1)).index, 0u);  // back, and the least loaded
  set->MarkUp(0);
  EXPECT_FALSE(set->down(0, At(0)));
}

TEST(EndpointSetTest, WhenAllAreDownWaitsForTheSoonestWithJitter) {
  auto set = *EndpointSet::Create(Urls(3), FastBackoff(), 4);
  set->MarkDown(0, 6.0, At(0));
  set->MarkDown(1, 2.0, At(0));
  set->MarkDown(2, 4.0, At(0));
  std::set<double> waits;
  for (int i = 0; i < 20; ++i) {
    const auto c = set->Pick({}, At(1));
    EXPECT_EQ(c.index, 1u);
    EXPECT_GE(c.wait_s, 1.0);  // until its backoff ends ...
    EXPECT_LE(c.wait_s, 1.5);  // ... plus up to half of that again
    waits.insert(c.wait_s);
  }
  EXPECT_GT(waits.size(), 10u);  // jittered: waiting requests do not come back together
}

TEST(EndpointSetTest, BackoffGrowsPerFailureButNotPerConcurrentReport) {
  auto set = *EndpointSet::Create(Urls(1), FastBackoff(), 5);
  // First failure: equal-jitter backoff of base 1 s: in [0.5, 1].
  set->MarkDown(0, std::nullopt, At(0));
  const double w1 = set->Pick({}, At(0)).wait_s;
  EXPECT_GE(w1, 0.5);
  EXPECT_LE(w1, 1.5);
  // Nine more requests fail at the same moment: the endpoint is already down, so no escalation.
  for (int i = 0; i < 9; ++i) set->MarkDown(0, std::nullopt, At(0.01));
  EXPECT_FALSE(set->down(0, At(1.02)));
  // Failing again once it is back counts: base * 2 = 2 s, in [1, 2].
  set->MarkDown(0, std::nullopt, At(1.1));
  EXPECT_TRUE(set->down(0, At(2.05)));
  EXPECT_FALSE(set->down(0, At(3.2)));
  set->MarkDown(0, std::nullopt, At(3.2));  // third: 4 s, in [2, 4]
  EXPECT_TRUE(set->down(0, At(5.1)));
}

TEST(EndpointSetTest, RejectsAnEmptyList) {
  auto set = EndpointSet::Create({}, FastBackoff(), 6);
  EXPECT_FALSE(set.ok());
}

TEST(UrlFileTest, ReadsUrlsSkippingCommentsAndNamesBadLines) {
  const std::string dir = ::lockstep::testing::MakeTempDir("lockstep-urls");
  {
    std::ofstream f(dir + "/ok.txt");
    f << "# replicas\n\nhttp://127.0.0.1:8001/v1\n  http://127.0.0.1:8002  # second\nhttps://h:9/v1\r\n";
  }
  auto urls = ReadUrlFile(dir + "/ok.txt");
  ASSERT_TRUE(urls.ok()) << urls.status().ToString();
  EXPECT_EQ(*urls, (std::vector<std::string>{"http://127.0.0.1:8001/v1", "http://127.0.0.1:8002",
                                             "https://h:9/v1"}));
  {
    std::ofstream f(dir + "/bad.txt");
    f << "http://127.0.0.1:8001\nlocalhost:8002\n";
  }
  auto bad = ReadUrlFile(dir + "/bad.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.txt:2"), std::string::npos) << bad.status().message();
  {
    std::ofstream f(dir + "/empty.txt");
    f << "# nothing\n";
  }
  EXPECT_FALSE(ReadUrlFile(dir + "/empty.txt").ok());
  EXPECT_FALSE(ReadUrlFile(dir + "/missing.txt").ok());
}

TEST(AffinityKeyTest, KeysAConversationByItsOpening) {
  const std::vector<ChatMessage> turn1 = {{"system", "You are terse."}, {"user", "Tell me about cats."}};
  std::vector<ChatMessage> turn2 = turn1;
  turn2.push_back({"assistant", "Cats purr."});
  turn2.push_back({"user", "And dogs?"});
  const std::vector<ChatMessage> other = {{"system", "You are terse."}, {"user", "Tell me about owls."}};
  EXPECT_EQ(AffinityKey(turn1), AffinityKey(turn2));  // every turn of one conversation: one key
  EXPECT_NE(AffinityKey(turn1), AffinityKey(other));  // same system prompt, another conversation
  EXPECT_EQ(AffinityKey(turn1).size(), 16u);
  // Role and content boundaries matter ("ab"+"c" is not "a"+"bc").
  EXPECT_NE(AffinityKey({{"user", "abc"}}), AffinityKey({{"use", "rabc"}}));
  // No user message: the whole conversation.
  EXPECT_NE(AffinityKey({{"system", "a"}}), AffinityKey({{"system", "a"}, {"assistant", "b"}}));
}

std::unique_ptr<OpenAiClient> MakeMultiClient(const std::vector<std::string>& urls, int retries = 3,
                                              double connect_timeout_s = kDefaultConnectTimeoutS,
                                              HostResolver resolver = {}) {
  ClientOptions options;
  options.connect_timeout_s = connect_timeout_s;
  options.resolver = std::move(resolver);
  options.base_url = *ApiBaseUrl(urls[0]);
  for (size_t i = 1; i < urls.size(); ++i) options.more_urls.push_back(*ApiBaseUrl(urls[i]));
  options.timeout_s = 10;
  options.retry.max_retries = retries;
  options.retry.base_delay_s = 2;  // long: a test that waited on a backoff would be slow and fail
  options.retry.max_delay_s = 4;
  auto client = OpenAiClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

ChatRequest EndpointQuestion(const std::string& text) {
  ChatRequest r;
  r.messages = {{"user", text}};
  r.max_tokens = 8;
  return r;
}

std::string ClosedPortUrl() {
  int port;
  {
    TestHttpServer gone([](const TestRequest&) { return TestResponse{}; });
    port = gone.port();
  }
  return "http://127.0.0.1:" + std::to_string(port);
}

TEST(MultiEndpointClientTest, SkipsARefusingAndADrainingEndpointAtOnce) {
  TestHttpServer draining([](const TestRequest&) {
    TestResponse r;
    r.status = 503;
    r.headers = {{"Retry-After", "30"}, {"Content-Type", "application/json"}};
    r.pieces = {R"({"error":{"message":"the server is shutting down"}})"};
    return r;
  });
  TestHttpServer healthy([](const TestRequest&) { return ChatSseResponse({"ok"}, 1); });
  const std::string refused = ClosedPortUrl();
  auto client = MakeMultiClient({refused, draining.url(), healthy.url()}, /*retries=*/0);
  const auto start = Clock::now();
  std::vector<ChatRequest> requests(6, EndpointQuestion("x"));
  CancellationToken token;
  auto results = RunFanOut(*client, requests, 1, &token);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_EQ(results.size(), 6u);
  for (const ChatResult& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.content, "ok");
    EXPECT_EQ(r.endpoint, healthy.url() + "/v1");
  }
  // The refused and draining endpoints were each tried once, then left alone (in backoff for 30 s).
  EXPECT_LE(draining.requests(), 1);
  EXPECT_EQ(healthy.requests(), 6);
  EXPECT_TRUE(client->endpoints().down(1));
  EXPECT_LT(elapsed, 1.5);  // moved on at once: no backoff wait (base 2 s) while a healthy endpoint was up
}

// Regression: an endpoint that never completed the TCP handshake (a black-holed address, a host whose accept
// queue is full) failed the request after the connect timeout with kDeadlineExceeded, never retried: the
// healthy endpoint was not tried and the next request waited on the same endpoint again. Now it is treated as
// a refused connection: the request moves on to the healthy endpoint and the silent one is put in backoff.
TEST(MultiEndpointClientTest, AConnectionNotMadeInTimeMovesOnAndBacksOff) {
  testing::BlackHoleListener black_hole;
  TestHttpServer healthy([](const TestRequest&) { return ChatSseResponse({"ok"}, 1); });
  auto client = MakeMultiClient({black_hole.url(), healthy.url()}, /*retries=*/0, /*connect_timeout_s=*/0.3);
  auto first = RunBlocking(client->Chat(EndpointQuestion("x"), nullptr));  // a tie: the first endpoint
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_EQ(first.attempts, 2);
  EXPECT_EQ(first.endpoint, healthy.url() + "/v1");
  EXPECT_TRUE(client->endpoints().down(0));
  const auto start = Clock::now();
  auto second = RunBlocking(client->Chat(EndpointQuestion("x"), nullptr));
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_EQ(second.attempts, 1);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 0.25) << "waited on the silent one";
  EXPECT_EQ(healthy.requests(), 2);
}

// Regression: a replica whose host name did not resolve (its resolver hangs) held the request for the
// resolver's own timeout; and as Asio runs look-ups one after another, the healthy replica's look-up waited
// behind it. Now the look-up is under the connect timeout, on a thread of its own: the request moves on to
// the healthy replica and the other one is put in backoff.
TEST(MultiEndpointClientTest, AHostLookupThatHangsMovesOnAndBacksOff) {
  testing::HangingResolver dns("hangs.test");
  TestHttpServer healthy([](const TestRequest&) { return ChatSseResponse({"ok"}, 1); });
  const std::string port = std::to_string(healthy.port());
  auto client = MakeMultiClient({"http://hangs.test:" + port, "http://healthy.test:" + port}, /*retries=*/0,
                                /*connect_timeout_s=*/0.3, dns.resolver());
  const auto start = Clock::now();
  auto result = RunBlocking(client->Chat(EndpointQuestion("x"), nullptr));  // a tie: the first endpoint
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5) << "waited for the resolver";
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.attempts, 2);
  EXPECT_EQ(result.endpoint, "http://healthy.test:" + port + "/v1");
  EXPECT_TRUE(client->endpoints().down(0));
  EXPECT_EQ(dns.lookups(), 2);
  EXPECT_EQ(healthy.requests(), 1);
}

// The model list (asked before the requests by ask and bench) puts an endpoint it could not reach in
// backoff, as a chat request does: the requests that follow do not wait on it once more.
TEST(MultiEndpointClientTest, TheModelListPutsAnEndpointNotReachedInBackoff) {
  testing::BlackHoleListener black_hole;
  TestHttpServer healthy([](const TestRequest& request) {
    return request.target == "/v1/models" ? testing::ModelListResponse("m") : ChatSseResponse({"ok"}, 1);
  });
  auto client = MakeMultiClient({black_hole.url(), healthy.url()}, /*retries=*/0, /*connect_timeout_s=*/0.3);
  auto models = RunBlocking(client->ListModels(nullptr));
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  EXPECT_EQ(*models, std::vector<std::string>{"m"});
  EXPECT_TRUE(client->endpoints().down(0));
  EXPECT_FALSE(client->endpoints().down(1));
  auto result = RunBlocking(client->Chat(EndpointQuestion("x"), nullptr));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.attempts, 1);
}

TEST(MultiEndpointClientTest, SpreadsConcurrentRequestsOverEqualEndpoints) {
  auto slow = [](const TestRequest&) { return ChatSseResponse({"a", "b"}, 2, /*delay_ms=*/150); };
  TestHttpServer a(slow), b(slow), c(slow);
  auto client = MakeMultiClient({a.url(), b.url(), c.url()});
  std::vector<ChatRequest> requests(9, EndpointQuestion("x"));
  CancellationToken token;
  auto results = RunFanOut(*client, requests, 9, &token);
  for (const ChatResult& r : results) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(a.requests(), 3);
  EXPECT_EQ(b.requests(), 3);
  EXPECT_EQ(c.requests(), 3);
  // Each request carried the affinity key of its conversation.
  const auto seen = a.seen();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].headers.at("x-affinity-key"), AffinityKey({{"user", "x"}}));
}

TEST(MultiEndpointClientTest, AStreamThatBreaksOffIsNotResent) {
  TestHttpServer breaking([](const TestRequest&) {
    TestResponse r = ChatSseResponse({"par", "tial", "never"});
    r.pieces.resize(3);  // role chunk and two content chunks, then the connection closes
    r.break_off = true;
    return r;
  });
  TestHttpServer healthy([](const TestRequest&) { return ChatSseResponse({"ok"}, 1); });
  auto client = MakeMultiClient({breaking.url(), healthy.url()});
  // Make the breaking endpoint the first pick: the healthy one is busier.
  client->endpoints().Begin(1);
  auto result = RunBlocking(client->Chat(EndpointQuestion("x"), nullptr));
  client->endpoints().End(1);
  EXPECT_FALSE(result.status.ok());
  EXPECT_EQ(result.content, "partial");  // what had streamed is kept and reported
  EXPECT_NE(result.status.message().find("not re-sent"), std::string::npos) << result.status.message();
  EXPECT_EQ(result.attempts, 1);
  EXPECT_EQ(healthy.requests(), 0);
  EXPECT_EQ(breaking.requests(), 1);
}

}  // namespace
}  // namespace lockstep::client
