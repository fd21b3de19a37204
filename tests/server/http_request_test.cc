// The request-parsing steps of a connection, driven from a buffer (http_request.h): pipelined requests,
// ambiguous framing (request smuggling) and a missing, repeated or invalid Host answered 400, limits 413/431,
// unknown
// transfer codings 501.
#include "server/http_request.h"

#include <gtest/gtest.h>

namespace lockstep::server {
namespace {

HttpLimits Limits() {
  HttpLimits limits;
  limits.max_body_bytes = 1000;
  limits.max_header_bytes = 2000;
  return limits;
}

TEST(HttpRequestTest, ParsesPipelinedRequests) {
  const auto out = ParseRequests(
      "GET /health?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
      "POST /generate HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      Limits());
  ASSERT_EQ(out.requests.size(), 3u);
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.incomplete);
  EXPECT_EQ(out.requests[0].method, "GET");
  EXPECT_EQ(out.requests[0].path, "/health");
  EXPECT_EQ(out.requests[0].target, "/health?x=1");
  EXPECT_EQ(out.requests[0].Header("host"), "a");
  EXPECT_EQ(out.requests[1].body, "{}");
  EXPECT_EQ(out.requests[2].body, "abc");
}

TEST(HttpRequestTest, AnIncompleteRequestIsNotAnError) {
  const auto out = ParseRequests("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc", Limits());
  EXPECT_TRUE(out.requests.empty());
  EXPECT_FALSE(out.error);
  EXPECT_TRUE(out.incomplete);
}

TEST(HttpRequestTest, AmbiguousFramingIs400) {
  const std::vector<std::string> smuggling = {
      // Content-Length and Transfer-Encoding both (in either order).
      "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
      // Two Content-Lengths, different or equal, and a list.
      "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
      "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd",
      "POST / HTTP/1.1\r\nContent-Length: 4, 4\r\n\r\nabcd",
      // Negative, signed, hexadecimal or empty lengths.
      "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: +4\r\n\r\nabcd",
      "POST / HTTP/1.1\r\nContent-Length: 0x4\r\n\r\nabcd",
      "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
      // Transfer-Encoding twice, or in HTTP/1.0.
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      // Malformed chunk sizes and header lines.
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length : 4\r\n\r\nabcd",
      "GET / HTTP/1.1\r\n folded: line\r\n\r\n",
      "GET /\x01 HTTP/1.1\r\n\r\n",
  };
  for (const std::string& bytes : smuggling) {
    const auto out = ParseRequests(bytes, Limits());
    ASSERT_TRUE(out.error.has_value()) << bytes;
    EXPECT_EQ(out.error->status, 400) << bytes << ": " << out.error->message;
    EXPECT_TRUE(out.requests.empty()) << bytes;
  }
}

TEST(HttpRequestTest, LimitsAndUnknownCodings) {
  const auto big = ParseRequests("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", Limits());
  ASSERT_TRUE(big.error);
  EXPECT_EQ(big.error->status, 413);
  EXPECT_EQ(big.error->code, "body_too_large");
  const std::string chunk(600, 'x');
  const auto big_chunked =
      ParseRequests("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n" + chunk +
                        "\r\n258\r\n" + chunk + "\r\n0\r\n\r\n",
                    Limits());
  ASSERT_TRUE(big_chunked.error);
  EXPECT_EQ(big_chunked.error->status, 413);
  const auto headers = ParseRequests("GET / HTTP/1.1\r\nX: " + std::string(3000, 'a') + "\r\n\r\n", Limits());
  ASSERT_TRUE(headers.error);
  EXPECT_EQ(headers.error->status, 431);
  const auto gzip = ParseRequests("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", Limits());
  ASSERT_TRUE(gzip.error);
  EXPECT_EQ(gzip.error->status, 501);
  const auto chunked_gzip =
      ParseRequests("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", Limits());
  ASSERT_TRUE(chunked_gzip.error);
  EXPECT_EQ(chunked_gzip.error->status, 501);
  const auto version = ParseRequests("GET / HTTP/9.9\r\n\r\n", Limits());
  ASSERT_TRUE(version.error);
  EXPECT_EQ(version.error->status, 505);
  // Beast frames a list by its last coding; a coding before "chunked" would pass on compressed bytes.
  for (const char* codings : {"gzip, chunked", "identity,chunked", "chunked;x=1"}) {
    const auto listed = ParseRequests(
        std::string("POST / HTTP/1.1\r\nTransfer-Encoding: ") + codings + "\r\n\r\n0\r\n\r\n", Limits());
    ASSERT_TRUE(listed.error) << codings;
    EXPECT_EQ(listed.error->status, 501) << codings;
  }
  const auto cased =
      ParseRequests("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  Chunked \r\n\r\n0\r\n\r\n", Limits());
  EXPECT_FALSE(cased.error);
  EXPECT_EQ(cased.requests.size(), 1u);
}

// RFC 9112 §3.2: an HTTP/1.1 request without Host, or any request with two, is answered 400.
TEST(HttpRequestTest, HostIsRequiredInHttp11AndNeverRepeated) {
  for (const std::string& bytes : {
           std::string("GET /health HTTP/1.1\r\n\r\n"),
           std::string("POST /generate HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
           std::string("GET /health HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n"),
           std::string("GET /health HTTP/1.0\r\nHost: localhost\r\nHost: evil.example\r\n\r\n"),
       }) {
    const auto out = ParseRequests(bytes, Limits());
    ASSERT_TRUE(out.error.has_value()) << bytes;
    EXPECT_EQ(out.error->status, 400) << bytes;
    EXPECT_EQ(out.error->code, "bad_request") << bytes;
    EXPECT_NE(out.error->message.find("Host"), std::string::npos) << out.error->message;
    EXPECT_TRUE(out.requests.empty()) << bytes;
  }
  // HTTP/1.0 had no Host requirement; an empty Host (a target without authority) is a Host.
  const auto accepted =
      ParseRequests("GET /health HTTP/1.0\r\n\r\nGET /health HTTP/1.1\r\nHost:\r\n\r\n", Limits());
  EXPECT_FALSE(accepted.error) << accepted.error->message;
  EXPECT_EQ(accepted.requests.size(), 2u);
}

// RFC 9112 §3.2: a Host that is not RFC 3986's host[:port] is answered 400 (it was let through, and the
// loopback Host check then read "localhost:80/x" or "localhost@evil" by its first characters).
TEST(HttpRequestTest, AnInvalidHostIs400NamingIt) {
  const std::pair<std::string, std::string> invalid[] = {
      {"a b", "byte 0x20 at offset 1 is not allowed in a host name"},
      {"localhost@evil.example", "byte 0x40 at offset 9"},
      {"localhost/x", "byte 0x2F at offset 9"},
      {"caf\xc3\xa9", "byte 0xC3 at offset 3"},
      {"a%zz", "byte 0x25 at offset 1"},
      {":8080", "the host name is empty"},
      {"localhost:80a", "the port after ':' must be digits"},
      {"localhost:80:81", "the port after ':' must be digits"},
      {"::1", "the host name is empty"},
      {"[::1", "the '[' of an IPv6 address has no ']'"},
      {"[::g]:80", "the host in [ ] is not an IPv6 address"},
      {"[127.0.0.1]", "the host in [ ] is not an IPv6 address"},
      {"[::1]x", "only :PORT may follow the ']'"},
      {"[::1]:x", "the port after ':' must be digits"},
  };
  for (const auto& [host, why] : invalid) {
    for (const char* version : {"1.1", "1.0"}) {
      const std::string bytes = "GET /health HTTP/" + std::string(version) + "\r\nHost: " + host + "\r\n\r\n";
      const auto out = ParseRequests(bytes, Limits());
      ASSERT_TRUE(out.error.has_value()) << bytes;
      EXPECT_EQ(out.error->status, 400) << bytes;
      EXPECT_EQ(out.error->code, "bad_request") << bytes;
      const std::string& message = out.error->message;
      EXPECT_EQ(message.rfind("invalid Host header '" + host + "': " + why, 0), 0u) << message;
      EXPECT_NE(message.find("; expected host[:port]"), std::string::npos) << message;
    }
  }
  const std::string long_host(300, '/');
  const auto cut = ParseRequests("GET / HTTP/1.1\r\nHost: " + long_host + "\r\n\r\n", Limits());
  ASSERT_TRUE(cut.error.has_value());
  EXPECT_LT(cut.error->message.size(), 250u) << "the value is not cut: " << cut.error->message;

  // reg-names (IPv4 addresses among them), IP literals, an empty port (RFC 3986: port = *DIGIT), spaces
  // around the value (not part of it).
  std::string valid;
  for (const char* host :
       {"localhost", "LOCALHOST:8080", "127.0.0.1:1", "my-host.example_1~", "a%41b", "!$&'()*+,;=", "[::1]",
        "[::1]:8080", "[::ffff:127.0.0.1]:1", "[v1.x:y]", "a:", "  localhost:80  "}) {
    valid += "GET /health HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n";
  }
  const auto accepted = ParseRequests(valid, Limits());
  EXPECT_FALSE(accepted.error) << accepted.error->message;
  EXPECT_EQ(accepted.requests.size(), 12u);
}

TEST(HttpRequestTest, PathsArePercentDecodedAndTakenFromAbsoluteTargets) {
  const auto out = ParseRequests(
      "GET /v1/models/org%2Fmodel%20x?y=%2F HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET http://localhost:8080/health?x=1 HTTP/1.1\r\nHost: localhost:8080\r\n\r\n"
      "GET http://localhost:8080 HTTP/1.1\r\nHost: localhost:8080\r\n\r\n"
      "GET /a%zz%4 HTTP/1.1\r\nHost: a\r\n\r\n",
      Limits());
  ASSERT_FALSE(out.error);
  ASSERT_EQ(out.requests.size(), 4u);
  EXPECT_EQ(out.requests[0].path, "/v1/models/org/model x");
  EXPECT_EQ(out.requests[0].target, "/v1/models/org%2Fmodel%20x?y=%2F");  // the query as sent
  EXPECT_EQ(out.requests[1].path, "/health");
  EXPECT_EQ(out.requests[2].path, "/");
  EXPECT_EQ(out.requests[3].path, "/a%zz%4");  // not an escape: kept
  EXPECT_EQ(PercentDecode("a+b%2b%41", /*plus_is_space=*/true), "a b+A");
  EXPECT_EQ(PercentDecode("a+b", /*plus_is_space=*/false), "a+b");
}

}  // namespace
}  // namespace lockstep::server
