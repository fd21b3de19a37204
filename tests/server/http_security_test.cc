// Who may talk to the server: the API key (compared in constant time), Origin / CORS (--allowed-origins),
// the Host check of a loopback server (DNS rebinding), and request smuggling answered 400 — as RequestGuard
// unit tests and as raw HTTP against a running `lockstep serve`.
#include <gtest/gtest.h>

#include "base/excerpt.h"
#include "e2e_util.h"
#include "server/request_guard.h"

namespace lockstep::server {
namespace {

HttpRequest Req(const std::string& method, std::vector<std::pair<std::string, std::string>> headers) {
  HttpRequest r;
  r.method = method;
  r.target = r.path = "/v1/completions";
  r.headers = std::move(headers);
  return r;
}

TEST(RequestGuardTest, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secret2"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secre"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(RequestGuardTest, ApiKey) {
  RequestGuard guard({.api_key = "k3y", .allowed_origins = {}, .loopback_only = true});
  EXPECT_FALSE(guard.Check(Req("POST", {{"authorization", "Bearer k3y"}}), true).error);
  EXPECT_FALSE(guard.Check(Req("POST", {{"x-api-key", "k3y"}}), true).error);
  for (const char* wrong : {"Bearer k3", "Bearer k3y ", "Bearer K3Y", "Basic k3y", "k3y"}) {
    const auto v = guard.Check(Req("POST", {{"authorization", wrong}}), true);
    ASSERT_TRUE(v.error) << wrong;
    EXPECT_EQ(v.error->status.code(), StatusCode::kUnauthenticated);
  }
  EXPECT_FALSE(guard.Check(Req("GET", {}), /*needs_key=*/false).error);
}

TEST(RequestGuardTest, OriginsAndHosts) {
  RequestGuard guard({.api_key = "", .allowed_origins = {"https://app.example.com"}, .loopback_only = true});
  // No Origin (curl, SDKs): allowed, no CORS headers.
  auto v = guard.Check(Req("POST", {{"host", "127.0.0.1:8080"}}), true);
  EXPECT_FALSE(v.error);
  EXPECT_TRUE(v.cors_headers.empty());
  // The server's own origin (its dashboard) and a listed one: allowed, with CORS headers.
  v = guard.Check(Req("POST", {{"host", "127.0.0.1:8080"}, {"origin", "http://127.0.0.1:8080"}}), true);
  EXPECT_FALSE(v.error);
  v = guard.Check(Req("POST", {{"host", "localhost:8080"}, {"origin", "https://app.example.com"}}), true);
  ASSERT_FALSE(v.error);
  ASSERT_FALSE(v.cors_headers.empty());
  EXPECT_EQ(v.cors_headers[0],
            (std::pair<std::string, std::string>{"Access-Control-Allow-Origin", "https://app.example.com"}));
  // Another page: refused, so it cannot even POST blind.
  v = guard.Check(Req("POST", {{"host", "127.0.0.1:8080"}, {"origin", "https://evil.example"}}), true);
  ASSERT_TRUE(v.error);
  EXPECT_EQ(v.error->http_status, 403);
  v = guard.Check(Req("POST", {{"host", "127.0.0.1:8080"}, {"origin", "null"}}), true);
  EXPECT_TRUE(v.error);
  // DNS rebinding: a loopback server answers only for loopback names (and the allowed origins' hosts).
  for (const char* host : {"localhost", "localhost:1", "127.0.0.1:8080", "127.1.2.3", "[::1]:8080",
                           "a.localhost", "app.example.com"}) {
    EXPECT_FALSE(guard.Check(Req("GET", {{"host", host}}), true).error) << host;
  }
  for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil"}) {
    EXPECT_TRUE(guard.Check(Req("GET", {{"host", host}}), true).error) << host;
  }
  RequestGuard open({.api_key = "", .allowed_origins = {}, .loopback_only = false});
  EXPECT_FALSE(open.Check(Req("GET", {{"host", "evil.example"}}), true).error);
  // A preflight of an allowed origin: answered without the key.
  RequestGuard keyed({.api_key = "k", .allowed_origins = {"*"}, .loopback_only = true});
  v = keyed.Check(
      Req("OPTIONS", {{"origin", "https://x.example"}, {"access-control-request-method", "POST"}}), true);
  EXPECT_FALSE(v.error);
  EXPECT_TRUE(v.preflight);
}

TEST(RequestGuardTest, RefusedHostsAndOriginsAreQuotedAsExcerpts) {
  // A refused Host or Origin is quoted in the 403's message as an Excerpt: a few bytes, cut at a character
  // boundary (a byte cut could end inside "é", and the message's JSON would then carry U+FFFD).
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
  RequestGuard guard({.api_key = "", .allowed_origins = {}, .loopback_only = true});
  const std::string host = "x" + accents;
  auto v = guard.Check(Req("GET", {{"host", host}}), true);
  ASSERT_TRUE(v.error);
  EXPECT_EQ(v.error->http_status, 403);
  EXPECT_NE(v.error->status.message().find("Host '" + Excerpt(host) + "'"), std::string::npos)
      << v.error->status.message();
  const std::string origin = "https://x" + accents;
  v = guard.Check(Req("GET", {{"host", "localhost"}, {"origin", origin}}), true);
  ASSERT_TRUE(v.error);
  EXPECT_NE(v.error->status.message().find("Origin '" + Excerpt(origin) + "'"), std::string::npos)
      << v.error->status.message();
}

}  // namespace

namespace testing {
namespace {

TEST(HttpSecurityTest, CorsHostAndKeyOnARunningServer) {
  ServerProcess server(TinyModel(),
                       {"-t", "1", "--api-key", "sekret", "--allowed-origins", "https://app.example.com"});
  ASSERT_TRUE(server.ok()) << server.log();
  const int port = server.port();
  const std::string body = R"({"prompt":"hi","max_tokens":2})";
  const std::map<std::string, std::string> key = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(Request(port, "POST", "/v1/completions", body, key).status, 200);
  EXPECT_EQ(Request(port, "POST", "/v1/completions", body, {{"Authorization", "Bearer sekreT"}}).status, 401);
  // A blind cross-origin POST is refused before it runs.
  auto r = Request(port, "POST", "/v1/completions", body,
                   {{"Authorization", "Bearer sekret"}, {"Origin", "https://evil.example"}});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.Json()["error"]["code"], "permission_denied");
  r = Request(port, "POST", "/v1/completions", body,
              {{"Authorization", "Bearer sekret"}, {"Origin", "https://app.example.com"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["access-control-allow-origin"], "https://app.example.com");
  r = Request(port, "OPTIONS", "/v1/completions", "",
              {{"Origin", "https://app.example.com"},
               {"Access-Control-Request-Method", "POST"},
               {"Access-Control-Request-Headers", "authorization, content-type"}});
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.headers["access-control-allow-origin"], "https://app.example.com");
  EXPECT_NE(r.headers["access-control-allow-methods"].find("POST"), std::string::npos);
  // DNS rebinding: Host names another site.
  const HttpResponse rebound =
      RawRequest(port,
                 "GET /v1/models HTTP/1.1\r\nHost: evil.example:8080\r\nAuthorization: "
                 "Bearer sekret\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(rebound.status, 403) << rebound.body;
  EXPECT_EQ(Request(port, "GET", "/health").status, 200);  // no key needed
}

TEST(HttpSecurityTest, SmugglingAttemptsGet400NotAClosedSocket) {
  ServerProcess server(TinyModel(), {"-t", "1"});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  const std::string body = R"({"prompt":"hi","max_tokens":2})";
  const std::string n = std::to_string(body.size());
  for (const std::string& request : {
           head + "Content-Length: " + n + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
           head + "Transfer-Encoding: chunked\r\nContent-Length: " + n + "\r\n\r\n0\r\n\r\n",
           head + "Content-Length: " + n + "\r\nContent-Length: 3\r\n\r\n" + body,
           head + "Content-Length: " + n + "\r\nContent-Length: " + n + "\r\n\r\n" + body,
           head + "Content-Length: -1\r\n\r\n" + body,
           head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
       }) {
    HttpResponse r = RawRequest(server.port(), request);
    EXPECT_EQ(r.status, 400) << request;
    EXPECT_EQ(r.headers["connection"], "close") << request;
    EXPECT_EQ(r.Json()["error"]["code"], "bad_request") << r.body;
  }
  EXPECT_EQ(RawRequest(server.port(), head + "Transfer-Encoding: gzip\r\n\r\n").status, 501);
  EXPECT_EQ(Request(server.port(), "GET", "/health").status, 200);
}

}  // namespace
}  // namespace testing
}  // namespace lockstep::server
