// Engine API behaviour: cancellation within one step, validation at Submit, the waiting-queue limit, shutdown
// with and without drain, stop strings and stop tokens, text deltas, callbacks and timings.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/engine.h"
#include "engine_testing.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

using testing::Collected;
using testing::TestModel;

class EngineApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::TestDataDir().empty()) GTEST_SKIP() << "shared test data not found";
    model_ = testing::LoadTestModel(testing::TestDataPath("models/stories260K.gguf"));
    ASSERT_NE(model_.model, nullptr);
  }
  std::unique_ptr<Engine> MakeEngine(EngineOptions options = {}) {
    options.threads = 1;  // CI runs test binaries side by side on 2 cores
    auto engine = Engine::Create(model_.model, model_.tokenizer, options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  static Request LongRequest(int32_t max_tokens = 400) {
    Request r;
    r.prompt_ids = {1, 300, 400};
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    return r;
  }
  TestModel model_;
};

TEST_F(EngineApiTest, CancelMidDecodeStopsWithinOneStep) {
  auto engine = MakeEngine();
  Engine* raw = engine.get();
  std::atomic<int> produced{0};
  std::atomic<bool> done{false};
  std::mutex mutex;
  TokenEvent last;
  // Cancel from the event callback (engine thread) when the 5th token arrives: no further step may produce a
  // token for this request.
  auto submitted = engine->Submit(LongRequest(), [&](TokenEvent event) {
    if (event.token != kNoToken && ++produced == 5) raw->Cancel(event.request_id);
    if (event.last()) {
      std::lock_guard<std::mutex> lock(mutex);
      last = event;
      done = true;
    }
  });
  ASSERT_TRUE(submitted.ok());
  // Meanwhile a second request, cancelled from this thread mid-decode.
  auto other = engine->Submit(LongRequest());
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*other)->Next().has_value());
  (*other)->Cancel();
  Collected rest = testing::Collect(**other);
  EXPECT_EQ(rest.last.finish_reason, FinishReason::kCancelled);
  EXPECT_LT(rest.tokens.size(), 397u);

  for (int i = 0; i < 10000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(done);
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(last.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(last.token, kNoToken);
  EXPECT_EQ(produced.load(), 5);
  EXPECT_EQ(last.timing.generated_tokens, 5);
  EXPECT_TRUE((*submitted)->finished());
  testing::ExpectAllBlocksFree(*engine);
  EXPECT_EQ(engine->Stats().requests_cancelled, 2);
}

TEST_F(EngineApiTest, CancelWhileWaitingAndByIdAndAfterFinish) {
  EngineOptions options;
  options.max_seqs = 1;
  auto engine = MakeEngine(options);
  auto running = engine->Submit(LongRequest());
  auto waiting = engine->Submit(LongRequest());
  ASSERT_TRUE(running.ok() && waiting.ok());
  engine->Cancel((*waiting)->id());
  Collected w = testing::Collect(**waiting);
  EXPECT_EQ(w.last.finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(w.tokens.empty());
  (*running)->Cancel();
  Collected r = testing::Collect(**running);
  EXPECT_EQ(r.last.finish_reason, FinishReason::kCancelled);
  (*running)->Cancel();  // after the end: no effect
  engine->Cancel(987654321);
  EXPECT_FALSE((*running)->Next(std::chrono::milliseconds(10)).has_value());
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EngineApiTest, RejectsImpossibleAndInvalidRequests) {
  EngineOptions options;
  options.kv_tokens = 64;
  auto engine = MakeEngine(options);
  ASSERT_EQ(engine->max_context(), 512);
  ASSERT_EQ(engine->kv_capacity_tokens(), 64);
  Request r = LongRequest(10);
  r.prompt_ids.clear();
  auto empty = engine->Submit(r);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  r = LongRequest(10);
  r.prompt_ids.push_back(100000);
  auto bad_id = engine->Submit(r);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("100000"), std::string::npos);

  auto too_long_for_pool = engine->Submit(LongRequest(62));  // 3 + 62 > 64
  ASSERT_FALSE(too_long_for_pool.ok());
  EXPECT_EQ(too_long_for_pool.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long_for_pool.status().message().find("KV cache"), std::string::npos);
  EXPECT_TRUE(engine->Submit(LongRequest(61)).ok());  // exactly fits

  auto roomy = MakeEngine();
  auto beyond_context = roomy->Submit(LongRequest(510));
  ASSERT_FALSE(beyond_context.ok());
  EXPECT_EQ(beyond_context.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(beyond_context.status().message().find("context of 512"), std::string::npos);

  r = LongRequest(0);
  EXPECT_EQ(roomy->Submit(r).status().code(), StatusCode::kInvalidArgument);
  r = LongRequest(10);
  r.sampling.temperature = -1;
  EXPECT_EQ(roomy->Submit(r).status().code(), StatusCode::kInvalidArgument);
  r = LongRequest(10);
  r.stop = {""};
  EXPECT_EQ(roomy->Submit(r).status().code(), StatusCode::kInvalidArgument);
  EXPECT_GE(roomy->Stats().requests_rejected, 4);
}

TEST_F(EngineApiTest, WaitingQueueLimitGivesResourceExhausted) {
  EngineOptions options;
  options.max_seqs = 1;
  options.max_queue = 2;
  auto engine = MakeEngine(options);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  Status last = Status::Ok();
  for (int i = 0; i < 6 && last.ok(); ++i) {
    auto handle = engine->Submit(LongRequest());
    if (handle.ok())
      handles.push_back(*handle);
    else
      last = handle.status();
  }
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(last.message().find("queue is full"), std::string::npos);
  EXPECT_LE(handles.size(), 3u);  // one running + two waiting at most
  for (auto& h : handles) h->Cancel();
  for (auto& h : handles) EXPECT_EQ(testing::Collect(*h).last.finish_reason, FinishReason::kCancelled);
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EngineApiTest, ARequestThatCanStartAtOnceNeverCountsAsWaiting) {
  // max_seqs 1, max_queue 1: two requests submitted back to back to an idle engine are both accepted (one
  // runs, one waits) whether or not the engine thread has taken the first one yet; a third is refused.
  for (int round = 0; round < 20; ++round) {
    EngineOptions options;
    options.max_seqs = 1;
    options.max_queue = 1;
    auto engine = MakeEngine(options);
    auto first = engine->Submit(LongRequest());
    auto second = engine->Submit(LongRequest());
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE(second.ok()) << "round " << round << ": " << second.status().ToString();
    auto third = engine->Submit(LongRequest());
    EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted) << round;
    (*first)->Cancel();
    (*second)->Cancel();
    testing::Collect(**first);
    testing::Collect(**second);
  }
}

TEST_F(EngineApiTest, AGroupThatCanStartAtOnceNeverCountsAsWaiting) {
  // A group (n > 1, best_of, fan-out) is admitted by Submit's rule: the members that fit in the free sequence
  // slots start at once and never count as waiting; the group is refused whole when more than max_queue
  // requests would wait with it. Groups to an idle engine used to count whole as waiting: max_queue 0
  // refused every group, max_queue 1 a pair. Each round submits before and after the engine thread took the
  // earlier requests (it races), which must not matter.
  const auto group = [](int size) { return std::vector<Request>(static_cast<size_t>(size), LongRequest()); };
  const auto cancel_all = [](std::vector<std::shared_ptr<RequestHandle>>& handles) {
    for (auto& h : handles) h->Cancel();
    for (auto& h : handles) testing::Collect(*h);
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    EngineOptions options;
    options.max_seqs = 3;
    options.max_queue = 0;
    auto engine = MakeEngine(options);
    ASSERT_NE(engine, nullptr);
    auto pair = engine->SubmitGroup(group(2));
    ASSERT_TRUE(pair.ok()) << "round " << round << ": " << pair.status().ToString();
    handles.insert(handles.end(), pair->begin(), pair->end());
    auto another_pair = engine->SubmitGroup(group(2));  // one slot left: one of them would wait
    EXPECT_EQ(another_pair.status().code(), StatusCode::kResourceExhausted) << round;
    auto one = engine->Submit(LongRequest());  // the last slot
    ASSERT_TRUE(one.ok()) << "round " << round << ": " << one.status().ToString();
    handles.push_back(*one);
    EXPECT_EQ(engine->Submit(LongRequest()).status().code(), StatusCode::kResourceExhausted) << round;
    cancel_all(handles);

    options.max_seqs = 2;
    options.max_queue = 1;
    engine = MakeEngine(options);
    ASSERT_NE(engine, nullptr);
    auto four = engine->SubmitGroup(group(4));  // two would wait
    EXPECT_EQ(four.status().code(), StatusCode::kResourceExhausted) << round;
    auto three = engine->SubmitGroup(group(3));  // two start, one waits
    ASSERT_TRUE(three.ok()) << "round " << round << ": " << three.status().ToString();
    handles.assign(three->begin(), three->end());
    EXPECT_EQ(engine->Submit(LongRequest()).status().code(), StatusCode::kResourceExhausted) << round;
    cancel_all(handles);
    testing::ExpectAllBlocksFree(*engine);
  }
}

TEST_F(EngineApiTest, MaxQueueZeroAdmitsOnlyWhatCanRun) {
  EngineOptions options;
  options.max_seqs = 2;
  options.max_queue = 0;
  auto engine = MakeEngine(options);
  ASSERT_NE(engine, nullptr);
  auto a = engine->Submit(LongRequest());
  auto b = engine->Submit(LongRequest());
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = engine->Submit(LongRequest());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  (*a)->Cancel();
  testing::Collect(**a);
  // The slot is free again once the engine has finished the cancelled request.
  Status d = InvalidArgument("not tried");
  for (int i = 0; i < 200 && !d.ok(); ++i) {
    auto handle = engine->Submit(LongRequest(5));
    d = handle.status();
    if (handle.ok())
      testing::Collect(**handle);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(d.ok()) << d.ToString();
  (*b)->Cancel();
  testing::Collect(**b);
  EXPECT_EQ(Engine::Create(model_.model, model_.tokenizer, EngineOptions{.max_queue = -1}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EngineApiTest, ShutdownDrainsOrCancels) {
  auto engine = MakeEngine();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < 4; ++i) handles.push_back(*engine->Submit(LongRequest(30)));
  engine->Shutdown(/*drain=*/true);
  for (auto& h : handles) {
    Collected c = testing::Collect(*h);
    EXPECT_EQ(c.last.finish_reason, FinishReason::kLength);
    EXPECT_EQ(c.tokens.size(), 30u);
  }
  auto after = engine->Submit(LongRequest(5));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);

  auto second = MakeEngine();
  handles.clear();
  for (int i = 0; i < 4; ++i) handles.push_back(*second->Submit(LongRequest(400)));
  second->Shutdown(/*drain=*/false);
  for (auto& h : handles) EXPECT_EQ(testing::Collect(*h).last.finish_reason, FinishReason::kCancelled);
  testing::ExpectAllBlocksFree(*second);
}

TEST_F(EngineApiTest, TextDeltasTimingsAndLogprobs) {
  auto engine = MakeEngine();
  Request r = LongRequest(40);
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = 3;
  auto handle = engine->Submit(r);
  ASSERT_TRUE(handle.ok());
  std::vector<TokenEvent> events;
  while (auto event = (*handle)->Next()) events.push_back(std::move(*event));
  ASSERT_EQ(events.size(), 40u);
  std::vector<int32_t> ids;
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].index, int32_t(i));
    EXPECT_EQ(events[i].request_id, (*handle)->id());
    ASSERT_EQ(events[i].top_logprobs.size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(events[i].top_logprobs[0].token, events[i].token);
    EXPECT_FLOAT_EQ(events[i].top_logprobs[0].logprob, events[i].logprob);
    EXPECT_LE(events[i].logprob, 0.0f);
    EXPECT_EQ(events[i].last(), i + 1 == events.size());
    ids.push_back(events[i].token);
    text += events[i].text_delta;
  }
  EXPECT_EQ(text, model_.tokenizer->Decode(ids, /*skip_special=*/true, /*continuation=*/true));
  const RequestTiming& t = events.back().timing;
  EXPECT_EQ(t.prompt_tokens, 3);
  EXPECT_EQ(t.generated_tokens, 40);
  EXPECT_GT(t.ttft_s, 0);
  EXPECT_LE(t.queue_s, t.ttft_s);
  EXPECT_LE(t.ttft_s, t.e2e_s);
  EXPECT_GT(t.tpot_s, 0);
}

TEST_F(EngineApiTest, StopStringEndsGenerationAndIsNotEmitted) {
  auto engine = MakeEngine();
  Collected full = testing::Collect(**engine->Submit(LongRequest(60)));
  ASSERT_GT(full.text.size(), 20u);
  // A stop string taken from the middle of the text: the output must be the text before its first occurrence.
  const std::string stop = full.text.substr(full.text.size() / 2, 6);
  Request r = LongRequest(60);
  r.stop = {"never-appears", stop};
  Collected stopped = testing::Collect(**engine->Submit(r));
  EXPECT_EQ(stopped.last.finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped.last.stop_kind, StopKind::kStopString);
  EXPECT_EQ(stopped.last.stop_string, stop);
  EXPECT_EQ(stopped.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_LT(stopped.tokens.size(), full.tokens.size());

  // A stop token id ends the stream with that token.
  Request t = LongRequest(60);
  t.stop_token_ids = {full.tokens[10]};
  Collected by_token = testing::Collect(**engine->Submit(t));
  EXPECT_EQ(by_token.last.stop_kind, StopKind::kStopToken);
  EXPECT_EQ(by_token.tokens.back(), full.tokens[10]);
  EXPECT_LE(by_token.tokens.size(), 11u);
  testing::ExpectAllBlocksFree(*engine);
}

TEST_F(EngineApiTest, StatsCountStepsAndTokens) {
  auto engine = MakeEngine();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(*engine->Submit(LongRequest(20)));
  for (auto& h : handles) testing::Collect(*h);
  testing::ExpectAllBlocksFree(*engine);
  const EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.generation_tokens_total, 60);
  EXPECT_EQ(stats.prompt_tokens_total, 9);
  EXPECT_EQ(stats.requests_finished_length, 3);
  EXPECT_EQ(stats.requests_submitted, 3);
  EXPECT_GE(stats.steps, 20);
  EXPECT_EQ(stats.step_rows, 0);  // idle
  EXPECT_GT(stats.kv_blocks_total, 0);
}

}  // namespace
}  // namespace lockstep
