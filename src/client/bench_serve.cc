#include "client/bench_serve.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdio>

#include "client/bench_conversation.h"
#include "client/fan_out.h"
#include "client/output_files.h"
#include "client/stats.h"
#include "client/svg.h"

namespace lockstep::client {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

ChatRequest ToRequest(const WorkItem& w, const ServeOptions& o) {
  ChatRequest r;
  r.model = o.model;
  r.messages = w.messages;
  r.max_tokens = w.max_tokens;
  r.temperature = 0;
  r.ignore_eos = o.ignore_eos;
  return r;
}

}  // namespace

ServeRecord ToServeRecord(const ChatResult& r, Clock::time_point bench_start, int max_tokens) {
  ServeRecord rec;
  rec.ok = r.status.ok();
  rec.endpoint = r.endpoint;
  rec.error = r.status.ok() ? "" : r.status.message();
  rec.max_tokens = max_tokens;
  rec.send_s = std::chrono::duration<double>(r.start - bench_start).count();
  rec.ttft_s = r.ttft_s;
  rec.e2e_s = r.duration_s;
  rec.prompt_tokens = r.prompt_tokens;
  rec.cached_tokens = r.cached_tokens;
  rec.output_tokens = r.completion_tokens;
  if (rec.output_tokens > 1) rec.tpot_s = (rec.e2e_s - rec.ttft_s) / (rec.output_tokens - 1);
  for (size_t i = 0; i < r.token_times_s.size(); ++i) {
    rec.token_times_s.push_back(rec.send_s + r.token_times_s[i]);
    if (i > 0) rec.itl_s.push_back(r.token_times_s[i] - r.token_times_s[i - 1]);
  }
  return rec;
}

namespace {

// Open loop: request i is sent at offsets[i] after the start, whatever is in flight.
asio::awaitable<std::vector<ChatResult>> OpenLoop(const OpenAiClient& client,
                                                  const std::vector<ChatRequest>& requests,
                                                  const std::vector<double>& offsets, Clock::time_point start,
                                                  CancellationToken* token,
                                                  const std::function<void()>& on_done) {
  auto ex = co_await asio::this_coro::executor;
  auto results = std::make_shared<std::vector<ChatResult>>(requests.size(), NotRunResult());
  auto remaining = std::make_shared<size_t>(requests.size());
  auto all_done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto when =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offsets[i]));
    const double wait = std::chrono::duration<double>(when - Clock::now()).count();
    if (wait > 0) co_await SleepFor(wait, token);
    asio::co_spawn(
        ex,
        [&client, &requests, results, i, token]() -> asio::awaitable<void> {
          (*results)[i] = co_await client.Chat(requests[i], token);
        },
        [remaining, all_done, &on_done](std::exception_ptr) {
          if (on_done) on_done();
          if (--*remaining == 0) all_done->cancel();
        });
  }
  while (*remaining > 0) {
    boost::system::error_code ec;
    co_await all_done->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return std::move(*results);
}

LatencySummary Summarize(const std::vector<double>& seconds) {
  std::vector<double> ms;
  for (double s : seconds) ms.push_back(s * 1000);
  return {Mean(ms), Median(ms), Percentile(ms, 90), Percentile(ms, 99)};
}

}  // namespace

void AggregateServeReport(ServeReport* report) {
  std::vector<double> ttft, tpot, itl, e2e;
  for (const ServeRecord& r : report->records) {
    if (!r.ok) {
      ++report->failed;
      continue;
    }
    ++report->completed;
    report->total_output_tokens += r.output_tokens;
    if (r.prompt_tokens > 0) report->total_input_tokens += r.prompt_tokens;
    if (report->options.ignore_eos && r.output_tokens < r.max_tokens) ++report->short_outputs;
    ttft.push_back(r.ttft_s);
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    e2e.push_back(r.e2e_s);
  }
  report->latency_ms = {
      {"ttft", Summarize(ttft)}, {"tpot", Summarize(tpot)}, {"itl", Summarize(itl)}, {"e2e", Summarize(e2e)}};
  const double d = std::max(report->duration_s, 1e-9);
  report->request_throughput = report->completed / d;
  report->output_throughput = report->total_output_tokens / d;
  const ServeOptions& o = report->options;
  if (o.slo_ttft_ms > 0 || o.slo_tpot_ms > 0) {
    int good = 0;
    for (const ServeRecord& r : report->records) {
      good += r.ok && (o.slo_ttft_ms <= 0 || r.ttft_s * 1000 <= o.slo_ttft_ms) &&
              (o.slo_tpot_ms <= 0 || r.tpot_s * 1000 <= o.slo_tpot_ms);
    }
    report->goodput = good / d;
  }
  long prompt = 0;
  bool reported = false;
  std::vector<double> ttft_sum(size_t(report->turns), 0), ttft_n(size_t(report->turns), 0);
  std::vector<double> turn_prompt(size_t(report->turns), 0), turn_cached(size_t(report->turns), 0);
  for (const ServeRecord& r : report->records) {
    if (!r.ok || r.prompt_tokens < 0) continue;
    prompt += r.prompt_tokens;
    if (r.cached_tokens >= 0) {
      reported = true;
      report->total_cached_tokens += r.cached_tokens;
    }
    if (r.turn >= 0 && r.turn < report->turns) {
      ttft_sum[size_t(r.turn)] += r.ttft_s * 1000;
      ttft_n[size_t(r.turn)] += 1;
      turn_prompt[size_t(r.turn)] += r.prompt_tokens;
      turn_cached[size_t(r.turn)] += std::max(0, r.cached_tokens);
    }
  }
  report->prefix_hit_ratio =
      reported && prompt > 0 ? double(report->total_cached_tokens) / double(prompt) : -1;
  report->ttft_by_turn_ms.clear();
  report->hit_ratio_by_turn.clear();
  for (int t = 0; t < report->turns; ++t) {
    report->ttft_by_turn_ms.push_back(ttft_n[size_t(t)] > 0 ? ttft_sum[size_t(t)] / ttft_n[size_t(t)] : 0);
    report->hit_ratio_by_turn.push_back(
        turn_prompt[size_t(t)] > 0 ? turn_cached[size_t(t)] / turn_prompt[size_t(t)] : 0);
  }
}

Status ParseSlo(const std::string& text, ServeOptions* options) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(pos, comma - pos);
    const size_t eq = part.find('=');
    char* end = nullptr;
    const double value = eq == std::string::npos ? 0 : std::strtod(part.c_str() + eq + 1, &end);
    if (eq == std::string::npos || end == part.c_str() + eq + 1 || *end != '\0' || !(value > 0)) {
      return InvalidArgument("--slo '" + text + "': expected ttft=MS,tpot=MS with positive milliseconds");
    }
    const std::string key = part.substr(0, eq);
    if (key == "ttft") {
      options->slo_ttft_ms = value;
    } else if (key == "tpot") {
      options->slo_tpot_ms = value;
    } else {
      return InvalidArgument("--slo: unknown metric '" + key + "' (expected ttft or tpot)");
    }
    pos = comma + 1;
  }
  return Status::Ok();
}

Result<ServeReport> RunServe(const OpenAiClient& client, const std::vector<WorkItem>& work,
                             const ServeOptions& o, CancellationToken* token,
                             const ServeProgressFn& progress) {
  if (work.empty()) return InvalidArgument("bench serve needs at least one request");
  // NaN or infinite, they would make NaN arrival times: a wait that never ends.
  if (!std::isfinite(o.rate) || o.rate < 0) return InvalidArgument("the rate must be a finite number >= 0");
  if (!std::isfinite(o.burstiness) || !(o.burstiness > 0)) {
    return InvalidArgument("the burstiness must be a finite number > 0");
  }
  std::mt19937_64 rng(o.seed);
  if (o.warmup > 0) {
    std::vector<ChatRequest> warm;
    for (int i = 0; i < o.warmup; ++i) warm.push_back(ToRequest(work[i % work.size()], o));
    auto results = RunBlocking(FanOut(client, warm, 0, token));
    for (const auto& r : results) {
      if (!r.status.ok()) return r.status.WithContext("warm-up request");
    }
  }
  std::vector<ChatRequest> requests;
  for (const WorkItem& w : work) requests.push_back(ToRequest(w, o));
  const int total = static_cast<int>(requests.size());
  int done = 0;
  auto on_done = [&] {
    ++done;
    if (progress) progress(done, total);
  };
  const auto start = Clock::now();
  std::vector<ChatResult> results;
  if (o.concurrency > 0) {
    FanOutCallbacks callbacks;
    callbacks.on_done = [&](size_t, const ChatResult&) { on_done(); };
    results = RunBlocking(FanOut(client, requests, o.concurrency, token, callbacks));
  } else {
    const auto offsets = ArrivalOffsets(total, o.rate, o.burstiness, rng);
    std::function<void()> cb = on_done;
    results = RunBlocking(OpenLoop(client, requests, offsets, start, token, cb));
  }
  ServeReport report;
  report.options = o;
  report.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (token != nullptr && token->cancelled()) return Cancelled("benchmark cancelled");
  for (size_t i = 0; i < results.size(); ++i)
    report.records.push_back(ToServeRecord(results[i], start, requests[i].max_tokens));
  AggregateServeReport(&report);
  return report;
}

json ServeJson(const ServeReport& r) {
  const ServeOptions& o = r.options;
  json j = {{"server", o.server},
            {"model", o.model},
            {"duration_s", r.duration_s},
            {"completed", r.completed},
            {"failed", r.failed},
            {"total_input_tokens", r.total_input_tokens},
            {"total_output_tokens", r.total_output_tokens},
            {"request_throughput", r.request_throughput},
            {"output_throughput", r.output_throughput},
            {"goodput", r.goodput >= 0 ? json(r.goodput) : json(nullptr)},
            {"short_outputs", r.short_outputs},
            {"total_cached_tokens", r.total_cached_tokens},
            {"prefix_hit_ratio", r.prefix_hit_ratio >= 0 ? json(r.prefix_hit_ratio) : json(nullptr)}};
  if (r.turns > 0) {
    j["multi_turn"] = {{"turns", r.turns},
                       {"ttft_ms_by_turn", r.ttft_by_turn_ms},
                       {"prefix_hit_ratio_by_turn", r.hit_ratio_by_turn}};
  }
  j["config"] = {{"rate", o.rate > 0 ? json(o.rate) : json("inf")},
                 {"concurrency", o.concurrency},
                 {"burstiness", o.burstiness},
                 {"warmup", o.warmup},
                 {"ignore_eos", o.ignore_eos},
                 {"slo_ttft_ms", o.slo_ttft_ms},
                 {"slo_tpot_ms", o.slo_tpot_ms},
                 {"requests", r.records.size()}};
  for (const auto& [name, s] : r.latency_ms) {
    j[name + "_ms"] = {{"mean", s.mean}, {"median", s.median}, {"p90", s.p90}, {"p99", s.p99}};
  }
  json requests = json::array();
  json by_endpoint = json::object();  // API root -> requests it completed
  for (const ServeRecord& rec : r.records) {
    json x = {{"send_s", rec.send_s},
              {"ttft_s", rec.ttft_s},
              {"tpot_s", rec.tpot_s},
              {"e2e_s", rec.e2e_s},
              {"prompt_tokens", rec.prompt_tokens},
              {"cached_tokens", rec.cached_tokens >= 0 ? json(rec.cached_tokens) : json(nullptr)},
              {"output_tokens", rec.output_tokens},
              {"endpoint", rec.endpoint}};
    if (rec.turn >= 0) {
      x["conversation"] = rec.conversation;
      x["turn"] = rec.turn;
    }
    if (!rec.ok) x["error"] = rec.error;
    requests.push_back(x);
    if (rec.ok) by_endpoint[rec.endpoint] = by_endpoint.value(rec.endpoint, 0) + 1;
  }
  j["requests"] = requests;
  j["completed_by_endpoint"] = by_endpoint;
  return j;
}

std::string ServeMarkdown(const ServeReport& r) {
  const ServeOptions& o = r.options;
  std::string md =
      "# lockstep bench serve\n\nServer `" + o.server + "`, model `" + o.model + "`, " +
      std::to_string(r.records.size()) + " requests, " +
      (o.concurrency > 0 ? "concurrency " + std::to_string(o.concurrency)
                         : (o.rate > 0 ? "rate " + FormatNumber("%g", o.rate) + " req/s, burstiness " +
                                             FormatNumber("%g", o.burstiness)
                                       : std::string("all at once"))) +
      ".\n\n";
  md += "| metric | value |\n|---|---:|\n";
  md += "| duration (s) | " + FormatNumber("%.3f", r.duration_s) + " |\n";
  md += "| completed / failed | " + std::to_string(r.completed) + " / " + std::to_string(r.failed) + " |\n";
  md += "| input / output tokens | " + std::to_string(r.total_input_tokens) + " / " +
        std::to_string(r.total_output_tokens) + " |\n";
  md += "| request throughput (req/s) | " + FormatNumber("%.3f", r.request_throughput) + " |\n";
  md += "| output throughput (tok/s) | " + FormatNumber("%.2f", r.output_throughput) + " |\n";
  if (r.goodput >= 0) md += "| goodput (req/s) | " + FormatNumber("%.3f", r.goodput) + " |\n";
  md += "| prefix-cache hit ratio | " +
        (r.prefix_hit_ratio >= 0
             ? FormatNumber("%.3f", r.prefix_hit_ratio) + " (" + std::to_string(r.total_cached_tokens) +
                   " of " + std::to_string(r.total_input_tokens) + " prompt tokens cached)"
             : std::string("not reported by the server")) +
        " |\n";
  md += "\n| latency (ms) | mean | median | p90 | p99 |\n|---|---:|---:|---:|---:|\n";
  for (const char* name : {"ttft", "tpot", "itl", "e2e"}) {
    const LatencySummary& s = r.latency_ms.at(name);
    md += std::string("| ") + name + " | " + FormatNumber("%.2f", s.mean) + " | " +
          FormatNumber("%.2f", s.median) + " | " + FormatNumber("%.2f", s.p90) + " | " +
          FormatNumber("%.2f", s.p99) + " |\n";
  }
  if (r.turns > 0) {
    md +=
        "\nMulti-turn chat: each turn re-sends the conversation so far.\n\n| turn | mean TTFT (ms) | "
        "prefix-cache hit ratio |\n"
        "|---:|---:|---:|\n";
    for (int t = 0; t < r.turns; ++t) {
      md += "| " + std::to_string(t + 1) + " | " + FormatNumber("%.1f", r.ttft_by_turn_ms[size_t(t)]) +
            " | " + FormatNumber("%.3f", r.hit_ratio_by_turn[size_t(t)]) + " |\n";
    }
  }
  if (r.short_outputs > 0) {
    md += "\n**" + std::to_string(r.short_outputs) +
          " requests produced fewer tokens than max_tokens: the server did not honour ignore_eos.**\n";
  }
  md += std::string("\nCharts: `latency_cdf.svg`, `throughput.svg`") + (r.turns > 0 ? ", `turns.svg`" : "") +
        ".\n";
  return md;
}

std::string ServeLatencySvg(const ServeReport& r) {
  std::vector<ChartSeries> series;
  auto cdf = [](const std::string& name, std::vector<double> values) {
    ChartSeries s{name, {}};
    std::sort(values.begin(), values.end());
    for (size_t i = 0; i < values.size(); ++i)
      s.points.emplace_back(values[i] * 1000, (i + 1.0) / values.size());
    return s;
  };
  std::vector<double> ttft, tpot, itl, e2e;
  for (const ServeRecord& rec : r.records) {
    if (!rec.ok) continue;
    ttft.push_back(rec.ttft_s);
    if (rec.output_tokens > 1) tpot.push_back(rec.tpot_s);
    itl.insert(itl.end(), rec.itl_s.begin(), rec.itl_s.end());
    e2e.push_back(rec.e2e_s);
  }
  series = {cdf("TTFT", ttft), cdf("TPOT", tpot), cdf("ITL", itl), cdf("end-to-end", e2e)};
  return LineChart("Latency CDFs", "milliseconds", "fraction of requests (ITL: of gaps)", series,
                   /*steps=*/true);
}

std::string ServeThroughputSvg(const ServeReport& r) {
  const double bucket = std::max(0.1, r.duration_s / 40);
  const size_t n = static_cast<size_t>(std::ceil(std::max(r.duration_s, 1e-9) / bucket));
  std::vector<double> tokens(n + 1, 0), finished(n + 1, 0);
  for (const ServeRecord& rec : r.records) {
    if (!rec.ok || rec.token_times_s.empty()) continue;
    const double weight = static_cast<double>(rec.output_tokens) / rec.token_times_s.size();
    for (double t : rec.token_times_s) tokens[std::min(n, static_cast<size_t>(t / bucket))] += weight;
    finished[std::min(n, static_cast<size_t>((rec.send_s + rec.e2e_s) / bucket))] += 1;
  }
  ChartSeries tok{"output tokens/s", {}}, req{"requests/s x 10", {}};
  for (size_t i = 0; i <= n; ++i) {
    tok.points.emplace_back(i * bucket, tokens[i] / bucket);
    req.points.emplace_back(i * bucket, finished[i] / bucket * 10);
  }
  return LineChart("Throughput over time (" + FormatNumber("%.2f", bucket) + " s buckets)",
                   "seconds since start", "per second", {tok, req});
}

Status WriteServeOutputs(const ServeReport& report, const std::string& dir) {
  // Error messages may quote a server's bytes, which need not be UTF-8.
  const std::string result_json = ServeJson(report).dump(2, ' ', false, json::error_handler_t::replace);
  std::vector<std::pair<std::string, std::string>> files = {{"result.json", result_json + "\n"},
                                                            {"result.md", ServeMarkdown(report)},
                                                            {"latency_cdf.svg", ServeLatencySvg(report)},
                                                            {"throughput.svg", ServeThroughputSvg(report)}};
  if (report.turns > 0) files.emplace_back("turns.svg", ServeTurnsSvg(report));
  return WriteOutputFiles(dir, files);
}

}  // namespace lockstep::client
