// Unit tests: Prometheus text format of the metrics registry, SSE framing and parsing, request field
// validation.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/metrics.h"
#include "server/request_fields.h"
#include "server/sse.h"

namespace lockstep::server {
namespace {

TEST(MetricsTest, TextFormatOfCountersGaugesAndHistograms) {
  MetricsRegistry registry;
  MetricFamily* requests = registry.Counter("lockstep_requests_total", "Requests.");
  MetricFamily* running = registry.Gauge("lockstep_running", "Running.");
  MetricFamily* latency = registry.Histogram("lockstep_latency_seconds", "Latency.", {0.1, 1});
  requests->Inc({{"status", "200"}});
  requests->Inc({{"status", "200"}});
  requests->Inc({{"status", "a\"b\\c\n"}});
  running->Set(3);
  latency->Observe(0.05);
  latency->Observe(0.5);
  latency->Observe(7);
  const std::string text = registry.Render();
  EXPECT_EQ(text,
            "# HELP lockstep_requests_total Requests.\n"
            "# TYPE lockstep_requests_total counter\n"
            "lockstep_requests_total{status=\"200\"} 2\n"
            "lockstep_requests_total{status=\"a\\\"b\\\\c\\n\"} 1\n"
            "# HELP lockstep_running Running.\n"
            "# TYPE lockstep_running gauge\n"
            "lockstep_running 3\n"
            "# HELP lockstep_latency_seconds Latency.\n"
            "# TYPE lockstep_latency_seconds histogram\n"
            "lockstep_latency_seconds_bucket{le=\"0.1\"} 1\n"
            "lockstep_latency_seconds_bucket{le=\"1\"} 2\n"
            "lockstep_latency_seconds_bucket{le=\"+Inf\"} 3\n"
            "lockstep_latency_seconds_sum 7.55\n"
            "lockstep_latency_seconds_count 3\n");
  EXPECT_EQ(requests->Value({{"status", "200"}}), 2);
  EXPECT_EQ(latency->Value(), 3);
}

TEST(MetricsTest, EmptyFamiliesStillRender) {
  MetricsRegistry registry;
  registry.Gauge("g", "G.");
  registry.Histogram("h", "H.", {1});
  EXPECT_EQ(registry.Render(),
            "# HELP g G.\n# TYPE g gauge\ng 0\n# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\n"
            "h_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
}

TEST(SseTest, FramingAndParsingRoundTrip) {
  EXPECT_EQ(SseEvent("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseEvent("line1\nline2", "error"), "event: error\ndata: line1\ndata: line2\n\n");
  EXPECT_EQ(SseDone(), "data: [DONE]\n\n");
  const std::string stream = SseEvent("one") + ": comment\n\n" + SseEvent("two\nlines", "x") + SseDone();
  // Every split of the byte stream gives the same events.
  for (size_t split = 0; split <= stream.size(); ++split) {
    SseParser parser;
    auto events = parser.Feed(stream.substr(0, split));
    auto rest = parser.Feed(stream.substr(split));
    events.insert(events.end(), rest.begin(), rest.end());
    ASSERT_EQ(events.size(), 3u) << split;
    EXPECT_EQ(events[0].data, "one");
    EXPECT_EQ(events[1].data, "two\nlines");
    EXPECT_EQ(events[1].event, "x");
    EXPECT_EQ(events[2].data, "[DONE]");
  }
  SseParser crlf;
  auto events = crlf.Feed("data: a\r\n\r\ndata:b\r\n\r\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].data, "b");
}

TEST(RequestFieldsTest, TypesRangesAndFieldNames) {
  const auto body = nlohmann::json::parse(R"({"t": 0.5, "n": 3, "f": 2.0, "s": "x", "b": true, "nul": null,
                                             "stop": ["a", "b"], "bad": "7", "big": 1e300})");
  FieldReader ok(body);
  EXPECT_EQ(ok.Number("t", 0, 2), 0.5);
  EXPECT_EQ(ok.Int("n", 1, 5), 3);
  EXPECT_EQ(ok.Int("f", 1, 5), 2);  // 2.0 is an integer value
  EXPECT_EQ(ok.String("s"), "x");
  EXPECT_EQ(ok.Bool("b"), true);
  EXPECT_FALSE(ok.Number("nul", 0, 1).has_value());  // null = absent
  EXPECT_FALSE(ok.Number("missing", 0, 1).has_value());
  EXPECT_EQ(ok.StringOrList("stop", 4)->size(), 2u);
  EXPECT_FALSE(ok.failed());

  FieldReader wrong_type(body, "parameters");
  wrong_type.Number("bad", 0, 10);
  ASSERT_TRUE(wrong_type.failed());
  EXPECT_EQ(wrong_type.error().param, "parameters.bad");
  EXPECT_NE(wrong_type.error().status.message().find("parameters.bad must be a number"), std::string::npos);

  FieldReader out_of_range(body);
  out_of_range.Int("n", 5, 9);
  EXPECT_EQ(out_of_range.error().param, "n");
  FieldReader too_many(body);
  too_many.StringOrList("stop", 1);
  EXPECT_TRUE(too_many.failed());
  FieldReader huge(body);
  huge.Int("big", 0, 100);
  EXPECT_TRUE(huge.failed());
  FieldReader not_bool(body);
  not_bool.Bool("s");
  EXPECT_EQ(not_bool.error().param, "s");
}

TEST(ApiErrorTest, OneMappingForBothFlavours) {
  const ApiError invalid = ApiError::Field("temperature", "temperature must be a number");
  EXPECT_EQ(HttpStatusFor(invalid, ApiFlavor::kOpenAI), 400);
  EXPECT_EQ(HttpStatusFor(invalid, ApiFlavor::kTgi), 422);
  const ApiError full{ResourceExhausted("queue full"), "", false};
  EXPECT_EQ(HttpStatusFor(full, ApiFlavor::kOpenAI), 503);
  EXPECT_EQ(HttpStatusFor(full, ApiFlavor::kTgi), 429);
  EXPECT_EQ(ErrorHeaders(full, ApiFlavor::kOpenAI)[0].first, "Retry-After");
  const ApiError malformed{InvalidArgument("bad json"), "", true};
  EXPECT_EQ(HttpStatusFor(malformed, ApiFlavor::kTgi), 400);
  const ApiError generation{Internal("boom"), "", false};
  EXPECT_EQ(HttpStatusFor(generation, ApiFlavor::kTgi), 424);
  EXPECT_EQ(HttpStatusFor(generation, ApiFlavor::kOpenAI), 500);
  const auto body = nlohmann::json::parse(ErrorBody(invalid, ApiFlavor::kOpenAI));
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(body["error"]["code"].is_null());
  const auto tgi = nlohmann::json::parse(ErrorBody(full, ApiFlavor::kTgi));
  EXPECT_EQ(tgi["error_type"], "overloaded");
  EXPECT_EQ(tgi["error"], "queue full");
}

TEST(ApiErrorTest, RetryAfterIsTheTimeTheQueueAheadTakesToDrain) {
  // (waiting + 1) requests, `running` at a time, each taking mean_run_s; ceil, clamped to 1..60.
  EXPECT_EQ(RetryAfterSeconds(2, 1, 3.0), 9);
  EXPECT_EQ(RetryAfterSeconds(9, 2, 0.5), 3);
  EXPECT_EQ(RetryAfterSeconds(0, 0, 1.5), 2);  // nothing running counts as one
  EXPECT_EQ(RetryAfterSeconds(3, 4, 0.1), 1);  // at least 1
  EXPECT_EQ(RetryAfterSeconds(1000, 1, 2.0), 60);
  EXPECT_EQ(RetryAfterSeconds(5, 1, 0.0), 1);  // no request has finished yet
  ApiError full{ResourceExhausted("queue full"), "", false};
  full.retry_after_s = RetryAfterSeconds(4, 1, 2.0);
  EXPECT_EQ(ErrorHeaders(full, ApiFlavor::kOpenAI)[0].second, "10");
  EXPECT_EQ(ErrorHeaders(full, ApiFlavor::kTgi)[0].second, "10");
}

}  // namespace
}  // namespace lockstep::server
