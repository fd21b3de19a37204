// The chat client against the scripted local server: streaming, usage vs counted chunks, retries with
// Retry-After, non-retryable errors, timeouts, cancellation of a whole fan-out, and https verification.
#include "client/chat_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "client/fan_out.h"
#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::client {
namespace {

using testing::ChatSseResponse;
using testing::TestHttpServer;
using testing::TestRequest;
using testing::TestResponse;

std::unique_ptr<OpenAiClient> MakeClient(const std::string& url, double timeout_s = 10, int retries = 3,
                                         const std::string& ca_file = "") {
  ClientOptions options;
  options.base_url = *ApiBaseUrl(url);
  options.api_key = "secret";
  options.timeout_s = timeout_s;
  options.retry.max_retries = retries;
  options.retry.base_delay_s = 0.01;
  options.retry.max_delay_s = 0.05;
  options.tls.ca_file = ca_file;
  auto client = OpenAiClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

ChatRequest Question(const std::string& text) {
  ChatRequest r;
  r.model = "m";
  r.messages = {{"user", text}};
  r.max_tokens = 16;
  return r;
}

ChatResult ChatOnce(const OpenAiClient& client, const ChatRequest& request,
                    CancellationToken* token = nullptr) {
  return RunBlocking(client.Chat(request, token));
}

TEST(ChatClientTest, StreamsContentAndUsesUsage) {
  TestHttpServer server([](const TestRequest&) { return ChatSseResponse({"Hel", "lo", "!"}, 5); });
  auto client = MakeClient(server.url());
  std::string streamed;
  auto result =
      RunBlocking(client->Chat(Question("hi"), nullptr, [&](const std::string& d) { streamed += d; }));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.content, "Hello!");
  EXPECT_EQ(streamed, "Hello!");
  EXPECT_EQ(result.completion_tokens, 5);
  EXPECT_TRUE(result.usage_reported);
  EXPECT_EQ(result.prompt_tokens, 7);
  EXPECT_EQ(result.finish_reason, "stop");
  EXPECT_EQ(result.token_times_s.size(), 3u);
  EXPECT_GT(result.ttft_s, 0);
  EXPECT_GE(result.duration_s, result.ttft_s);
  EXPECT_EQ(result.attempts, 1);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/v1/chat/completions");
  EXPECT_EQ(seen[0].headers.at("authorization"), "Bearer secret");
  auto body = nlohmann::json::parse(seen[0].body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["messages"][0]["content"], "hi");
}

TEST(ChatClientTest, CountsChunksWithoutUsage) {
  TestHttpServer server([](const TestRequest&) { return ChatSseResponse({"a", "b", "c", "d"}); });
  auto result = ChatOnce(*MakeClient(server.url()), Question("x"));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_FALSE(result.usage_reported);
  EXPECT_EQ(result.completion_tokens, 4);
}

// Regression (interop with llama.cpp's server): `--url http://host/v1/` — a trailing slash — made CountTokens
// ask /v1/tokenize (a 404), so bench serve fell back to counting words. The server root is the same with
// or without the slash.
TEST(ChatClientTest, CountTokensAsksTheServerRootWithOrWithoutATrailingSlash) {
  TestHttpServer server([](const TestRequest& req) {
    TestResponse r;
    if (req.target != "/tokenize") {
      r.status = 404;
      r.pieces = {R"({"error":{"message":"File Not Found"}})"};
      return r;
    }
    r.pieces = {R"({"tokens":[1,2,3]})"};
    return r;
  });
  for (const std::string path : {"", "/", "/v1", "/v1/", "/v1//"}) {
    auto count = RunBlocking(MakeClient(server.url() + path)->CountTokens("a b c", nullptr));
    ASSERT_TRUE(count.ok()) << path << ": " << count.status().ToString();
    EXPECT_EQ(*count, 3) << path;
  }
  for (const auto& req : server.seen()) EXPECT_EQ(req.target, "/tokenize");
}

// Regression (interop: a server killed mid-stream): a broken stream reported completion_tokens 0 beside the
// text it had streamed; the chunk count was taken only when the response completed.
TEST(ChatClientTest, ABrokenStreamCountsTheChunksThatArrived) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r = ChatSseResponse({"a", "b", "c", "d"});
    r.pieces.resize(3);  // the role chunk, "a" and "b"; then the connection closes without the last chunk
    r.break_off = true;
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url()), Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kUnavailable) << result.status.ToString();
  EXPECT_NE(result.status.message().find("closed the connection"), std::string::npos)
      << result.status.message();
  EXPECT_NE(result.status.message().find("not re-sent"), std::string::npos) << result.status.message();
  EXPECT_EQ(result.content, "ab");
  EXPECT_FALSE(result.usage_reported);
  EXPECT_EQ(result.completion_tokens, 2);
  EXPECT_EQ(result.attempts, 1);
}

TEST(ChatClientTest, AcceptsANonStreamedJsonAnswer) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.headers = {{"Content-Type", "application/json"}};
    r.pieces = {
        R"({"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"length"}],
                  "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})"};
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url()), Question("x"));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.content, "whole");
  EXPECT_EQ(result.completion_tokens, 2);
  EXPECT_EQ(result.finish_reason, "length");
}

TEST(ChatClientTest, Retries429And503HonouringRetryAfterThenSucceeds) {
  std::atomic<int> calls{0};
  TestHttpServer server([&](const TestRequest&) {
    const int n = calls++;
    TestResponse r;
    if (n == 0) {
      r.status = 429;
      r.headers = {{"Retry-After", "0"}, {"Content-Type", "application/json"}};
      r.pieces = {R"({"error":{"message":"slow down","type":"rate_limit"}})"};
      return r;
    }
    if (n == 1) {
      r.status = 503;
      r.headers = {{"Retry-After", "1"}};
      r.pieces = {"busy"};
      return r;
    }
    return ChatSseResponse({"ok"}, 1);
  });
  auto client = MakeClient(server.url());
  const auto start = Clock::now();
  auto result = ChatOnce(*client, Question("x"));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.content, "ok");
  EXPECT_EQ(result.attempts, 3);
  EXPECT_EQ(server.requests(), 3);
  // The 503's Retry-After: 1 was honoured (a lower bound only; no upper bound on a noisy machine).
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - start).count(), 0.9);
}

TEST(ChatClientTest, GivesUpAfterMaxRetriesWithTheServersMessage) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.status = 503;
    r.pieces = {R"({"error":{"message":"queue full"}})"};
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url(), 10, 2), Question("x"));
  EXPECT_FALSE(result.status.ok());
  EXPECT_EQ(result.http_status, 503);
  EXPECT_EQ(result.attempts, 3);
  EXPECT_NE(result.status.message().find("queue full"), std::string::npos) << result.status.message();
}

TEST(ChatClientTest, DoesNotRetryClientErrors) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.status = 400;
    r.pieces = {R"({"error":{"message":"'max_tokens' must be positive"}})"};
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url()), Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(result.attempts, 1);
  EXPECT_NE(result.status.message().find("max_tokens"), std::string::npos);
}

TEST(ChatClientTest, AnErrorEventIsQuotedNotDumped) {
  // A hostile (or broken) server's error event nested 200 000 levels deep: the client dumped the whole event
  // recursively to find its message, overflowing its own stack. Now it reads the message two levels down,
  // or quotes an Excerpt of the event's text.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& event : {R"({"error":)" + deep + "}", R"({"error":{"message":)" + deep + "}}"}) {
    TestHttpServer server([&](const TestRequest&) {
      TestResponse r;
      r.headers = {{"Content-Type", "text/event-stream"}};
      r.pieces = {"data: " + event + "\n\n"};
      r.chunked = true;
      return r;
    });
    auto result = ChatOnce(*MakeClient(server.url(), 10, 0), Question("x"));
    EXPECT_EQ(result.status.code(), StatusCode::kUnavailable);
    const std::string message = result.status.message();
    EXPECT_NE(message.find("server error mid-stream: {\"error\":"), std::string::npos)
        << message.substr(0, 300);
    EXPECT_LT(message.size(), 400u) << message.substr(0, 300);
  }
  // The usual shapes still give their message.
  TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.pieces = {"data: {\"error\":{\"message\":\"the engine failed\"}}\n\n"};
    r.chunked = true;
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url(), 10, 0), Question("x"));
  EXPECT_EQ(result.status.message(), "server error mid-stream: the engine failed");
}

TEST(ChatClientTest, RetriesConnectionErrors) {
  int port;
  {
    TestHttpServer gone([](const TestRequest&) { return TestResponse{}; });
    port = gone.port();
  }
  auto result = ChatOnce(*MakeClient("http://127.0.0.1:" + std::to_string(port), 5, 2), Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kUnavailable) << result.status.ToString();
  EXPECT_EQ(result.attempts, 3);
}

// A connection not made within the connect timeout is retried like a refused one (it was not retried at
// all), and the error names the timeout.
TEST(ChatClientTest, RetriesAConnectionNotMadeInTime) {
  testing::BlackHoleListener black_hole;
  ClientOptions options;
  options.base_url = *ApiBaseUrl(black_hole.url());
  options.connect_timeout_s = 0.2;
  options.retry.max_retries = 1;
  options.retry.base_delay_s = 0.01;
  auto client = OpenAiClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto result = ChatOnce(**client, Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kUnavailable) << result.status.ToString();
  EXPECT_EQ(result.status.message(), "cannot connect to 127.0.0.1:" + std::to_string(black_hole.port()) +
                                         ": no answer within the connect timeout of 0.2 s");
  EXPECT_EQ(result.attempts, 2);
}

// Regression: the host name look-up was not under the connect timeout: a name whose resolver did not answer
// held the request for the resolver's own timeout (here: until the test ends). Now the look-up shares the
// connect deadline, kUnavailable like a refused connection, and a cancel ends the wait at once.
TEST(ChatClientTest, AHostLookupThatHangsEndsAtTheConnectTimeout) {
  testing::HangingResolver dns("hangs.test");
  const Url url = *ParseUrl("http://hangs.test:8080/v1/models");
  const auto deadline = Clock::now() + std::chrono::seconds(600);
  auto start = Clock::now();
  auto conn = RunBlocking(HttpConnection::Connect(url, nullptr, deadline, nullptr, 0.3, dns.resolver()));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5) << "waited for the resolver";
  EXPECT_EQ(conn.status().code(), StatusCode::kUnavailable) << conn.status().ToString();
  EXPECT_EQ(conn.status().message(),
            "cannot resolve hangs.test: no answer within the connect timeout of 0.3 s");

  CancellationToken token;
  std::thread canceller([&token] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    token.Cancel();
  });
  start = Clock::now();
  conn = RunBlocking(HttpConnection::Connect(url, nullptr, deadline, &token, 30, dns.resolver()));
  canceller.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5) << "waited past the cancel";
  EXPECT_EQ(conn.status().code(), StatusCode::kCancelled) << conn.status().ToString();
  EXPECT_EQ(dns.lookups(), 2);
}

TEST(ChatClientTest, TimesOutAStalledServer) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r = ChatSseResponse({"late"});
    r.delay_before_head_ms = 20000;
    return r;
  });
  auto result = ChatOnce(*MakeClient(server.url(), 0.3, 0), Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kDeadlineExceeded) << result.status.ToString();
}

// Regression (interop with llama.cpp's server): an https URL on a plain-http port that keeps the connection
// open waited for the TLS handshake until the whole request deadline (600 s by default), then retried. Now
// connecting and the handshake have their own short deadline, a failed handshake is not retried, and the
// message says what is likely wrong.
TEST(ChatClientTest, ATlsHandshakeNobodyAnswersFailsSoonWithAHintAndNoRetry) {
  testing::SilentListener silent;
  const std::string where = "127.0.0.1:" + std::to_string(silent.port());
  ClientOptions options;
  options.base_url = *ApiBaseUrl("https://" + where);
  options.retry.max_retries = 3;
  options.retry.base_delay_s = 0.01;
  options.connect_timeout_s = 1;  // the request's timeout stays the 600 s default
  auto client = OpenAiClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto start = Clock::now();
  auto result = ChatOnce(**client, Question("x"));
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(elapsed, 60) << "waited for the request's deadline, not the connect timeout";
  EXPECT_EQ(result.status.code(), StatusCode::kDeadlineExceeded) << result.status.ToString();
  EXPECT_EQ(result.attempts, 1) << "a handshake timeout was retried";
  const std::string message = result.status.message();
  EXPECT_NE(message.find("TLS handshake with " + where + " failed"), std::string::npos) << message;
  EXPECT_NE(message.find("connect timeout of 1 s"), std::string::npos) << message;
  EXPECT_NE(message.find("does the server speak plain http? try http://" + where + "/"), std::string::npos)
      << message;
  // The model list and the token count are bounded the same way.
  auto models = RunBlocking((*client)->ListModels(nullptr));
  EXPECT_EQ(models.status().code(), StatusCode::kDeadlineExceeded) << models.status().ToString();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 120);
}

// The same mistake against a plain-http server that closes the connection on the ClientHello (lockstep's
// server answers it with a 400): one attempt, the same hint.
TEST(ChatClientTest, ATlsHandshakeWithAPlainHttpServerIsNotRetried) {
  TestHttpServer plain([](const TestRequest&) { return ChatSseResponse({"never"}); });
  const std::string where = "127.0.0.1:" + std::to_string(plain.port());
  auto result = ChatOnce(*MakeClient("https://" + where, 600, 3), Question("x"));
  EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument) << result.status.ToString();
  EXPECT_EQ(result.attempts, 1) << result.status.ToString();
  EXPECT_NE(result.status.message().find("does the server speak plain http? try http://" + where),
            std::string::npos)
      << result.status.message();
  EXPECT_EQ(plain.requests(), 0);
}

TEST(ChatClientTest, CancellationAbortsEveryRequestInFlight) {
  std::atomic<int> started{0};
  TestHttpServer server([&](const TestRequest&) {
    ++started;
    TestResponse r =
        ChatSseResponse({"a", "b", "c"}, -1, 20000);  // "a" now, the rest never (within the test)
    r.pieces[1] = r.pieces[0] + r.pieces[1];
    r.pieces.erase(r.pieces.begin());
    return r;
  });
  auto client = MakeClient(server.url(), 60, 3);
  std::vector<ChatRequest> requests(4, Question("x"));
  CancellationToken token;
  std::atomic<int> deltas{0};
  FanOutCallbacks callbacks;
  callbacks.on_delta = [&](size_t, const std::string&) {
    if (++deltas == 4) token.Cancel();  // all four are streaming: cancel them all
  };
  auto results = RunFanOut(*client, requests, 0, &token, callbacks);
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status.code(), StatusCode::kCancelled) << r.status.ToString();
    EXPECT_EQ(r.content, "a");
  }
  EXPECT_EQ(started.load(), 4);
}

TEST(ChatClientTest, CancelFromAnotherThreadStopsRetryBackoff) {
  TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.status = 429;
    r.headers = {{"Retry-After", "30"}};
    return r;
  });
  auto client = MakeClient(server.url(), 60, 5);
  CancellationToken token;
  std::thread canceller([&] {
    while (server.requests() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    token.Cancel();
  });
  auto result = ChatOnce(*client, Question("x"), &token);
  canceller.join();
  EXPECT_EQ(result.status.code(), StatusCode::kCancelled);
}

TEST(ChatClientTest, FanOutBoundsConcurrencyAndKeepsOrder) {
  std::atomic<int> in_flight{0}, peak{0};
  TestHttpServer server([&](const TestRequest& req) {
    const int now = ++in_flight;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    --in_flight;
    return ChatSseResponse({nlohmann::json::parse(req.body)["messages"][0]["content"].get<std::string>()});
  });
  auto client = MakeClient(server.url());
  std::vector<ChatRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Question("q" + std::to_string(i)));
  auto results = RunFanOut(*client, requests, 2, nullptr);
  ASSERT_EQ(results.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(results[i].content, "q" + std::to_string(i));
  EXPECT_LE(peak.load(), 2);
}

// Regression (CLI audit W1): a question that is not UTF-8 made RequestBody().dump() throw inside the request;
// the fan-out dropped the exception and kept the result's default OK status, so `ask` printed no answer and
// "0 failed" with exit code 0. Now it is a failed request that names the problem, and is never sent.
TEST(ChatClientTest, TextThatIsNotUtf8FailsItsRequestNotSilently) {
  TestHttpServer server([](const TestRequest& req) {
    return ChatSseResponse({nlohmann::json::parse(req.body)["messages"][0]["content"].get<std::string>()});
  });
  auto client = MakeClient(server.url());
  const ChatResult one = ChatOnce(*client, Question("bad\xff"));
  EXPECT_EQ(one.status.code(), StatusCode::kInvalidArgument) << one.status.ToString();
  EXPECT_NE(one.status.message().find("UTF-8"), std::string::npos) << one.status.message();
  ChatRequest bad_model = Question("fine");
  bad_model.model = "m\xff";
  EXPECT_FALSE(ChatOnce(*client, bad_model).status.ok());
  size_t done_calls = 0;
  FanOutCallbacks callbacks;
  callbacks.on_done = [&](size_t, const ChatResult&) { ++done_calls; };
  const auto results =
      RunFanOut(*client, {Question("good"), Question("bad\xff"), bad_model}, 0, nullptr, callbacks);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].status.ok()) << results[0].status.ToString();
  EXPECT_EQ(results[0].content, "good");
  EXPECT_FALSE(results[1].status.ok());
  EXPECT_FALSE(results[2].status.ok());
  EXPECT_EQ(done_calls, 3u);  // a failed request is reported as done too
  EXPECT_EQ(server.seen().size(), 1u);
}

// An exception from a caller's callback is not lost either: the fan-out rethrows it once its workers end.
TEST(ChatClientTest, FanOutRethrowsACallbacksException) {
  TestHttpServer server([](const TestRequest&) { return ChatSseResponse({"a"}); });
  auto client = MakeClient(server.url());
  FanOutCallbacks callbacks;
  callbacks.on_done = [](size_t, const ChatResult&) { throw std::runtime_error("callback failed"); };
  EXPECT_THROW(RunFanOut(*client, {Question("q1"), Question("q2")}, 1, nullptr, callbacks),
               std::runtime_error);
}

TEST(ChatClientTest, HttpsVerifiesTheCertificate) {
  const auto cert = testing::MakeSelfSignedCert("localhost", "127.0.0.1");
  TestHttpServer server([](const TestRequest&) { return ChatSseResponse({"secure"}, 1); }, &cert);
  const std::string dir = lockstep::testing::MakeTempDir("client-tls");
  const std::string ca = dir + "/ca.pem";
  std::ofstream(ca) << cert.cert_pem;
  // Without the CA: the self-signed certificate is rejected.
  auto untrusted = ChatOnce(*MakeClient(server.url(), 10, 0), Question("x"));
  EXPECT_EQ(untrusted.status.code(), StatusCode::kUnauthenticated) << untrusted.status.ToString();
  EXPECT_NE(untrusted.status.message().find("verification failed"), std::string::npos);
  // With it: accepted.
  auto trusted = ChatOnce(*MakeClient(server.url(), 10, 0, ca), Question("x"));
  ASSERT_TRUE(trusted.status.ok()) << trusted.status.ToString();
  EXPECT_EQ(trusted.content, "secure");
  // The name is checked too: trusted CA, but the certificate is for another host.
  const auto other = testing::MakeSelfSignedCert("example.org", "");
  TestHttpServer wrong_name([](const TestRequest&) { return ChatSseResponse({"x"}); }, &other);
  const std::string ca2 = dir + "/other.pem";
  std::ofstream(ca2) << other.cert_pem;
  auto mismatch = ChatOnce(*MakeClient(wrong_name.url(), 10, 0, ca2), Question("x"));
  EXPECT_EQ(mismatch.status.code(), StatusCode::kUnauthenticated) << mismatch.status.ToString();
}

}  // namespace
}  // namespace lockstep::client
