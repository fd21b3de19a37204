// Shared pieces of the end-to-end server tests: test models made once per test process with
// `lockstep make-model`, and a per-suite server.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_client.h"

namespace lockstep {
class GgufWriter;
}

namespace lockstep::server::testing {

// `make-model --shape tiny` (fast; 256-token context), made once per process.
const std::string& TinyModel();
// `make-model --shape tiny-qwen3-reranker` (a yes/no classifier head and a rerank template).
const std::string& RerankModel();
// tiny-bert with the test data's bge vocabulary (a bidirectional embedding model).
const std::string& BertModel();
// tiny-bert-reranker likewise (BERT's cls + cls.output head, rank pooling).
const std::string& BertRerankModel();
// `make-model --shape tiny-qwen35` (Gated DeltaNet layers: a recurrent state per running request).
const std::string& RecurrentModel();
// `make-model --shape stories15m` (slower per token, so requests stay in flight for a while).
const std::string& SlowModel();
// `make-model --shape tiny` with `vocabulary` (a file's tokenizer.* keys: a toy vocabulary with the control
// tokens and chat template a test needs), in a new temporary directory; returns its path.
std::string TinyModelWithVocabulary(const GgufWriter& vocabulary);
// A real chat template as tests/chat's tool-template goldens keep it ("ministral-3-reasoning", "gemma-4",
// ...).
std::string GoldenChatTemplate(const std::string& family);

// All text of an OpenAI stream (chat deltas or completion texts) by choice index; "[DONE]" must be the last
// event.
std::map<int, std::string> CollectOpenAiText(const std::vector<std::string>& events, bool chat,
                                             bool* saw_done);

// A chat stream's deltas (choice 0) added up: reasoning_content, content, the tool calls (how many, their
// names and arguments concatenated), the last finish_reason, and the usage chunk's usage.
struct StreamedChat {
  std::string reasoning, content, names, arguments, finish_reason;
  bool has_reasoning = false;
  int calls = 0;
  nlohmann::json usage;
};
// Streams `body` (stream and stream_options.include_usage set) to /v1/chat/completions on a running server.
StreamedChat StreamChat(int port, nlohmann::json body);

// The value of a metric sample on a running server's /metrics (-1 when absent).
double Metric(int port, const std::string& sample);
// Polls /metrics until nothing runs or waits and no KV is in use (adds a failure and returns false after ~10
// s).
bool WaitForIdleEngine(int port);
// Polls /metrics until `sample` reaches `value` (false after ~10 s).
bool WaitForMetric(int port, const std::string& sample, double value);
// Streams `body` to `path` on a running server, sends `signal` to the server as soon as the first event
// arrives (after ~10 s without one, anyway), and returns every event the stream got.
std::vector<std::string> StreamAndSignalOnceStarted(ServerProcess& server, const std::string& path,
                                                    const nlohmann::json& body, int signal);
// Seconds one POST of `body` to `path` takes on a running server, for tests that size their work or their
// timeouts to the machine (CI machines differ tenfold in speed). Adds a failure if the answer is not 200.
double SecondsForOneRequest(int port, const std::string& path, const nlohmann::json& body);

// A fixture for suites whose tests share one `lockstep serve`, started before the suite's first test and
// killed after its last: `class MyTest : public SharedServerTest<MyTest> {};`. A suite may hide `Model()`
// (default: TinyModel()) or `Args()` (default: one thread) with its own static functions. Each test fails at
// once, with the server's log, if the server did not start.
template <typename Suite>
class SharedServerTest : public ::testing::Test {
 public:
  static std::string Model() { return TinyModel(); }
  static std::vector<std::string> Args() { return {"-t", "1"}; }

 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<ServerProcess>(Suite::Model(), Suite::Args()); }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->log(); }
  static int port() { return server_->port(); }
  static ServerProcess& server() { return *server_; }

 private:
  static inline std::unique_ptr<ServerProcess> server_;
};

}  // namespace lockstep::server::testing
