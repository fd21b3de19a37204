// Requests a hostile client sends, as real HTTP against a running `lockstep serve`: JSON values of the wrong
// type in nested fields, deep nesting in every field that gets an error message, more connections than
// allowed, and running out of file descriptors. Each must be answered (400/422/503) or shed while the server
// stays up and keeps serving normal requests.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class HostileRequestsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(TinyModel(), {"-t", "1"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->log(); }
  int port() const { return server_->port(); }

  // The server still answers a health check and a short completion.
  void ExpectAlive(const std::string& after) {
    const HttpResponse health = Request(port(), "GET", "/health");
    ASSERT_EQ(health.status, 200) << "the server died after " << after << "\n" << server_->log();
    const HttpResponse ok = Post(port(), "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}});
    ASSERT_EQ(ok.status, 200) << after << ": " << ok.body;
  }

  static ServerProcess* server_;
};
ServerProcess* HostileRequestsTest::server_ = nullptr;

struct Case {
  const char* path;
  std::string body;
  int status;
  std::string param;  // OpenAI error param expected ("" = not checked)
};

TEST_F(HostileRequestsTest, WrongTypedNestedFieldsAreAnsweredNotFatal) {
  const std::string chat = "/v1/chat/completions";
  const std::string user = R"("messages":[{"role":"user","content":"hi"}])";
  const std::vector<Case> cases = {
      {"/v1/completions", R"({"prompt":"hi","response_format":{"type":5}})", 400, "response_format.type"},
      {"/v1/completions", R"({"prompt":"hi","response_format":5})", 400, "response_format"},
      {"/v1/completions", R"({"prompt":"hi","response_format":{"type":"grammar"}})", 400,
       "response_format.type"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":2,"response_format":{"type":null}})", 200, ""},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":2,"response_format":null})", 200, ""},
      {"/v1/completions", R"({"prompt":"hi","stream_options":5})", 400, "stream_options"},
      {"/v1/completions", R"({"prompt":"hi","stream":true,"stream_options":{"include_usage":"yes"}})", 400,
       "stream_options.include_usage"},
      {"/v1/completions", R"({"prompt":"hi","stream_options":{"include_usage":true}})", 400,
       "stream_options"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":1,"stream":false,"stream_options":null})", 200, ""},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":{"abc":1}})", 400, "logit_bias"},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":{"01":1}})", 400, "logit_bias"},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":{"99999999":1}})", 400, "logit_bias"},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":{"5":101}})", 400, "logit_bias.5"},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":{"5":"x"}})", 400, "logit_bias.5"},
      {"/v1/completions", R"({"prompt":"hi","logit_bias":[5]})", 400, "logit_bias"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":1,"logit_bias":{"5":-100}})", 200, ""},
      {"/v1/completions", R"({"prompt":"hi","stop_token_ids":[-1]})", 400, "stop_token_ids"},
      {"/v1/completions", R"({"prompt":"hi","stop_token_ids":["2"]})", 400, "stop_token_ids"},
      {"/v1/completions", R"({"prompt":"hi","stop_token_ids":7})", 400, "stop_token_ids"},
      {"/v1/completions", R"({"prompt":"hi","min_tokens":-1})", 400, "min_tokens"},
      {"/v1/completions", R"({"prompt":[[1,"a"]]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt":[1,{"a":1}]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt":"hi","stop":[1]})", 400, "stop"},
      {"/v1/completions", R"({"prompt":"hi","seed":18446744073709551615})", 400, "seed"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":[{"type":5,"text":"x"}]}]})", 400,
       "messages[0].content[0].type"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":[{"type":"text","text":5}]}]})", 400,
       "messages[0].content[0].text"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", 400,
       "messages[0].content[0].type"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":[5]}]})", 400, "messages[0].content[0]"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":[{"text":"x"}]}]})", 400,
       "messages[0].content[0].type"},
      {chat.c_str(), R"({"messages":[{"role":5,"content":"x"}]})", 400, "messages[0].role"},
      {chat.c_str(), R"({"messages":[{"role":"user","content":"x","name":5}]})", 400, "messages[0].name"},
      {chat.c_str(), R"({"messages":[5]})", 400, "messages[0]"},
      {chat.c_str(), R"({"messages":{"role":"user"}})", 400, "messages"},
      {chat.c_str(), "{" + user + R"(,"response_format":{"type":[]}})", 400, "response_format.type"},
      // Found by openai_chat_fuzzer in CI: a non-boolean `nullable` in a schema aborted the process.
      {chat.c_str(),
       "{" + user +
           R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"string","nullable":5}}}})",
       400, ""},
      {"/v1/completions",
       R"({"prompt":"hi","response_format":{"type":"json_object","schema":{"type":"object","nullable":"x"}}})",
       400, ""},
      {"/generate", R"({"inputs":"hi","parameters":{"grammar":{"type":"json","value":{"nullable":[]}}}})",
       422, ""},
      {"/generate", R"({"inputs":"hi","parameters":5})", 422, ""},
      {"/generate", R"({"inputs":"hi","parameters":{"stop":[1]}})", 422, ""},
      {"/generate", R"({"inputs":"hi","parameters":{"typical_p":"x"}})", 422, ""},
      {"/generate", R"({"inputs":["hi"]})", 422, ""},
  };
  for (const Case& c : cases) {
    const HttpResponse r = Request(port(), "POST", c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << " -> " << r.body;
    if (!c.param.empty()) {
      const auto j = r.Json();
      ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
      EXPECT_EQ(j["error"]["param"], c.param) << c.body << " -> " << r.body;
    }
    if (c.status >= 400) {
      EXPECT_NE(r.body.find("got"), std::string::npos) << "no type named: " << r.body;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAlive(c.body));
  }
}

// Schemas that crashed the converter, found by reading json_schema.cc after the fuzzer's `nullable` crash: an
// allOf branch whose $ref does not resolve (a null pointer dereferenced: SIGSEGV in a Release build), and a
// $ref array index past 2^64 (std::stoul threw std::out_of_range: SIGABRT).
TEST_F(HostileRequestsTest, UnresolvableReferencesAreAnswered) {
  const std::pair<std::string, std::string> schemas[] = {
      {R"({"allOf":[{"$ref":5},{"$ref":"#/nowhere"}]})", "allOf is supported only over object schemas"},
      {R"({"$defs":{"a":[{"type":"string"}]},"$ref":"#/$defs/a/99999999999999999999999"})",
       "does not resolve in this schema"},
  };
  for (const auto& [schema, message] : schemas) {
    const std::vector<Case> cases = {
        {"/v1/completions",
         R"({"prompt":"hi","response_format":{"type":"json_object","schema":)" + schema + "}}", 400,
         "response_format.schema"},
        {"/v1/chat/completions",
         R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":)"
         R"({"name":"x","schema":)" +
             schema + "}}}",
         400, "response_format.json_schema.schema"},
        {"/generate", R"({"inputs":"hi","parameters":{"grammar":{"type":"json","value":)" + schema + "}}}",
         422, ""},
    };
    for (const Case& c : cases) {
      const HttpResponse r = Request(port(), "POST", c.path, c.body);
      EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << " -> " << r.body;
      EXPECT_NE(r.body.find(message), std::string::npos) << r.body;
      if (!c.param.empty()) {
        const auto j = r.Json();
        ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
        EXPECT_EQ(j["error"]["param"], c.param) << c.body << " -> " << r.body;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectAlive(c.body));
    }
  }
}

// `[[[...]]]` nested `depth` levels.
std::string Nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

TEST_F(HostileRequestsTest, DeepNestingInAnyFieldIsRefusedWithoutRecursion) {
  // Every field whose error message used to print the value (19 of them), on the three API routes.
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"/v1/completions", R"({"prompt":"hi","temperature":@})"},
      {"/v1/completions", R"({"prompt":"hi","top_p":@})"},
      {"/v1/completions", R"({"prompt":"hi","top_k":@})"},
      {"/v1/completions", R"({"prompt":"hi","min_p":@})"},
      {"/v1/completions", R"({"prompt":"hi","presence_penalty":@})"},
      {"/v1/completions", R"({"prompt":"hi","frequency_penalty":@})"},
      {"/v1/completions", R"({"prompt":"hi","seed":@})"},
      {"/v1/completions", R"({"prompt":"hi","n":@})"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":@})"},
      {"/v1/completions", R"({"prompt":"hi","stop":@})"},
      {"/v1/completions", R"({"prompt":"hi","logprobs":@})"},
      {"/v1/completions", R"({"prompt":"hi","echo":@})"},
      {"/v1/completions", R"({"prompt":[1,@]})"},
      {"/v1/completions", R"({"prompt":[[1,@]]})"},
      {"/v1/chat/completions", R"({"messages":[{"role":@,"content":"x"}]})"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":@})"},
      {"/generate", R"({"inputs":"hi","parameters":{"temperature":@}})"},
      {"/generate", R"({"inputs":"hi","parameters":{"max_new_tokens":@}})"},
      {"/generate", R"({"inputs":@})"},
  };
  for (const auto& [path, shape] : fields) {
    const size_t at = shape.find('@');
    for (int depth : {54000, 100}) {
      const std::string body = shape.substr(0, at) + Nested(depth) + shape.substr(at + 1);
      const HttpResponse r = Request(port(), "POST", path, body);
      const int expected = depth > 128 ? 400 : path == "/generate" ? 422 : 400;
      EXPECT_EQ(r.status, expected) << path << " " << shape << " depth " << depth << ": " << r.body;
      if (depth > 128) {
        EXPECT_NE(r.body.find("deeper than 128"), std::string::npos) << r.body;
      } else {
        EXPECT_NE(r.body.find("got an array of 1 item"), std::string::npos) << shape << ": " << r.body;
        EXPECT_LT(r.body.size(), 1000u) << "the error repeats the value: " << r.body.substr(0, 200);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectAlive(shape));
    }
  }
}

TEST_F(HostileRequestsTest, TokenIdErrorsNameTheTypeWithoutRepeatingTheValue) {
  // A token id that is an array used to be dumped whole into the error message.
  std::string ids = "[";
  for (int i = 0; i < 5000; ++i) ids += (i ? ",1" : "1");
  ids += "]";
  for (const char* shape : {R"({"tokens":[@]})", R"({"content":[@]})"}) {
    const std::string s = shape;
    const size_t at = s.find('@');
    const std::string path = s.find("tokens") != std::string::npos ? "/detokenize" : "/tokenize";
    const HttpResponse r = Request(port(), "POST", path, s.substr(0, at) + ids + s.substr(at + 1));
    EXPECT_EQ(r.status, 400) << path << ": " << r.body.substr(0, 200);
    EXPECT_NE(r.body.find("got an array of 5000 items"), std::string::npos) << r.body.substr(0, 200);
    EXPECT_LT(r.body.size(), 1000u) << "the error repeats the value: " << r.body.substr(0, 200);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAlive("token id arrays"));
}

TEST_F(HostileRequestsTest, LongStringsInErrorsAreCutNotRepeated) {
  // A 5000-byte value that an error quotes (a grammar type, a schema keyword or property name, a rule name)
  // was repeated whole into the message; tgi_fuzzer found the TGI grammar type. Now quoted as an excerpt.
  const std::string x(5000, 'x');
  const nlohmann::json bad_type = {{"type", x}};
  const std::vector<Case> cases = {
      {"/generate",
       nlohmann::json{{"inputs", "hi"}, {"parameters", {{"grammar", {{"type", x}, {"value", "a"}}}}}}.dump(),
       422, ""},
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"response_format", {{"type", x}}}}.dump(), 400,
       "response_format.type"},
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"fan_out", x}}.dump(), 400, "fan_out"},
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"json_schema", bad_type}}.dump(), 400, ""},
      {"/v1/completions",
       nlohmann::json{{"prompt", "hi"},
                      {"json_schema", {{"type", "object"}, {"properties", {{x, bad_type}}}}}}
           .dump(),
       400, ""},
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"grammar", "root ::= " + x}}.dump(), 400,
       "grammar"},
  };
  for (const Case& c : cases) {
    const HttpResponse r = Request(port(), "POST", c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << ": " << r.body.substr(0, 300);
    EXPECT_LT(r.body.size(), 1500u) << "the error repeats the value: " << r.body.substr(0, 300);
    EXPECT_NE(r.body.find("xxx..."), std::string::npos)
        << "no excerpt of the value: " << r.body.substr(0, 300);
    if (!c.param.empty()) {
      const auto j = nlohmann::json::parse(r.body, nullptr, false);
      EXPECT_EQ(j["error"]["param"], c.param) << r.body.substr(0, 300);
    }
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAlive("long strings in errors"));
}

// JSON text inside a client string is parsed as well: an assistant message's tool call `arguments`
// ("[[[…]]]" 100 000 levels deep, a 200 KB body) was parsed with no depth bound, then dumped, copied and made
// into template values recursively — a stack overflow (SIGSEGV) on every route that renders chat messages.
// Such a string is refused like a deep body, naming the field; so is a JSON schema given as a string.
TEST_F(HostileRequestsTest, DeepJsonInsideAClientStringIsRefusedNamingTheField) {
  const auto chat_body = [](int depth) {
    const nlohmann::json call = {
        {"id", "call_1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", Nested(depth)}}}};
    return nlohmann::json{{"messages",
                           {{{"role", "user"}, {"content", "hi"}},
                            {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call}}},
                            {{"role", "user"}, {"content", "and?"}}}},
                          {"max_tokens", 2}};
  };
  for (const char* path : {"/v1/chat/completions", "/tokenize", "/apply-template"}) {
    for (int depth : {100000, 100}) {
      const HttpResponse r = Post(port(), path, chat_body(depth));
      if (r.status == 0) {
        FAIL() << path << " depth " << depth << ": no answer; the server died?\n" << server_->log();
      }
      if (depth > 128) {
        EXPECT_EQ(r.status, 400) << path << ": " << r.body.substr(0, 300);
        EXPECT_EQ(r.Json()["error"]["param"], "messages[1].tool_calls[0].function.arguments") << r.body;
        EXPECT_NE(r.body.find("deeper than 128"), std::string::npos) << r.body;
        EXPECT_LT(r.body.size(), 1000u) << "the error repeats the value: " << r.body.substr(0, 300);
      } else {
        EXPECT_EQ(r.status, 200) << path << " depth " << depth << ": " << r.body.substr(0, 300);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectAlive(std::string(path) + " with deep tool call arguments"));
    }
  }
  // A schema as JSON text (vLLM's and TGI's string form) gets the same bound.
  const std::string deep = Nested(100000);
  const std::vector<Case> cases = {
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"json_schema", deep}}.dump(), 400, "json_schema"},
      {"/v1/completions", nlohmann::json{{"prompt", "hi"}, {"guided_json", deep}}.dump(), 400, "guided_json"},
      {"/v1/chat/completions",
       nlohmann::json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                      {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", deep}}}}}}
           .dump(),
       400, "response_format.json_schema.schema"},
      {"/generate",
       nlohmann::json{{"inputs", "hi"}, {"parameters", {{"grammar", {{"type", "json"}, {"value", deep}}}}}}
           .dump(),
       422, ""},
  };
  for (const Case& c : cases) {
    const HttpResponse r = Request(port(), "POST", c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << ": " << r.body.substr(0, 300);
    EXPECT_NE(r.body.find("deeper than 128"), std::string::npos) << r.body.substr(0, 300);
    if (!c.param.empty()) {
      EXPECT_EQ(r.Json()["error"]["param"], c.param) << r.body.substr(0, 300);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAlive(c.path + std::string(" with a deep schema string")));
  }
}

// A client string quoted in an error is an Excerpt, cut at a character boundary: a cut after a fixed number
// of bytes could end inside "é" (two bytes), and the JSON of the error then carried U+FFFD in its place.
TEST_F(HostileRequestsTest, QuotedClientStringsAreCutAtCharacterBoundaries) {
  const std::string replacement = "\xef\xbf\xbd";  // U+FFFD
  std::string accents = "a";
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  const HttpResponse model = Post(port(), "/v1/completions", {{"prompt", "hi"}, {"model", accents}});
  EXPECT_EQ(model.status, 404) << model.body;
  const HttpResponse temperature =
      Post(port(), "/v1/completions", {{"prompt", "hi"}, {"temperature", accents}});
  EXPECT_EQ(temperature.status, 400) << temperature.body;
  const HttpResponse host =
      RawRequest(port(), "GET /v1/models HTTP/1.1\r\nHost: " + accents + "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(host.status, 400) << host.body;  // not a host name (RFC 3986), so not even asked about
  const HttpResponse origin = Request(port(), "GET", "/v1/models", "", {{"Origin", "https://" + accents}});
  EXPECT_EQ(origin.status, 403) << origin.body;
  for (const HttpResponse* r : {&model, &temperature, &host, &origin}) {
    EXPECT_EQ(r->body.find(replacement), std::string::npos) << "a character cut in two: " << r->body;
    EXPECT_NE(r->body.find("\xc3\xa9..."), std::string::npos) << "no excerpt: " << r->body;
    EXPECT_LT(r->body.size(), 600u) << r->body;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAlive("strings of two-byte characters in errors"));
}

// RFC 9112 §3.2: an HTTP/1.1 request without Host, one with two (the second could slip past the loopback
// Host check), or one whose Host is not host[:port], is answered 400 in its route's error shape; HTTP/1.0
// needs no Host.
TEST_F(HostileRequestsTest, AMissingRepeatedOrInvalidHostIs400InTheRoutesShape) {
  const std::string body = R"({"inputs":"hi"})";
  const HttpResponse tgi =
      RawRequest(port(), "POST /generate HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\n\r\n" + body);
  EXPECT_EQ(tgi.status, 400) << tgi.body;
  EXPECT_EQ(tgi.Json()["error_type"], "validation") << tgi.body;
  EXPECT_NE(tgi.body.find("Host header"), std::string::npos) << tgi.body;
  const HttpResponse openai = RawRequest(port(), "GET /v1/models HTTP/1.1\r\n\r\n");
  EXPECT_EQ(openai.status, 400) << openai.body;
  EXPECT_EQ(openai.Json()["error"]["code"], "bad_request") << openai.body;
  EXPECT_EQ(openai.headers.count("connection") ? openai.headers.at("connection") : "", "close");
  const HttpResponse twice =
      RawRequest(port(), "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(twice.status, 400) << twice.body;
  EXPECT_EQ(twice.Json()["error"]["code"], "bad_request") << twice.body;
  // Not host[:port] (RFC 3986): 400 naming the value and what is wrong with it, not the loopback check's 403.
  const HttpResponse invalid =
      RawRequest(port(), "GET /v1/models HTTP/1.1\r\nHost: localhost@evil.example\r\n\r\n");
  EXPECT_EQ(invalid.status, 400) << invalid.body;
  EXPECT_EQ(invalid.Json()["error"]["code"], "bad_request") << invalid.body;
  EXPECT_NE(invalid.body.find("invalid Host header 'localhost@evil.example': byte 0x40 at offset 9"),
            std::string::npos)
      << invalid.body;
  const HttpResponse ipv6 = RawRequest(port(), "GET /health HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
  EXPECT_EQ(ipv6.status, 200) << ipv6.body;
  const HttpResponse http10 = RawRequest(port(), "GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(http10.status, 200) << http10.body;
  ASSERT_NO_FATAL_FAILURE(ExpectAlive("requests without a Host"));
}

// Whether the server has closed `fd` (a read sees the end of the stream, perhaps after a response); does not
// wait.
bool ClosedByServer(int fd) {
  char buf[512];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;  // EAGAIN: open, nothing (more) to read
  }
}

// Waits until at least `want` of `fds` are closed by the server or `seconds` pass; returns how many are.
int WaitForClosedByServer(const std::vector<int>& fds, int want, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int closed = 0;
    for (int fd : fds) closed += ClosedByServer(fd) ? 1 : 0;
    if (closed >= want || std::chrono::steady_clock::now() > deadline) return closed;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A connection that has sent the start of a request's headers (so it is not idle, once the server read it).
int BusyConnection(int port) {
  const int fd = Connect(port);
  if (fd >= 0 && send(fd, "POST /v1/completions HTTP/1.1\r\n", 31, MSG_NOSIGNAL) != 31) {
    close(fd);
    return -1;
  }
  return fd;
}

// Speed-independent (sanitizer builds and loaded machines are slow): it waits on what the server does, with
// deadlines far above what it needs.
TEST(ConnectionLimitTest, IdleConnectionsMakeRoomAndBusyOnesGet503) {
  ServerProcess server(TinyModel(), {"-t", "1", "--max-connections", "8", "--header-timeout", "60"});
  ASSERT_TRUE(server.ok()) << server.log();
  // Twenty idle connections (connected, nothing sent), however fast they come: each one past the limit
  // closes a different one of the oldest to make room, and a normal request still gets its answer.
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(Connect(server.port()));
  const HttpResponse ok = Post(server.port(), "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200) << ok.body << server.log();
  EXPECT_GE(WaitForClosedByServer(idle, 12, 30), 12)
      << "the idle connections beyond the limit were not closed";
  // Eight connections in the middle of their headers are not idle: a ninth is answered 503 at once. Until
  // the server has read a busy connection's first bytes it counts as idle and a probe closes it to make
  // room: probe until the answer is 503, replacing any busy connection the server closed meanwhile.
  std::vector<int> busy;
  for (int i = 0; i < 8; ++i) {
    busy.push_back(BusyConnection(server.port()));
    ASSERT_GE(busy.back(), 0);
  }
  HttpResponse refused;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    refused = Request(server.port(), "GET", "/health");
    if (refused.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int& fd : busy) {
      if (!ClosedByServer(fd)) continue;
      close(fd);
      fd = BusyConnection(server.port());
      ASSERT_GE(fd, 0);
    }
  }
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.headers.count("retry-after"), 1u);
  for (int fd : idle) close(fd);
  for (int fd : busy) close(fd);
  // Once the busy connections are gone there is room again (as soon as the server has seen them close).
  int health = 0;
  for (int i = 0; i < 300 && health != 200; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = Request(server.port(), "GET", "/health").status;
  }
  EXPECT_EQ(health, 200) << server.log();
}

// Sum of the failure counts in the server's "accept failed" lines, and how many lines there were.
std::pair<long, int> AcceptFailures(const std::string& log) {
  const std::regex line(R"(accept failed: [^\n]*\((\d+) time\(s\) since)");
  long total = 0;
  int lines = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    total += std::stol((*it)[1]);
    ++lines;
  }
  return {total, lines};
}

TEST(ConnectionLimitTest, RunningOutOfDescriptorsBacksOffAndRecovers) {
  // 48 descriptors, a connection limit far above that: accept() itself fails with EMFILE.
  ServerProcess server(TinyModel(), {"-t", "1", "--max-connections", "1000"}, /*max_open_files=*/48);
  ASSERT_TRUE(server.ok()) << server.log();
  std::vector<int> flood;
  for (int i = 0; i < 80; ++i) flood.push_back(Connect(server.port()));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const HttpResponse ok = Post(server.port(), "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  for (int fd : flood) close(fd);
  const auto [failures, lines] = AcceptFailures(server.log());
  EXPECT_GE(lines, 1) << "accept never failed; the descriptor limit did not bite\n" << server.log();
  EXPECT_LE(lines, 5) << server.log().substr(0, 2000);  // at most one line a second
  EXPECT_LT(failures, 400) << "accept was retried in a loop";
}

}  // namespace
}  // namespace lockstep::server::testing
