// The benchmark libraries against a scripted OpenAI-style server (fast, no model): bench compare's
// result.json shape, overlapping parallel requests, ignore_eos detection; bench serve's metrics and outputs;
// the SVG writer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "client/bench_compare.h"
#include "client/bench_conversation.h"
#include "client/bench_serve.h"
#include "client/svg.h"
#include "client/svg_check.h"
#include "client/test_server.h"
#include "testing/testdata.h"

namespace lockstep::client {
namespace {

using testing::TestRequest;
using testing::TestResponse;

// Streams max_tokens one-word chunks (or `cap` when the server "ignores" ignore_eos), 3 ms apart.
testing::TestHttpServer::Handler FakeOpenAi(int cap = 1 << 30) {
  return [cap](const TestRequest& req) {
    if (req.target == "/v1/models") {
      TestResponse r;
      r.pieces = {R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})"};
      return r;
    }
    const auto body = nlohmann::json::parse(req.body);
    const int n = std::min(cap, body.value("max_tokens", 8));
    std::vector<std::string> words(n, "w ");
    TestResponse r = testing::ChatSseResponse(words, n, 3);
    return r;
  };
}

std::unique_ptr<OpenAiClient> Client(const std::string& url) {
  ClientOptions o;
  o.base_url = *ApiBaseUrl(url);
  o.timeout_s = 30;
  return std::move(*OpenAiClient::Create(o));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(BenchCompareTest, WritesTheResultShapeAndParallelRequestsOverlap) {
  testing::TestHttpServer server(FakeOpenAi());
  auto client = Client(server.url());
  CompareOptions o;
  o.questions = {"a?", "b?", "c?"};
  o.max_tokens = 5;
  o.repeat = 2;
  o.model = "fake-model";
  o.server = server.url();
  auto report = RunCompare(*client, o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->eos_warnings.empty());
  const auto& parallel = report->modes[1];
  ASSERT_EQ(parallel.name, "parallel");
  for (const auto& run : parallel.runs) {
    ASSERT_EQ(run.spans.size(), 3u);
    double latest_start = 0, earliest_end = 1e9;
    for (const auto& s : run.spans)
      latest_start = std::max(latest_start, s.start_s), earliest_end = std::min(earliest_end, s.end_s);
    EXPECT_LT(latest_start, earliest_end) << "parallel requests did not overlap";
    EXPECT_EQ(run.output_tokens, 15);
  }
  const auto& sequential = report->modes[2];
  for (const auto& run : sequential.runs) {
    for (size_t i = 1; i < run.spans.size(); ++i) EXPECT_GE(run.spans[i].start_s, run.spans[i - 1].end_s);
  }
  EXPECT_EQ(report->modes[0].runs[0].output_tokens, 15);  // combined: 3 x 5
  const std::string dir = testing::MakeTempDir("bench-compare");
  ASSERT_TRUE(WriteCompareOutputs(*report, dir).ok());
  const auto j = nlohmann::json::parse(ReadFile(dir + "/result.json"));
  EXPECT_EQ(j.size(), 8u);
  for (const char* key : {"modes", "speedup_parallel_over_combined", "ratios_to_combined", "context", "cold",
                          "notes", "server", "model"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["modes"].size(), 4u);
  for (const char* mode : {"combined", "parallel", "sequential", "fan-out"}) {
    const auto& m = j["modes"][mode];
    EXPECT_EQ(m.size(), 11u);
    for (const char* key : {"median_wall_s", "median_ttft_s", "output_tokens", "tokens_per_s", "walls_s",
                            "prompt_tokens", "cached_tokens", "computed_tokens", "not_comparable"}) {
      EXPECT_TRUE(m.contains(key)) << mode << "." << key;
    }
    // fan-out ran once: this server does not fan out (BenchCompareTest.AServerThatDoesNotFanOut...).
    EXPECT_EQ(m["walls_s"].size(), std::string(mode) == "fan-out" ? 1u : 2u);
    EXPECT_TRUE(m["cached_tokens"].is_null()) << mode;  // this server reports no cache
  }
  EXPECT_EQ(j["ratios_to_combined"]["parallel"].size(), 2u);
  // The fake server knows no fan_out: one answer, flagged.
  ASSERT_EQ(report->notes.size(), 1u);
  EXPECT_NE(report->notes[0].find("did not fan out"), std::string::npos);
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(testing::CheckSvg(ReadFile(dir + "/chart.svg")), "");
  EXPECT_NE(ReadFile(dir + "/result.md").find("| parallel |"), std::string::npos);
}

// Regression (interop with llama.cpp's server, which ignores "fan_out"): the fan-out mode came back as one
// answer of one question's max_tokens, yet got a ratio to combined, a chart bar and the footer's "every
// answer reached max_tokens", so it looked several times faster than combined for a fifth of the text. Now
// the mode is marked not comparable: run once, no ratio, no bar, no such claim.
TEST(BenchCompareTest, AServerThatDoesNotFanOutGetsNoFanOutFigures) {
  testing::TestHttpServer server(FakeOpenAi());  // ignores fan_out
  CompareOptions o;
  o.questions = {"a?", "b?", "c?", "d?", "e?"};
  o.max_tokens = 4;
  o.repeat = 2;
  auto report = RunCompare(*Client(server.url()), o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const CompareMode* fan_out = report->Mode("fan-out");
  ASSERT_NE(fan_out, nullptr);
  EXPECT_EQ(fan_out->not_comparable, "not fanned out by this server");
  EXPECT_EQ(fan_out->runs.size(), 1u);
  EXPECT_EQ(fan_out->output_tokens, 4);  // one answer of one question's max_tokens
  EXPECT_EQ(report->Mode("combined")->output_tokens, 20);
  for (const char* mode : {"combined", "parallel", "sequential"}) {
    EXPECT_EQ(report->Mode(mode)->not_comparable, "") << mode;
    EXPECT_EQ(report->Mode(mode)->runs.size(), 2u) << mode;
  }
  for (const auto& [name, values] : report->ratios_to_combined) EXPECT_NE(name, "fan-out");
  EXPECT_EQ(report->ratios_to_combined.size(), 2u);  // parallel and sequential
  const nlohmann::json j = CompareJson(*report);
  EXPECT_TRUE(j["ratios_to_combined"]["fan-out"].is_null());
  EXPECT_EQ(j["ratios_to_combined"]["parallel"].size(), 2u);
  EXPECT_EQ(j["modes"]["fan-out"]["not_comparable"], "not fanned out by this server");
  EXPECT_TRUE(j["modes"]["parallel"]["not_comparable"].is_null());
  const std::string md = CompareMarkdown(*report);
  EXPECT_EQ(md.find("Fixed output lengths"), std::string::npos) << md;
  EXPECT_NE(md.find("| fan-out *(not comparable: not fanned out by this server)* |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- fan-out: none, not comparable"), std::string::npos) << md;
  EXPECT_NE(md.find("produced a different amount of text: fan-out"), std::string::npos) << md;
  const std::string svg = CompareSvg(*report);
  EXPECT_EQ(testing::CheckSvg(svg), "");
  EXPECT_EQ(svg.find("fan-out: "), std::string::npos) << "a wall-time bar for fan-out";
  EXPECT_NE(svg.find("parallel: "), std::string::npos);
}

TEST(BenchCompareTest, ReportsAServerThatIgnoresIgnoreEos) {
  testing::TestHttpServer server(FakeOpenAi(/*cap=*/2));
  auto client = Client(server.url());
  CompareOptions o;
  o.questions = {"a?", "b?"};
  o.max_tokens = 4;
  o.repeat = 1;
  auto report = RunCompare(*client, o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->eos_warnings.size(), 6u);  // combined 1 + parallel 2 + sequential 2 + fan-out 1
  EXPECT_NE(CompareMarkdown(*report).find("did not honour ignore_eos"), std::string::npos);
}

// A server with a prefix cache and fan-out: reports cached prompt tokens (lockstep's usage field, or
// llama.cpp's timings.prompt_n) and answers a "fan_out" request with one choice per question.
testing::TestHttpServer::Handler FakeCachingServer(bool llama_style) {
  return [llama_style](const TestRequest& req) {
    using nlohmann::json;
    if (req.target == "/v1/models") {
      TestResponse r;
      r.pieces = {R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})"};
      return r;
    }
    const json body = json::parse(req.body);
    const std::string prompt = body["messages"].back()["content"];
    const int choices = body.value("fan_out", "") == "choices" ? 3 : 1;
    const int max_tokens = body.value("max_tokens", 8);
    TestResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.chunked = true;
    for (int c = 0; c < choices; ++c) {
      for (int t = 0; t < max_tokens; ++t) {
        json chunk = {{"object", "chat.completion.chunk"}};
        chunk["choices"] =
            json::array({{{"index", c}, {"delta", {{"content", "w "}}}, {"finish_reason", nullptr}}});
        r.pieces.push_back("data: " + chunk.dump() + "\n\n");
      }
    }
    const int prompt_tokens = static_cast<int>(prompt.size());  // one "token" per character
    const int cached = prompt.rfind("DOC", 0) == 0 ? 4 : 0;     // the shared context was cached
    json usage = {{"object", "chat.completion.chunk"}, {"choices", json::array()}};
    usage["usage"] = {{"prompt_tokens", prompt_tokens}, {"completion_tokens", max_tokens * choices}};
    if (llama_style) {
      usage["timings"] = {{"prompt_n", prompt_tokens - cached}};
    } else {
      usage["usage"]["prompt_tokens_details"] = {{"cached_tokens", cached}};
    }
    r.pieces.push_back("data: " + usage.dump() + "\n\n");
    r.pieces.push_back("data: [DONE]\n\n");
    return r;
  };
}

TEST(BenchCompareTest, ContextCachedTokensAndServerSideFanOut) {
  for (bool llama_style : {false, true}) {
    testing::TestHttpServer server(FakeCachingServer(llama_style));
    CompareOptions o;
    o.questions = {"a?", "b?", "c?"};
    o.context = "DOC text";
    o.max_tokens = 4;
    o.repeat = 2;
    auto report = RunCompare(*Client(server.url()), o, nullptr);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->notes.empty());
    EXPECT_TRUE(report->eos_warnings.empty());
    const CompareMode* parallel = report->Mode("parallel");
    const CompareMode* fan_out = report->Mode("fan-out");
    ASSERT_NE(parallel, nullptr);
    ASSERT_NE(fan_out, nullptr);
    EXPECT_EQ(parallel->cached_tokens, 3 * 4);  // three requests, 4 cached each
    EXPECT_EQ(parallel->prompt_tokens, 3 * int(std::string("DOC text\n\na?").size()));
    EXPECT_EQ(fan_out->runs[0].choices, 3);
    EXPECT_EQ(fan_out->output_tokens, 12);  // 3 questions x 4 tokens, each its own sequence
    EXPECT_EQ(report->Mode("combined")->output_tokens, 12);
    const std::string md = CompareMarkdown(*report);
    EXPECT_NE(md.find("| cached | computed |"), std::string::npos);
    EXPECT_NE(md.find("shared context"), std::string::npos);
    ASSERT_EQ(report->ratios_to_combined.size(), 3u);
    EXPECT_EQ(report->ratios_to_combined[2].first, "fan-out");
  }
}

TEST(BenchCompareTest, ColdRunsStartWithTheirOwnLineAndModesCanBeChosen) {
  std::vector<std::string> prompts;
  std::mutex mutex;
  testing::TestHttpServer server([&](const TestRequest& req) {
    if (req.target != "/v1/models") {
      std::lock_guard<std::mutex> lock(mutex);
      prompts.push_back(nlohmann::json::parse(req.body)["messages"].back()["content"]);
    }
    return FakeOpenAi()(req);
  });
  CompareOptions o;
  o.questions = {"a?", "b?"};
  o.context = "DOC";
  o.modes = {"parallel", "combined"};
  o.cold = true;
  o.repeat = 1;
  o.max_tokens = 2;
  auto report = RunCompare(*Client(server.url()), o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->modes.size(), 2u);
  EXPECT_EQ(report->modes[0].name, "parallel");
  ASSERT_EQ(prompts.size(), 1u + 2u + 1u);  // warm-up, parallel, combined
  EXPECT_EQ(prompts[0], "a?");              // the warm-up has no context
  EXPECT_EQ(prompts[1].rfind("Run 1, parallel.\n\nDOC\n\n", 0), 0u) << prompts[1];
  EXPECT_EQ(prompts[3].rfind("Run 1, combined.\n\nDOC\n\n", 0), 0u) << prompts[3];
  o.modes = {"parallel", "nonsense"};
  EXPECT_FALSE(RunCompare(*Client(server.url()), o, nullptr).ok());
}

TEST(BenchCompareTest, TheBuiltinContextComesWithItsQuestions) {
  EXPECT_GT(BuiltinContext().size(), 2500u);
  EXPECT_EQ(BuiltinContextQuestions().size(), 5u);
}

TEST(BenchCompareTest, FailsWithTheServersError) {
  testing::TestHttpServer server([](const TestRequest&) {
    TestResponse r;
    r.status = 400;
    r.pieces = {R"({"error":{"message":"model not found"}})"};
    return r;
  });
  CompareOptions o;
  o.questions = BuiltinQuestions();
  auto report = RunCompare(*Client(server.url()), o, nullptr);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("model not found"), std::string::npos);
}

TEST(BenchServeTest, MetricsAndOutputs) {
  testing::TestHttpServer server(FakeOpenAi());
  auto client = Client(server.url());
  std::mt19937_64 rng(1);
  std::vector<WorkItem> work;
  for (int i = 0; i < 12; ++i) work.push_back({{{"user", RandomPrompt(16, rng)}}, 4 + i % 3});
  ServeOptions o;
  o.rate = 200;
  o.burstiness = 0.5;
  o.warmup = 1;
  o.slo_ttft_ms = 10000;
  o.slo_tpot_ms = 10000;
  auto report = RunServe(*client, work, o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->completed, 12);
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->total_output_tokens, 4 * 4 + 4 * 5 + 4 * 6);
  EXPECT_EQ(report->total_input_tokens, 12 * 7);  // the fake server reports 7 prompt tokens
  EXPECT_GT(report->goodput, 0);
  const auto& ttft = report->latency_ms.at("ttft");
  EXPECT_LE(ttft.median, ttft.p90);
  EXPECT_LE(ttft.p90, ttft.p99);
  EXPECT_GT(report->latency_ms.at("itl").mean, 0);
  for (size_t i = 1; i < report->records.size(); ++i)
    EXPECT_GE(report->records[i].send_s, report->records[i - 1].send_s);
  const std::string dir = testing::MakeTempDir("bench-serve");
  ASSERT_TRUE(WriteServeOutputs(*report, dir).ok());
  const auto j = nlohmann::json::parse(ReadFile(dir + "/result.json"));
  for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
    for (const char* stat : {"mean", "median", "p90", "p99"})
      EXPECT_TRUE(j[key].contains(stat)) << key << stat;
  }
  EXPECT_EQ(j["requests"].size(), 12u);
  EXPECT_EQ(testing::CheckSvg(ReadFile(dir + "/latency_cdf.svg")), "");
  EXPECT_EQ(testing::CheckSvg(ReadFile(dir + "/throughput.svg")), "");
}

TEST(BenchServeTest, ClosedLoopConcurrency) {
  testing::TestHttpServer server(FakeOpenAi());
  std::vector<WorkItem> work(6, WorkItem{{{"user", "hi"}}, 3});
  ServeOptions o;
  o.concurrency = 2;
  auto report = RunServe(*Client(server.url()), work, o, nullptr);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->completed, 6);
  EXPECT_EQ(report->goodput, -1);  // no SLO given
}

TEST(BenchServeTest, MultiTurnConversationsResendTheirHistory) {
  std::mutex mutex;
  std::vector<size_t> message_counts;
  testing::TestHttpServer server([&](const TestRequest& req) {
    if (req.target != "/v1/models") {
      const auto body = nlohmann::json::parse(req.body);
      std::lock_guard<std::mutex> lock(mutex);
      message_counts.push_back(body["messages"].size());
      EXPECT_EQ(body["messages"][0]["role"], "system");
    }
    return FakeCachingServer(false)(req);
  });
  ConversationOptions c;
  c.conversations = 2;
  c.turns = 3;
  c.system_words = 50;
  c.user_words = 5;
  c.output_len = 3;
  ServeOptions o;
  auto report = RunConversations(*Client(server.url()), c, o, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->completed, 6);
  std::sort(message_counts.begin(), message_counts.end());
  EXPECT_EQ(message_counts, (std::vector<size_t>{2, 2, 4, 4, 6, 6}));  // system + 1, 2, 3 exchanges
  ASSERT_EQ(report->ttft_by_turn_ms.size(), 3u);
  EXPECT_GE(report->prefix_hit_ratio, 0);  // reported (the fake caches nothing here)
  const std::string dir = testing::MakeTempDir("bench-serve-chat");
  ASSERT_TRUE(WriteServeOutputs(*report, dir).ok());
  EXPECT_EQ(testing::CheckSvg(ReadFile(dir + "/turns.svg")), "");
  const auto j = nlohmann::json::parse(ReadFile(dir + "/result.json"));
  EXPECT_EQ(j["multi_turn"]["ttft_ms_by_turn"].size(), 3u);
  EXPECT_TRUE(j.contains("prefix_hit_ratio"));
  EXPECT_NE(ServeMarkdown(*report).find("prefix-cache hit ratio"), std::string::npos);
}

TEST(BenchWorkloadTest, LengthsSloDatasetAndArrivals) {
  EXPECT_EQ(ParseLengthSpec("128", "--prompt-len")->length, 128);
  EXPECT_EQ(ParseLengthSpec("128:32", "--prompt-len")->spread, 32);
  EXPECT_FALSE(ParseLengthSpec("0", "--prompt-len").ok());
  EXPECT_FALSE(ParseLengthSpec("10:10", "--prompt-len").ok());
  EXPECT_FALSE(ParseLengthSpec("x", "--output-len").ok());
  ServeOptions o;
  EXPECT_TRUE(ParseSlo("ttft=200,tpot=50", &o).ok());
  EXPECT_EQ(o.slo_ttft_ms, 200);
  EXPECT_EQ(o.slo_tpot_ms, 50);
  EXPECT_FALSE(ParseSlo("ttft=abc", &o).ok());
  EXPECT_FALSE(ParseSlo("latency=5", &o).ok());
  std::mt19937_64 rng(3);
  std::string p = RandomPrompt(50, rng);
  EXPECT_EQ(std::count(p.begin(), p.end(), ' '), 49);
  const auto offsets = ArrivalOffsets(2000, 10, 1, rng);
  EXPECT_EQ(offsets[0], 0);
  EXPECT_NEAR(offsets.back() / 1999, 0.1, 0.02);  // mean gap 1/rate
  EXPECT_EQ(ArrivalOffsets(3, 0, 1, rng), std::vector<double>(3, 0.0));
  const std::string dir = testing::MakeTempDir("dataset");
  std::ofstream(dir + "/ok.jsonl") << "# comment\n{\"prompt\": \"hi\", \"output_len\": 7}\n\n"
                                      "{\"messages\": [{\"role\": \"user\", \"content\": \"yo\"}]}\n";
  auto items = LoadDataset(dir + "/ok.jsonl", LengthSpec{9, 0}, rng);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].max_tokens, 7);
  EXPECT_EQ((*items)[1].max_tokens, 9);
  std::ofstream(dir + "/bad.jsonl") << "{\"prompt\": \"hi\"}\n{\"prompt\": 5}\n";
  auto bad = LoadDataset(dir + "/bad.jsonl", LengthSpec{9, 0}, rng);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.jsonl:2"), std::string::npos) << bad.status().message();
}

TEST(SvgTest, EscapesTextAndIsWellFormed) {
  const std::string svg = LineChart("a < b & \"c\"", "x", "y", {{"s<1>", {{0, 0}, {1, 2}}}});
  EXPECT_EQ(testing::CheckSvg(svg), "");
  EXPECT_NE(svg.find("a &lt; b &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(testing::CheckSvg("<svg><g></svg>"), "");
  const auto ticks = NiceTicks(0, 0.93);
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(ticks.front(), 0);
  EXPECT_GE(ticks.back(), 0.9);
}

}  // namespace
}  // namespace lockstep::client
