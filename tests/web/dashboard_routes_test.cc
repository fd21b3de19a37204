// End-to-end tests of the dashboard routes on a real `lockstep serve`: the embedded page and its modules,
// the event feed (two streams in one step), the latency advisor and the splitter routes, the API key, and
// TGI's POST / next to the browser's GET /.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include "e2e_util.h"
#include "server/sse.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

using nlohmann::json;

// Reads `path`'s event stream (HTTP/1.0: no chunked framing) and calls on_event(event, data) until it
// returns false, the stream ends or `timeout` passes. Returns the HTTP status line's code (0: none).
int ReadEvents(int port, const std::string& path, const std::map<std::string, std::string>& headers,
               const std::function<bool(const std::string&, const json&)>& on_event,
               std::chrono::seconds timeout = std::chrono::seconds(90)) {
  const int fd = Connect(port);
  if (fd < 0) return 0;
  std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n";
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  request += "\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
    close(fd);
    return 0;
  }
  std::string head;
  int status = 0;
  SseParser parser;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[16384];
  bool more = true;
  while (more && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    std::string_view bytes(buf, size_t(n));
    if (status == 0) {
      head.append(bytes);
      const size_t end = head.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      status = std::atoi(head.c_str() + head.find(' ') + 1);
      if (status != 200) break;
      bytes = std::string_view(head).substr(end + 4);
    }
    for (const SseParser::Event& e : parser.Feed(bytes)) {
      if (!on_event(e.event, json::parse(e.data, nullptr, false))) {
        more = false;
        break;
      }
    }
  }
  close(fd);
  return status;
}

json Chat(const std::string& content, int max_tokens, bool stream) {
  return {{"messages", {{{"role", "user"}, {"content", content}}}},
          {"max_tokens", max_tokens},
          {"ignore_eos", true},
          {"temperature", 0},
          {"stream", stream}};
}

class DashboardRoutesTest : public SharedServerTest<DashboardRoutesTest> {
 public:
  static std::string Model() { return SlowModel(); }
};

TEST_F(DashboardRoutesTest, PageAndEveryModuleItImportsAreServedFromTheBinary) {
  const HttpResponse page = Request(port(), "GET", "/", "", {{"Accept", "text/html,application/xhtml+xml"}});
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.headers.at("content-security-policy").find("default-src 'self'"), std::string::npos);
  EXPECT_NE(page.body.find("<script type=\"module\" src=\"/dashboard/js/app.js\">"), std::string::npos);
  EXPECT_EQ(Request(port(), "GET", "/dashboard").body, page.body);
  // Follow every import from app.js: each module is served, as JavaScript.
  std::set<std::string> seen;
  std::vector<std::string> todo = {"js/app.js"};
  const std::regex import_re(R"(from '\./([a-z_]+\.js)')");
  while (!todo.empty()) {
    const std::string file = todo.back();
    todo.pop_back();
    if (!seen.insert(file).second) continue;
    const HttpResponse js = Request(port(), "GET", "/dashboard/" + file);
    ASSERT_EQ(js.status, 200) << file;
    EXPECT_EQ(js.headers.at("content-type"), "text/javascript; charset=utf-8") << file;
    for (std::sregex_iterator it(js.body.begin(), js.body.end(), import_re), end; it != end; ++it) {
      todo.push_back("js/" + (*it)[1].str());
    }
  }
  EXPECT_GE(seen.size(), 5u);
  EXPECT_EQ(Request(port(), "GET", "/dashboard/style.css").headers.at("content-type"),
            "text/css; charset=utf-8");
  EXPECT_EQ(Request(port(), "GET", "/dashboard/nothing.js").status, 404);
  EXPECT_EQ(Request(port(), "GET", "/dashboard/../CMakeLists.txt").status, 404);
}

TEST_F(DashboardRoutesTest, TgiPostRootStillGeneratesAndNonBrowsersGetNoPage) {
  const HttpResponse tgi =
      Post(port(), "/", {{"inputs", "Once upon a time"}, {"parameters", {{"max_new_tokens", 3}}}});
  ASSERT_EQ(tgi.status, 200) << tgi.body;
  ASSERT_TRUE(tgi.Json().is_array());
  EXPECT_TRUE(tgi.Json()[0]["generated_text"].is_string());
  EXPECT_EQ(Request(port(), "GET", "/", "", {{"Accept", "application/json"}}).status, 405);
}

TEST_F(DashboardRoutesTest, FeedShowsTwoStreamsInOneStepWithTheirProgressAndFinish) {
  // Two streamed chats run while the feed is read, long enough (~0.2 s on an idle fast core, seconds under
  // load) that the second is admitted while the first still runs even when its thread starts late.
  constexpr int kStreamTokens = 200;
  std::atomic<int> done{0};
  std::vector<std::thread> streams;
  auto start_streams = [&] {
    for (int i = 0; i < 2; ++i) {
      streams.emplace_back([&, i] {
        Stream(port(), "/v1/chat/completions", Chat("Tell story " + std::to_string(i), kStreamTokens, true));
        ++done;
      });
    }
  };
  bool snapshot = false, two_in_one_step = false, progress = false, finished = false;
  std::set<uint64_t> ids;
  const int status = ReadEvents(port(), "/dashboard/events?interval_ms=100", {},
                                [&](const std::string& event, const json& u) {
                                  if (event == "snapshot") {
                                    snapshot = true;
                                    EXPECT_EQ(u["server"]["max_seqs"], 64);
                                    EXPECT_TRUE(u["engine"]["kv_blocks_total"].get<int64_t>() > 0);
                                    start_streams();
                                    return true;
                                  }
                                  EXPECT_EQ(event, "update");
                                  for (const json& s : u["steps"]) {
                                    if (s["chunks"].size() >= 2) two_in_one_step = true;
                                    EXPECT_EQ(s["decode"].get<int>() + s["prefill"].get<int>() > 0, true);
                                    EXPECT_GT(s["ms"].get<double>(), 0);
                                    for (const json& c : s["chunks"]) ids.insert(c[0].get<uint64_t>());
                                  }
                                  for (const json& r : u["requests"]) {
                                    if (r["generated"].get<int>() >= 2 && r["max_tokens"] == kStreamTokens &&
                                        r["tokens_per_s"].is_number() && r["ttft_s"].is_number() &&
                                        r["label"].get<std::string>().rfind("chatcmpl-", 0) == 0) {
                                      progress = true;
                                    }
                                  }
                                  for (const json& f : u["finished"]) {
                                    if (ids.count(f["id"].get<uint64_t>()) &&
                                        f["finish_reason"] == "length" && f["generated"] == kStreamTokens) {
                                      finished = true;
                                    }
                                  }
                                  return !(two_in_one_step && progress && finished && done == 2);
                                });
  for (std::thread& t : streams) t.join();
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(snapshot);
  EXPECT_TRUE(two_in_one_step) << "no step held both streams";
  EXPECT_TRUE(progress);
  EXPECT_TRUE(finished);
}

TEST_F(DashboardRoutesTest, AdvisorValidatesAndPredictsFromMeasuredSteps) {
  const HttpResponse bad = Request(port(), "GET", "/advisor?questions=0&tokens=5");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Json()["error"]["param"], "questions");
  EXPECT_EQ(Request(port(), "GET", "/advisor?tokens=abc").Json()["error"]["param"], "tokens");
  // A bad value is quoted as an Excerpt (60 bytes), not whole.
  const HttpResponse long_value = Request(port(), "GET", "/advisor?tokens=" + std::string(500, 'x'));
  EXPECT_EQ(long_value.status, 400);
  EXPECT_NE(long_value.body.find(std::string(60, 'x') + "...'"), std::string::npos) << long_value.body;
  EXPECT_EQ(long_value.body.find(std::string(61, 'x')), std::string::npos) << long_value.body;
  ASSERT_EQ(Post(port(), "/v1/chat/completions", Chat("Hello", 8, false)).status, 200);
  const HttpResponse ok = Request(port(), "GET", "/advisor?questions=4&tokens=20&prompt_tokens=12");
  ASSERT_EQ(ok.status, 200) << ok.body;
  const json a = ok.Json();
  ASSERT_EQ(a["modes"].size(), 3u);
  EXPECT_EQ(a["combined_prompt_tokens"], 48);
  EXPECT_GT(a["step_time_model"]["samples"].get<int>(), 0);
  for (const json& m : a["modes"]) EXPECT_GT(m["wall_s"].get<double>(), 0) << m;
  EXPECT_TRUE(a["recommended"] == "parallel" || a["recommended"] == "combined" ||
              a["recommended"] == "sequential");
}

TEST_F(DashboardRoutesTest, SplitReturnsQuestionsAndTheirPromptTokens) {
  const HttpResponse r = Post(
      port(), "/split", {{"text", "Answer each separately:\n1. What is red?\n2. What is blue?\n3. Why?"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.Json();
  ASSERT_EQ(j["questions"].size(), 3u);
  EXPECT_EQ(j["questions"][1], "What is blue?");
  EXPECT_EQ(j["preamble"], "Answer each separately:");
  ASSERT_EQ(j["prompts"].size(), 3u);
  EXPECT_NE(j["prompts"][0].get<std::string>().find("What is red?"), std::string::npos);
  for (const json& n : j["prompt_tokens"]) EXPECT_GT(n.get<int>(), 3);
  EXPECT_GT(j["combined_prompt_tokens"].get<int>(), j["prompt_tokens"][0].get<int>());
  EXPECT_EQ(Post(port(), "/split", json::object()).Json()["error"]["param"], "text");
  EXPECT_EQ(Request(port(), "POST", "/split", "{oops").status, 400);
  EXPECT_EQ(Post(port(), "/split", {{"text", "  "}}).status, 400);
}

TEST_F(DashboardRoutesTest, SplitReadsItsBodyByTheRequestFieldRule) {
  // /split read its body with nlohmann directly; now as every API route does (ParseJsonObject, FieldReader):
  // nesting deeper than 128 refused before parsing, a wrong type named in the error.
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  const HttpResponse nested =
      Request(port(), "POST", "/split", R"({"text":"1. a?\n2. b?","x":)" + deep + "}");
  EXPECT_EQ(nested.status, 400) << nested.body.substr(0, 300);
  EXPECT_NE(nested.body.find("deeper than 128"), std::string::npos) << nested.body.substr(0, 300);
  const HttpResponse number = Post(port(), "/split", {{"text", 5}});
  EXPECT_EQ(number.status, 400) << number.body;
  EXPECT_EQ(number.Json()["error"]["param"], "text") << number.body;
  EXPECT_NE(number.body.find("got a number 5"), std::string::npos) << number.body;
  EXPECT_EQ(Request(port(), "POST", "/split", "[1]").status, 400);
}

TEST(DashboardAuthTest, DataRoutesNeedTheKeyThePageDoesNot) {
  ServerProcess server(TinyModel(), {"-t", "1", "--api-key", "sesame"});
  ASSERT_TRUE(server.ok()) << server.log();
  EXPECT_EQ(Request(server.port(), "GET", "/dashboard").status, 200);
  EXPECT_EQ(Request(server.port(), "GET", "/advisor").status, 401);
  EXPECT_EQ(Request(server.port(), "POST", "/split", "{\"text\":\"a\"}").status, 401);
  EXPECT_EQ(ReadEvents(server.port(), "/dashboard/events", {},
                       [](const std::string&, const json&) { return false; }),
            401);
  int events = 0;
  EXPECT_EQ(ReadEvents(server.port(), "/dashboard/events", {{"Authorization", "Bearer sesame"}},
                       [&](const std::string&, const json& u) { return ++events < 3 && u.is_object(); }),
            200);
  EXPECT_EQ(events, 3);
  EXPECT_EQ(Request(server.port(), "GET", "/advisor", "", {{"Authorization", "Bearer sesame"}}).status, 200);
}

TEST(DashboardShutdownTest, AnOpenFeedDoesNotHoldUpShutdown) {
  ServerProcess server(TinyModel(), {"-t", "1"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::thread reader([&] {
    ReadEvents(
        server.port(), "/dashboard/events", {}, [](const std::string&, const json&) { return true; },
        std::chrono::seconds(60));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(), 0);
  reader.join();  // the stream ended when the server drained
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace lockstep::server::testing
