// Outcomes a running server shows only by chance, staged deterministically in-process: the real HttpServer,
// routes, GenerationJob and engine on the tiny model, over real sockets. A request whose deadline passes
// while it waits in the engine's queue (the engine thread held between two steps by a test observer) gets
// 504 in its route's error shape, and a stream, already answered 200, ends with finish_reason "timeout" and
// no token (a Responses stream with response.incomplete). A generation error in the middle of a stream (a
// per-request grammar work bound small enough to trip after some tokens) is an error event in the route's
// shape (response.failed on /v1/responses), and the stream then ends as usual.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "e2e_util.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "server/grammar_cache.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_guard.h"
#include "server/routes.h"
#include "server/server_metrics.h"
#include "server/sse.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server::testing {
namespace {

// Blocks the engine thread after a step while held, so that requests submitted meanwhile wait in its inbox
// (EngineObserver callbacks must not block; this one does on purpose, for tests only).
class EngineGate : public EngineObserver {
 public:
  void OnStep(const EngineStats&) override {
    std::unique_lock lock(mu_);
    if (!held_) return;
    holding_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
    holding_ = false;
  }
  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  // True once the engine thread waits in OnStep (false after 60 s).
  bool WaitUntilHolding() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return holding_; });
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool holding_ = false;
};

// Passes everything to `inner`; counts the PostAfter callbacks that ran (a GenerationJob's deadline).
class DeadlineCountingWriter : public ResponseWriter {
 public:
  DeadlineCountingWriter(std::shared_ptr<ResponseWriter> inner, std::atomic<int>* fired)
      : inner_(std::move(inner)), fired_(fired) {}
  void Send(int status, const std::string& type, std::string body, HeaderList headers) override {
    inner_->Send(status, type, std::move(body), std::move(headers));
  }
  void StartStream(int status, const std::string& type, HeaderList headers) override {
    inner_->StartStream(status, type, std::move(headers));
  }
  void Write(std::string data) override { inner_->Write(std::move(data)); }
  void End() override { inner_->End(); }
  void Post(std::function<void()> fn) override { inner_->Post(std::move(fn)); }
  std::function<void()> PostAfter(double seconds, std::function<void()> fn) override {
    return inner_->PostAfter(seconds, [fn = std::move(fn), fired = fired_] {
      fn();
      fired->fetch_add(1);
    });
  }
  void OnClose(std::function<void()> fn) override { inner_->OnClose(std::move(fn)); }
  bool closed() const override { return inner_->closed(); }

 private:
  std::shared_ptr<ResponseWriter> inner_;
  std::atomic<int>* fired_;
};

// HttpServer + routes + engine as Server wires them, with the engine gate and chosen grammar bounds.
class StagedServer {
 public:
  ~StagedServer() {
    gate_.Release();
    if (engine_) engine_->Shutdown(/*drain=*/false);  // no engine callback after the HTTP side is gone
    http_.reset();
  }

  // "" when serving, else what failed.
  std::string Start(double request_timeout_s, GrammarCacheOptions grammar_options = {}) {
    auto file = GgufFile::Open(TinyModel());
    if (!file.ok()) return file.status().ToString();
    std::shared_ptr<const GgufFile> shared_file = std::move(file).value();
    auto model = Model::Load(shared_file, {});
    if (!model.ok()) return model.status().ToString();
    auto tokenizer = Tokenizer::FromGguf(*shared_file);
    if (!tokenizer.ok()) return tokenizer.status().ToString();
    std::shared_ptr<const Tokenizer> shared_tokenizer = std::move(tokenizer).value();
    EngineOptions engine_options;
    engine_options.threads = 1;
    auto engine = Engine::Create(std::move(model).value(), shared_tokenizer, engine_options, &gate_);
    if (!engine.ok()) return engine.status().ToString();
    engine_ = std::move(engine).value();

    ApiContext& ctx = state_.ctx;
    ctx.tokenizer = shared_tokenizer;
    ctx.chat_template = std::make_shared<chat::ChatTemplate>(chat::ChatTemplate::Create("", "", ""));
    ctx.model_ids = {"tiny"};
    ctx.model_id = "tiny";
    ctx.model_path = TinyModel();
    ctx.architecture = "llama";
    ctx.dtype = "f32";
    ctx.max_context = engine_->max_context();
    ctx.vocab_size = shared_tokenizer->vocab_size();
    ctx.max_queue = engine_options.max_queue;
    ctx.max_seqs = engine_options.max_seqs;
    ctx.grammars = std::make_shared<GrammarCache>(shared_tokenizer, grammar_options);
    state_.engine = engine_.get();
    state_.registry = &registry_;
    state_.metrics = &metrics_;
    state_.guard = std::make_shared<RequestGuard>(GuardOptions{});
    state_.request_timeout_s = request_timeout_s;
    state_.ready.store(true);

    HttpServerOptions http_options;
    http_options.protocol_error_body = ProtocolErrorBody;
    http_ = std::make_unique<HttpServer>(
        http_options, [this](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
          HandleRequest(state_, std::move(request),
                        std::make_shared<DeadlineCountingWriter>(std::move(writer), &deadlines_fired_));
          handled_.fetch_add(1);
        });
    const Result<int> port = http_->Start();
    if (!port.ok()) return port.status().ToString();
    port_ = *port;
    return "";
  }

  int port() const { return port_; }
  Engine& engine() { return *engine_; }
  EngineGate& gate() { return gate_; }
  // Requests the handler has returned from (a generation request is submitted by then, its deadline armed).
  int handled() const { return handled_.load(); }
  int deadlines_fired() const { return deadlines_fired_.load(); }

 private:
  EngineGate gate_;
  MetricsRegistry registry_;
  ServerMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
  RouteState state_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<int> handled_{0};
  std::atomic<int> deadlines_fired_{0};
  int port_ = 0;
};

// Polls `done` every millisecond for up to 60 s.
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 60000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST(StagedOutcomeTest, ARequestTimedOutBeforeItsFirstTokenGets504InItsRoutesShape) {
  StagedServer server;
  ASSERT_EQ(server.Start(/*request_timeout_s=*/0.001), "");
  // Hold the engine thread after the first step of a request of its own, then queue four HTTP requests.
  server.gate().Hold();
  lockstep::Request busy;
  busy.prompt_ids = {1, 2, 3};
  busy.max_tokens = 4;
  ASSERT_TRUE(server.engine().Submit(busy).ok());
  ASSERT_TRUE(server.gate().WaitUntilHolding());

  HttpResponse openai, tgi;
  std::vector<std::string> openai_stream, tgi_stream;
  int openai_stream_status = 0, tgi_stream_status = 0;
  std::vector<std::thread> clients;
  clients.emplace_back([&] { openai = Post(server.port(), "/v1/completions", {{"prompt", "hi"}}); });
  clients.emplace_back([&] { tgi = Post(server.port(), "/generate", {{"inputs", "hi"}}); });
  clients.emplace_back([&] {
    openai_stream = Stream(server.port(), "/v1/completions", {{"prompt", "hi"}, {"stream", true}}, nullptr,
                           &openai_stream_status);
  });
  clients.emplace_back([&] {
    tgi_stream = Stream(server.port(), "/generate_stream",
                        {{"inputs", "hi"}, {"parameters", {{"details", true}}}}, nullptr, &tgi_stream_status);
  });
  // Every request submitted and its deadline passed while the engine has not run a step since: released,
  // the engine takes their cancellations together with them, before any of them runs.
  const bool queued = WaitFor([&] { return server.handled() == 4 && server.deadlines_fired() == 4; });
  server.gate().Release();
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(queued) << server.handled() << " handled, " << server.deadlines_fired() << " deadlines";

  EXPECT_EQ(openai.status, 504) << openai.body;
  EXPECT_EQ(openai.Json()["error"]["type"], "server_error") << openai.body;
  EXPECT_EQ(openai.Json()["error"]["code"], "timeout") << openai.body;
  EXPECT_NE(openai.body.find("before any token was generated"), std::string::npos) << openai.body;
  EXPECT_EQ(tgi.status, 504) << tgi.body;
  EXPECT_EQ(tgi.Json()["error_type"], "timeout") << tgi.body;
  EXPECT_TRUE(tgi.Json()["error"].is_string()) << tgi.body;

  // Streams were answered 200 on submission: they end with the reason and no token.
  EXPECT_EQ(openai_stream_status, 200);
  ASSERT_GE(openai_stream.size(), 2u);
  EXPECT_EQ(openai_stream.back(), "[DONE]");
  const nlohmann::json last = nlohmann::json::parse(openai_stream[openai_stream.size() - 2], nullptr, false);
  ASSERT_TRUE(last.contains("choices")) << openai_stream[openai_stream.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], "timeout") << last;
  EXPECT_EQ(last["choices"][0]["text"], "") << last;
  EXPECT_EQ(tgi_stream_status, 200);
  ASSERT_EQ(tgi_stream.size(), 1u) << "a token was streamed";
  const nlohmann::json tgi_last = nlohmann::json::parse(tgi_stream.back(), nullptr, false);
  EXPECT_EQ(tgi_last["details"]["finish_reason"], "timeout") << tgi_last;
  EXPECT_EQ(tgi_last["details"]["generated_tokens"], 0) << tgi_last;
}

// The Responses API's form of the same outcomes: 504 for a whole response, and a stream that ends with
// response.incomplete, reason "timeout", no output token.
TEST(StagedOutcomeTest, AResponseTimedOutBeforeItsFirstTokenIs504OrIncomplete) {
  StagedServer server;
  ASSERT_EQ(server.Start(/*request_timeout_s=*/0.001), "");
  server.gate().Hold();
  lockstep::Request busy;
  busy.prompt_ids = {1, 2, 3};
  busy.max_tokens = 4;
  ASSERT_TRUE(server.engine().Submit(busy).ok());
  ASSERT_TRUE(server.gate().WaitUntilHolding());
  HttpResponse whole, streamed;
  std::thread whole_client([&] { whole = Post(server.port(), "/v1/responses", {{"input", "hi"}}); });
  std::thread stream_client([&] {
    streamed = Request(server.port(), "POST", "/v1/responses", R"({"input": "hi", "stream": true})");
  });
  const bool queued = WaitFor([&] { return server.handled() == 2 && server.deadlines_fired() == 2; });
  server.gate().Release();
  whole_client.join();
  stream_client.join();
  ASSERT_TRUE(queued) << server.handled() << " handled, " << server.deadlines_fired() << " deadlines";
  EXPECT_EQ(whole.status, 504) << whole.body;
  EXPECT_EQ(whole.Json()["error"]["code"], "timeout") << whole.body;
  EXPECT_EQ(streamed.status, 200);
  SseParser parser;
  const std::vector<SseParser::Event> events = parser.Feed(streamed.body);
  ASSERT_FALSE(events.empty()) << streamed.body;
  EXPECT_EQ(events.back().event, "response.incomplete") << streamed.body;
  const nlohmann::json last = nlohmann::json::parse(events.back().data, nullptr, false);
  EXPECT_EQ(last["response"]["status"], "incomplete") << last;
  EXPECT_EQ(last["response"]["incomplete_details"]["reason"], "timeout") << last;
  EXPECT_EQ(last["response"]["usage"]["output_tokens"], 0) << last;
}

// A generation error in a streamed response (a grammar work bound its first mask passes) ends the stream
// with response.failed, its error saying why.
TEST(StagedOutcomeTest, AGenerationErrorEndsAResponseStreamWithResponseFailed) {
  StagedServer server;
  ASSERT_EQ(
      server.Start(/*request_timeout_s=*/60, GrammarCacheOptions{.max_request_work = 1, .warm_walks = 0}),
      "");
  const HttpResponse r =
      Request(server.port(), "POST", "/v1/responses",
              R"({"input": "hi", "stream": true, "text": {"format": {"type": "json_object"}}})");
  EXPECT_EQ(r.status, 200);
  SseParser parser;
  const std::vector<SseParser::Event> events = parser.Feed(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  EXPECT_EQ(events.front().event, "response.created");
  EXPECT_EQ(events.back().event, "response.failed") << r.body;
  const nlohmann::json last = nlohmann::json::parse(events.back().data, nullptr, false);
  EXPECT_EQ(last["response"]["status"], "failed") << last;
  EXPECT_NE(last["response"]["error"]["message"].get<std::string>().find("generation failed"),
            std::string::npos)
      << last;
  for (size_t i = 0; i + 1 < events.size(); ++i) EXPECT_NE(events[i].event, "response.failed");
}

// A grammar of 24 lower-case letters, each step a distinct grammar state: every token's mask costs grammar
// work of its own (no warming walks fill the masker's caches first), so the work a request spends grows with
// its tokens, and of the bounds 1, 2, 4, ... on it, some is passed in the middle of the text.
constexpr const char* kLetters = "[a-z]{24}";

// Streams a greedy completion constrained to kLetters from a fresh server whose requests may spend `bound`
// grammar work; checks the stream's shape. *text: what came before the error event, if any.
void StreamWithGrammarBound(uint64_t bound, std::string* text, bool* errored) {
  StagedServer server;
  ASSERT_EQ(
      server.Start(/*request_timeout_s=*/60, GrammarCacheOptions{.max_request_work = bound, .warm_walks = 0}),
      "");
  int status = 0;
  const std::vector<std::string> events = Stream(server.port(), "/v1/completions",
                                                 {{"prompt", "hi"},
                                                  {"max_tokens", 30},
                                                  {"temperature", 0},
                                                  {"guided_regex", kLetters},
                                                  {"stream", true}},
                                                 nullptr, &status);
  ASSERT_EQ(status, 200);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  text->clear();
  *errored = false;
  for (const std::string& event : events) {
    const nlohmann::json e = nlohmann::json::parse(event, nullptr, false);
    if (e.is_object() && e.contains("error")) {
      EXPECT_FALSE(*errored) << "two error events";
      *errored = true;
      EXPECT_EQ(e["error"]["type"], "server_error") << e;
      EXPECT_EQ(e["error"]["code"], "internal_error") << e;
      EXPECT_NE(e["error"]["message"].get<std::string>().find("generation failed: the grammar is too costly"),
                std::string::npos)
          << e;
    } else if (e.is_object() && e.contains("choices") && !e["choices"].empty()) {
      EXPECT_FALSE(*errored) << "a choice chunk after the error: " << e;
      *text += e["choices"][0]["text"].get<std::string>();
    }
  }
}

TEST(StagedOutcomeTest, AGenerationErrorMidStreamIsAnErrorEventThenTheStreamEnds) {
  uint64_t bound = 1;
  std::string text;
  bool errored = false;
  for (; bound <= (uint64_t{1} << 30); bound *= 2) {
    ASSERT_NO_FATAL_FAILURE(StreamWithGrammarBound(bound, &text, &errored)) << "bound " << bound;
    if (!errored) {  // never passed: the whole text
      EXPECT_EQ(text.size(), 24u) << text;
      break;
    }
    if (!text.empty()) break;  // passed after some tokens
  }
  ASSERT_TRUE(errored && !text.empty()) << "no bound ended the stream between its first and last token";
  EXPECT_LT(text.size(), 24u) << text;

  // TGI's stream, with a bound its first mask passes: the stream's one event is the error, in TGI's shape.
  StagedServer server;
  ASSERT_EQ(
      server.Start(/*request_timeout_s=*/60, GrammarCacheOptions{.max_request_work = 1, .warm_walks = 0}),
      "");
  int status = 0;
  const std::vector<std::string> tgi = Stream(
      server.port(), "/generate_stream",
      {{"inputs", "hi"},
       {"parameters", {{"max_new_tokens", 30}, {"grammar", {{"type", "regex"}, {"value", kLetters}}}}}},
      nullptr, &status);
  EXPECT_EQ(status, 200);
  ASSERT_FALSE(tgi.empty());
  const nlohmann::json last = nlohmann::json::parse(tgi.back(), nullptr, false);
  EXPECT_EQ(last["error_type"], "generation") << tgi.back();
  EXPECT_NE(last.value("error", "").find("generation failed: the grammar is too costly"), std::string::npos)
      << tgi.back();
  EXPECT_EQ(Request(server.port(), "GET", "/health").status, 200);
}

}  // namespace
}  // namespace lockstep::server::testing
