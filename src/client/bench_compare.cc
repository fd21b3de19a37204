#include "client/bench_compare.h"

#include <algorithm>
#include <cstdio>

#include "client/fan_out.h"
#include "client/output_files.h"
#include "client/stats.h"
#include "client/svg.h"

namespace lockstep::client {
namespace {

using nlohmann::json;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

ChatRequest MakeRequest(const CompareOptions& o, const std::string& prompt, int max_tokens) {
  ChatRequest r;
  r.model = o.model;
  r.messages = {{"user", prompt}};
  r.max_tokens = max_tokens;
  r.temperature = o.temperature;
  r.ignore_eos = o.ignore_eos;
  return r;
}

bool KnownMode(const std::string& mode) {
  return mode == "combined" || mode == "parallel" || mode == "sequential" || mode == "fan-out";
}

// The text before a run's questions: its cold-start line (--cold) and the shared context.
std::string Lead(const CompareOptions& o, const std::string& mode, int round) {
  std::string lead = o.cold ? "Run " + std::to_string(round + 1) + ", " + mode + "." : "";
  if (!o.context.empty()) lead += (lead.empty() ? "" : "\n\n") + o.context;
  return lead.empty() ? lead : lead + "\n\n";
}

Result<CompareRun> RunMode(const OpenAiClient& client, const CompareOptions& o, const std::string& mode,
                           int round, CancellationToken* token, std::vector<std::string>* eos_warnings) {
  std::vector<ChatRequest> requests;
  const std::string lead = Lead(o, mode, round);
  const int n = static_cast<int>(o.questions.size());
  if (mode == "combined" || mode == "fan-out") {
    requests.push_back(MakeRequest(o, lead + CombinedPrompt(o.questions), o.max_tokens * n));
    if (mode == "fan-out") {
      requests.back().max_tokens = o.max_tokens;  // per question: each is its own sequence
      requests.back().extra["fan_out"] = "choices";
    }
  } else {
    for (const auto& q : o.questions) requests.push_back(MakeRequest(o, lead + q, o.max_tokens));
  }
  const auto start = Clock::now();
  auto results = RunBlocking(FanOut(client, requests, mode == "sequential" ? 1 : 0, token));
  CompareRun run;
  run.wall_s = Seconds(start, Clock::now());
  run.ttft_s = run.wall_s;
  for (size_t i = 0; i < results.size(); ++i) {
    const ChatResult& r = results[i];
    if (!r.status.ok()) return r.status.WithContext(mode + " request " + std::to_string(i + 1));
    RequestSpan span;
    span.start_s = Seconds(start, r.start);
    span.first_token_s = span.start_s + r.ttft_s;
    span.end_s = span.start_s + r.duration_s;
    span.tokens = r.completion_tokens;
    run.ttft_s = std::min(run.ttft_s, span.first_token_s);
    run.output_tokens += r.completion_tokens;
    run.prompt_tokens += std::max(0, r.prompt_tokens);
    if (r.cached_tokens >= 0) run.cached_tokens = std::max(0, run.cached_tokens) + r.cached_tokens;
    run.choices += r.choices;
    run.spans.push_back(span);
    const int expected =
        mode == "fan-out" && r.choices > 1 ? requests[i].max_tokens * r.choices : requests[i].max_tokens;
    if (o.ignore_eos && r.completion_tokens < expected) {
      eos_warnings->push_back(mode + " request " + std::to_string(i + 1) + ": " +
                              std::to_string(r.completion_tokens) + " of " + std::to_string(expected) +
                              " tokens (finish_reason \"" + r.finish_reason + "\")");
    }
  }
  return run;
}

void Summarize(CompareMode* mode) {
  std::vector<double> walls, ttfts, tokens, rates, prompts, cached;
  for (const auto& r : mode->runs) {
    walls.push_back(r.wall_s);
    ttfts.push_back(r.ttft_s);
    tokens.push_back(r.output_tokens);
    rates.push_back(r.wall_s > 0 ? r.output_tokens / r.wall_s : 0);
    prompts.push_back(r.prompt_tokens);
    if (r.cached_tokens >= 0) cached.push_back(r.cached_tokens);
  }
  mode->prompt_tokens = static_cast<int>(std::lround(Median(prompts)));
  mode->cached_tokens =
      cached.size() == mode->runs.size() ? static_cast<int>(std::lround(Median(cached))) : -1;
  mode->median_wall_s = Median(walls);
  mode->median_ttft_s = Median(ttfts);
  mode->output_tokens = static_cast<int>(std::lround(Median(tokens)));
  mode->tokens_per_s = Median(rates);
  double best = 1e300;
  for (size_t i = 0; i < walls.size(); ++i) {
    if (std::fabs(walls[i] - mode->median_wall_s) < best)
      best = std::fabs(walls[i] - mode->median_wall_s), mode->median_run = i;
  }
}

}  // namespace

std::vector<std::string> BuiltinQuestions() {
  return {"What is the capital of France?", "Why is the sky blue?", "What is photosynthesis?",
          "Who wrote Romeo and Juliet?", "How many continents are there?"};
}

const CompareMode* CompareReport::Mode(const std::string& name) const {
  for (const CompareMode& m : modes) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string CombinedPrompt(const std::vector<std::string>& questions) {
  std::string p = "Answer each of the following questions separately, numbering your answers:";
  for (size_t i = 0; i < questions.size(); ++i) p += "\n" + std::to_string(i + 1) + ". " + questions[i];
  return p;
}

Result<CompareReport> RunCompare(const OpenAiClient& client, const CompareOptions& o,
                                 CancellationToken* token, const ProgressFn& progress) {
  if (o.questions.empty()) return InvalidArgument("bench compare needs at least one question");
  if (o.repeat < 1) return InvalidArgument("--repeat must be at least 1");
  if (o.max_tokens < 1) return InvalidArgument("--max-tokens must be at least 1");
  if (o.modes.empty()) return InvalidArgument("bench compare needs at least one mode");
  for (const std::string& m : o.modes) {
    if (!KnownMode(m)) {
      return InvalidArgument("unknown mode '" + m + "' (expected combined, parallel, sequential or fan-out)");
    }
  }
  CompareReport report;
  report.server = o.server;
  report.model = o.model;
  report.questions = static_cast<int>(o.questions.size());
  report.max_tokens = o.max_tokens;
  report.repeat = o.repeat;
  report.ignore_eos_requested = o.ignore_eos;
  report.has_context = !o.context.empty();
  report.cold = o.cold;
  // Warm-up: one short request (loads caches, starts threads); not measured.
  std::vector<ChatRequest> warm = {MakeRequest(o, o.questions[0], 4)};
  auto warm_result = RunBlocking(FanOut(client, warm, 1, token));
  if (!warm_result[0].status.ok()) return warm_result[0].status.WithContext("warm-up request");
  for (const std::string& name : o.modes) {
    CompareMode mode;
    mode.name = name;
    report.modes.push_back(std::move(mode));
  }
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (auto& mode : report.modes) {
      if (!mode.not_comparable.empty()) continue;  // measured once; more rounds would not compare either
      std::vector<std::string> warnings;
      LOCKSTEP_ASSIGN_OR_RETURN(CompareRun run, RunMode(client, o, mode.name, rep, token, &warnings));
      if (rep == 0) report.eos_warnings.insert(report.eos_warnings.end(), warnings.begin(), warnings.end());
      if (mode.name == "fan-out" && rep == 0 && run.choices < report.questions) {
        // One sequence of one question's max_tokens: a fraction of the other modes' text, so its wall time
        // would look fast for the wrong reason (llama.cpp's server ignores "fan_out").
        mode.not_comparable = "not fanned out by this server";
        report.notes.push_back("fan-out: the server returned " + std::to_string(run.choices) +
                               " answer(s) for " + std::to_string(report.questions) +
                               " questions: it did not fan out (answered as one sequence of " +
                               std::to_string(run.output_tokens) +
                               " tokens), so fan-out is not comparable: run once, no ratio to combined");
      }
      if (progress) {
        std::string cached =
            run.cached_tokens >= 0 ? ", " + std::to_string(run.cached_tokens) + " cached" : "";
        progress(mode.name + " run " + std::to_string(rep + 1) + "/" + std::to_string(o.repeat) + ": " +
                 FormatNumber("%.3f s", run.wall_s) + ", " + std::to_string(run.output_tokens) +
                 " tokens, prompt " + std::to_string(run.prompt_tokens) + cached);
      }
      mode.runs.push_back(std::move(run));
    }
  }
  for (auto& mode : report.modes) Summarize(&mode);
  const CompareMode* combined = report.Mode("combined");
  const CompareMode* parallel = report.Mode("parallel");
  if (combined != nullptr && parallel != nullptr && parallel->median_wall_s > 0) {
    report.speedup_parallel_over_combined = combined->median_wall_s / parallel->median_wall_s;
  }
  for (const CompareMode& m : report.modes) {
    if (combined == nullptr || &m == combined || !m.not_comparable.empty()) continue;
    std::vector<double> ratios;
    for (size_t r = 0; r < m.runs.size() && r < combined->runs.size(); ++r) {
      ratios.push_back(combined->runs[r].wall_s > 0 ? m.runs[r].wall_s / combined->runs[r].wall_s : 0);
    }
    report.ratios_to_combined.emplace_back(m.name, std::move(ratios));
  }
  return report;
}

json CompareJson(const CompareReport& report) {
  json modes = json::object();
  for (const auto& m : report.modes) {
    json walls = json::array();
    for (const auto& r : m.runs) walls.push_back(r.wall_s);
    json prompts = json::array(), cached = json::array();
    for (const auto& r : m.runs) {
      prompts.push_back(r.prompt_tokens);
      cached.push_back(r.cached_tokens >= 0 ? json(r.cached_tokens) : json(nullptr));
    }
    modes[m.name] = {
        {"median_wall_s", m.median_wall_s},
        {"median_ttft_s", m.median_ttft_s},
        {"output_tokens", m.output_tokens},
        {"tokens_per_s", m.tokens_per_s},
        {"walls_s", walls},
        {"prompt_tokens", m.prompt_tokens},
        {"cached_tokens", m.cached_tokens >= 0 ? json(m.cached_tokens) : json(nullptr)},
        {"computed_tokens", m.cached_tokens >= 0 ? json(m.prompt_tokens - m.cached_tokens) : json(nullptr)},
        {"prompt_tokens_per_run", prompts},
        {"cached_tokens_per_run", cached},
        {"not_comparable", m.not_comparable.empty() ? json(nullptr) : json(m.not_comparable)}};
  }
  json ratios = json::object();
  for (const auto& [name, values] : report.ratios_to_combined) ratios[name] = values;
  for (const auto& m : report.modes) {
    if (!m.not_comparable.empty()) ratios[m.name] = nullptr;
  }
  return {{"modes", modes},
          {"speedup_parallel_over_combined", report.speedup_parallel_over_combined},
          {"ratios_to_combined", ratios},
          {"context", report.has_context},
          {"cold", report.cold},
          {"notes", report.notes},
          {"server", report.server},
          {"model", report.model}};
}

std::string CompareMarkdown(const CompareReport& report) {
  std::string md = "# lockstep bench compare\n\n";
  md += "Server `" + report.server + "`, model `" + report.model + "`, " + std::to_string(report.questions) +
        " questions, max " + std::to_string(report.max_tokens) + " tokens per question, " +
        std::to_string(report.repeat) + " repetitions (medians).\n\n";
  if (report.has_context) {
    md += "Every prompt starts with the same shared context" +
          std::string(report.cold ? " (and a line of its own per run, so runs do not share cached prefixes)"
                                  : "") +
          ".\n\n";
  }
  md +=
      "| mode | wall (s) | first token (s) | output tokens | tokens/s | prompt tokens | cached | computed |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string not_comparable;  // "fan-out (not fanned out by this server)", for the footer
  for (const auto& m : report.modes) {
    const bool known = m.cached_tokens >= 0;
    const std::string& why = m.not_comparable;
    if (!why.empty()) not_comparable += (not_comparable.empty() ? "" : ", ") + m.name + " (" + why + ")";
    md += "| " + m.name + (why.empty() ? "" : " *(not comparable: " + why + ")*") + " | " +
          FormatNumber("%.3f", m.median_wall_s) + " | " + FormatNumber("%.3f", m.median_ttft_s) + " | " +
          std::to_string(m.output_tokens) + " | " + FormatNumber("%.1f", m.tokens_per_s) + " | " +
          std::to_string(m.prompt_tokens) + " | " + (known ? std::to_string(m.cached_tokens) : "?") + " | " +
          (known ? std::to_string(m.prompt_tokens - m.cached_tokens) : "?") + " |\n";
  }
  md += "\nSpeedup of parallel over combined: **" +
        FormatNumber("%.2f", report.speedup_parallel_over_combined) + "x**\n\n";
  if (!report.ratios_to_combined.empty() || !not_comparable.empty()) {
    md += "Wall time / combined's, per round:\n\n";
    for (const auto& [name, values] : report.ratios_to_combined) {
      md += "- " + name + ":";
      for (double v : values) md += " " + FormatNumber("%.3f", v);
      md += "\n";
    }
    for (const auto& m : report.modes) {
      if (!m.not_comparable.empty())
        md += "- " + m.name + ": none, not comparable (" + m.not_comparable + ")\n";
    }
    md += "\n";
  }
  for (const auto& note : report.notes) md += "Note: " + note + "\n\n";
  md += "First token: from the start of a run to the first token of any answer. Chart: `chart.svg`.\n";
  if (!report.ignore_eos_requested) {
    md += "\nignore_eos was not requested: output lengths vary with the model's answers.\n";
  } else if (report.eos_warnings.empty() && not_comparable.empty()) {
    md += "\nFixed output lengths: the server honoured ignore_eos (every answer reached max_tokens).\n";
  } else if (report.eos_warnings.empty()) {
    md +=
        "\nThe server honoured ignore_eos (every answer reached max_tokens), but the modes marked not "
        "comparable produced a different amount of text: " +
        not_comparable + ".\n";
  } else {
    md +=
        "\n**The server did not honour ignore_eos**: some answers stopped early, so the modes produced "
        "different amounts of text:\n\n";
    for (const auto& w : report.eos_warnings) md += "- " + w + "\n";
  }
  return md;
}

std::string CompareSvg(const CompareReport& report) {
  size_t rows = 0;
  for (const auto& m : report.modes) rows += m.runs.empty() ? 0 : m.runs[m.median_run].spans.size();
  const double row_h = 16, timeline_top = 330;
  SvgBuilder svg(820, timeline_top + 60 + rows * row_h + report.modes.size() * 24);
  svg.Text(410, 24, "Combined vs parallel vs sequential vs fan-out (" + report.model + ")", 16, "middle",
           true);
  // Bars: median wall time per mode.
  double max_wall = 0;
  for (const auto& m : report.modes) {
    if (!m.not_comparable.empty()) continue;  // no bar
    for (const auto& r : m.runs) max_wall = std::max(max_wall, r.wall_s);
  }
  const PlotArea bars = DrawAxes(&svg, 80, 60, 660, 200, 0, double(std::max<size_t>(1, report.modes.size())),
                                 0, max_wall, "", "median wall time (s)", /*x_ticks=*/false);
  for (size_t i = 0; i < report.modes.size(); ++i) {
    const auto& m = report.modes[i];
    const double cx = bars.X(i + 0.5), bw = 100;
    svg.Text(cx, bars.y + bars.h + 17, m.name, 12, "middle");
    if (!m.not_comparable.empty()) {  // no bar: its wall time measured a different amount of text
      svg.Text(cx, bars.Y(0) - 20, "not comparable:", 11, "middle");
      svg.Text(cx, bars.Y(0) - 6, m.not_comparable, 10, "middle");
      continue;
    }
    svg.Rect(cx - bw / 2, bars.Y(m.median_wall_s), bw, bars.Y(0) - bars.Y(m.median_wall_s), SeriesColor(i),
             m.name + ": " + FormatNumber("%.3f s", m.median_wall_s));
    svg.Text(cx, bars.Y(m.median_wall_s) - 6, FormatNumber("%.2f s", m.median_wall_s), 12, "middle", true);
    if (m.cached_tokens >= 0) {  // prompt tokens the server computed / found cached
      svg.Text(cx, bars.y + bars.h + 32,
               std::to_string(m.prompt_tokens - m.cached_tokens) + " computed, " +
                   std::to_string(m.cached_tokens) + " cached",
               10, "middle");
    }
  }
  // Timelines: each request of each mode's median run; light = waiting for the first token, dark = streaming.
  double max_end = 0;
  for (const auto& m : report.modes) {
    if (m.runs.empty()) continue;
    for (const auto& s : m.runs[m.median_run].spans) max_end = std::max(max_end, s.end_s);
  }
  double y = timeline_top;
  svg.Text(80, y - 10, "Per-request timelines (median run; light: before first token, dark: streaming)", 13,
           "start", true);
  const double x0 = 150, width = 590, scale = max_end > 0 ? width / max_end : 1;
  for (size_t i = 0; i < report.modes.size(); ++i) {
    const auto& m = report.modes[i];
    if (m.runs.empty()) continue;
    svg.Text(x0 - 8, y + 14, m.name, 12, "end", true);
    for (size_t k = 0; k < m.runs[m.median_run].spans.size(); ++k) {
      const RequestSpan& s = m.runs[m.median_run].spans[k];
      const std::string tip = m.name + " request " + std::to_string(k + 1) + ": " +
                              FormatNumber("%.3f", s.start_s) + "-" + FormatNumber("%.3f s", s.end_s) + ", " +
                              std::to_string(s.tokens) + " tokens";
      svg.Rect(x0 + s.start_s * scale, y + 2, (s.first_token_s - s.start_s) * scale, row_h - 4, "#cfd8e3",
               tip);
      svg.Rect(x0 + s.first_token_s * scale, y + 2, (s.end_s - s.first_token_s) * scale, row_h - 4,
               SeriesColor(i), tip);
      y += row_h;
    }
    y += 24;
  }
  svg.Line(x0, y - 10, x0 + width, y - 10, "#444");
  for (double t : NiceTicks(0, max_end)) {
    if (t > max_end * 1.0001) continue;
    svg.Line(x0 + t * scale, y - 10, x0 + t * scale, y - 6, "#444");
    svg.Text(x0 + t * scale, y + 6, TickLabel(t), 11, "middle");
  }
  svg.Text(x0 + width / 2, y + 22, "seconds since the run started", 12, "middle");
  return svg.Finish();
}

Status WriteCompareOutputs(const CompareReport& report, const std::string& dir) {
  json spans = json::object();  // every run's per-request intervals (result.json keeps its fixed shape)
  for (const auto& m : report.modes) {
    json runs = json::array();
    for (const auto& r : m.runs) {
      json run = json::array();
      for (const auto& s : r.spans) {
        run.push_back({{"start_s", s.start_s},
                       {"first_token_s", s.first_token_s},
                       {"end_s", s.end_s},
                       {"tokens", s.tokens}});
      }
      runs.push_back(run);
    }
    spans[m.name] = runs;
  }
  return WriteOutputFiles(dir, {{"result.json", CompareJson(report).dump(2) + "\n"},
                                {"requests.json", spans.dump(1) + "\n"},
                                {"result.md", CompareMarkdown(report)},
                                {"chart.svg", CompareSvg(report)}});
}

}  // namespace lockstep::client
