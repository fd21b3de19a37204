// URL parsing, the SSE parser (every split of a stream gives the same events) and the retry policy.
#include <gtest/gtest.h>

#include <set>

#include "client/chat_client.h"
#include "client/retry.h"
#include "client/sse_parser.h"
#include "client/url.h"

namespace lockstep::client {
namespace {

TEST(UrlTest, ParsesSchemesHostsPortsAndPaths) {
  auto u = ParseUrl("http://127.0.0.1:8080/v1");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path, "/v1");
  auto h = ParseUrl("HTTPS://api.example.com");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->port, 443);
  EXPECT_EQ(h->path, "/");
  EXPECT_TRUE(h->tls());
  EXPECT_EQ(h->ToString(), "https://api.example.com/");
  auto v6 = ParseUrl("http://[::1]:9000/x?y=1#frag");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->HostHeader(), "[::1]:9000");
  EXPECT_EQ(v6->path, "/x?y=1");
}

TEST(UrlTest, RejectsBadUrlsWithMessages) {
  EXPECT_FALSE(ParseUrl("localhost:8080").ok());
  EXPECT_FALSE(ParseUrl("ftp://x").ok());
  EXPECT_FALSE(ParseUrl("http://").ok());
  EXPECT_FALSE(ParseUrl("http://host:99999").ok());
  EXPECT_FALSE(ParseUrl("http://host:abc/").ok());
  auto bad = ParseUrl("http://host:0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad port"), std::string::npos);
}

TEST(UrlTest, WithPathAndApiBaseAndLocation) {
  auto u = *ParseUrl("http://h:1/v1/");
  EXPECT_EQ(u.WithPath("/chat/completions").path, "/v1/chat/completions");
  EXPECT_EQ(ApiBaseUrl("http://h:1")->path, "/v1");
  EXPECT_EQ(ApiBaseUrl("http://h:1/api/v1")->path, "/api/v1");
  for (const char* api : {"http://h:1", "http://h:1/v1", "http://h:1/v1/", "http://h:1/v1?x=1"}) {
    EXPECT_EQ(ServerRoot(*ParseUrl(api)).path, "/") << api;
  }
  EXPECT_EQ(ServerRoot(*ParseUrl("http://h:1/api/v1/")).path, "/api");
  auto base = *ParseUrl("https://huggingface.co/a/b/resolve/main/f.gguf");
  EXPECT_EQ(ResolveLocation(base, "/cdn/x")->ToString(), "https://huggingface.co/cdn/x");
  EXPECT_EQ(ResolveLocation(base, "https://cdn.example/y")->host, "cdn.example");
  EXPECT_EQ(ResolveLocation(base, "//cdn2.example/z")->ToString(), "https://cdn2.example/z");
  EXPECT_EQ(ResolveLocation(base, "g.gguf")->path, "/a/b/resolve/main/g.gguf");
}

std::vector<SseEvent> ParseInPieces(const std::string& stream, size_t piece) {
  SseParser parser;
  std::vector<SseEvent> all;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (auto& e : parser.Feed(std::string_view(stream).substr(i, piece))) all.push_back(e);
  }
  return all;
}

TEST(SseParserTest, EventsAreTheSameForEverySplit) {
  const std::string stream =
      ": keep-alive comment\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: update\n"
      "id: 7\n"
      "data: line one\n"
      "data:line two\n"
      "\n"
      "data\n\n"
      "retry: 100\n\n"
      "data: [DONE]\r\r";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    auto events = ParseInPieces(stream, piece);
    ASSERT_EQ(events.size(), 4u) << "piece size " << piece;
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[0].event, "");
    EXPECT_EQ(events[1].event, "update");
    EXPECT_EQ(events[1].id, "7");
    EXPECT_EQ(events[1].data, "line one\nline two");
    EXPECT_EQ(events[2].data, "");  // "data" with no colon: an empty data field
    EXPECT_EQ(events[3].data, "[DONE]");
  }
}

TEST(SseParserTest, IncompleteEventIsHeldAndCounted) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("data: partial").empty());
  EXPECT_EQ(parser.buffered_bytes(), 13u);
  auto events = parser.Feed("\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "partial");
}

TEST(RetryTest, StatusesAndRetryAfter) {
  for (int s : {408, 429, 502, 503, 504}) EXPECT_TRUE(IsRetryableStatus(s)) << s;
  for (int s : {200, 400, 401, 404, 500}) EXPECT_FALSE(IsRetryableStatus(s)) << s;
  EXPECT_EQ(ParseRetryAfter(" 3 "), 3.0);
  EXPECT_FALSE(ParseRetryAfter("").has_value());
  EXPECT_FALSE(ParseRetryAfter("soon").has_value());
  const auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now), 30.0);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now), 0.0);
}

TEST(RetryTest, BackoffGrowsWithJitterAndHonoursRetryAfter) {
  RetryPolicy policy;
  policy.base_delay_s = 1;
  policy.max_delay_s = 8;
  policy.max_retry_after_s = 10;
  std::mt19937_64 rng(1);
  for (int retry = 0; retry < 6; ++retry) {
    const double cap = std::min(8.0, std::ldexp(1.0, retry));
    for (int i = 0; i < 50; ++i) {
      const double d = RetryDelaySeconds(policy, retry, std::nullopt, rng);
      EXPECT_GE(d, cap / 2);
      EXPECT_LE(d, cap);
    }
  }
  // A Retry-After is a lower bound; clients told the same one spread out over the next half of it.
  std::set<double> seen;
  for (int i = 0; i < 100; ++i) {
    const double d = RetryDelaySeconds(policy, 0, 4.0, rng);
    EXPECT_GE(d, 4.0);
    EXPECT_LE(d, 6.0);
    seen.insert(d);
  }
  EXPECT_GT(seen.size(), 90u) << "no jitter";
  const double clamped = RetryDelaySeconds(policy, 0, 100.0, rng);
  EXPECT_GE(clamped, 10.0);
  EXPECT_LE(clamped, 15.0);
  const double immediate = RetryDelaySeconds(policy, 0, 0.0, rng);
  EXPECT_GE(immediate, 0.0);
  EXPECT_LE(immediate, 0.5);
}

}  // namespace
}  // namespace lockstep::client
