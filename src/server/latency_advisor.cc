#include "server/latency_advisor.h"

#include <algorithm>
#include <cstdio>

namespace lockstep::server {

namespace {

constexpr int64_t kMinSamples = 50;
constexpr int64_t kMinMultiRowSamples = 10;

struct SimRequest {
  int prompt = 0;
  int prefilled = 0;
  int generated = 0;
  bool running = false;
};

}  // namespace

ModePrediction SimulateRequests(const std::vector<int>& prompt_tokens, int output_tokens, int max_seqs,
                                int max_batch_tokens, const StepTimeFit& fit) {
  ModePrediction out;
  std::vector<SimRequest> requests;
  for (int p : prompt_tokens) requests.push_back({std::max(1, p), 0, 0, false});
  size_t next_waiting = 0;
  int running = 0, finished = 0;
  const int total = int(requests.size());
  const int budget_per_step = std::max(1, max_batch_tokens);
  output_tokens = std::max(1, output_tokens);
  while (finished < total) {
    StepShape shape;
    int budget = budget_per_step;
    bool sampled_any = false;
    // Decode rows of running requests past their prompt.
    for (SimRequest& r : requests) {
      if (!r.running || r.prefilled < r.prompt || budget == 0) continue;
      shape.decode_rows += 1;
      shape.attended_positions += r.prompt + r.generated;
      --budget;
      ++r.generated;
      sampled_any = true;
    }
    // Prefill chunks of running requests, then admissions.
    auto prefill = [&](SimRequest& r) {
      const int chunk = std::min(budget, r.prompt - r.prefilled);
      if (chunk <= 0) return;
      shape.prefill_rows += chunk;
      shape.attended_positions += double(chunk) * r.prefilled + double(chunk) * (chunk + 1) / 2;
      r.prefilled += chunk;
      budget -= chunk;
      if (r.prefilled == r.prompt) {
        ++r.generated;  // the prompt's last row is sampled
        sampled_any = true;
      }
    };
    for (SimRequest& r : requests) {
      if (r.running && r.prefilled < r.prompt) prefill(r);
    }
    while (budget > 0 && next_waiting < requests.size() && running < max_seqs) {
      SimRequest& r = requests[next_waiting++];
      r.running = true;
      ++running;
      prefill(r);
    }
    out.wall_s += fit.Predict(shape);
    ++out.steps;
    if (sampled_any && out.ttft_s == 0) out.ttft_s = out.wall_s;
    for (SimRequest& r : requests) {
      if (r.running && r.generated >= output_tokens) {
        r.running = false;  // done: never scheduled again
        --running;
        ++finished;
      }
    }
  }
  return out;
}

Advice Advise(const AdviceQuery& q, const StepTimeFit& fit) {
  Advice advice;
  const int n = std::max(1, q.questions);
  const int combined_prompt = q.combined_prompt_tokens > 0 ? q.combined_prompt_tokens : n * q.prompt_tokens;
  ModePrediction combined =
      SimulateRequests({combined_prompt}, n * q.tokens, q.max_seqs, q.max_batch_tokens, fit);
  combined.name = "combined";
  ModePrediction parallel = SimulateRequests(std::vector<int>(size_t(n), q.prompt_tokens), q.tokens,
                                             q.max_seqs, q.max_batch_tokens, fit);
  parallel.name = "parallel";
  const ModePrediction one =
      SimulateRequests({q.prompt_tokens}, q.tokens, q.max_seqs, q.max_batch_tokens, fit);
  ModePrediction sequential{"sequential", one.wall_s * n, one.ttft_s, one.steps * n};
  advice.modes = {combined, parallel, sequential};
  const ModePrediction* best = &advice.modes[0];
  for (const ModePrediction& m : advice.modes) {
    if (m.wall_s < best->wall_s) best = &m;
  }
  advice.recommended = best->name;
  char reason[256];
  if (best->name == "parallel") {
    std::snprintf(
        reason, sizeof reason,
        "send the %d questions as parallel requests: they share each forward pass, %.2fx faster than "
        "one combined request",
        n, combined.wall_s / std::max(1e-12, parallel.wall_s));
  } else if (best->name == "combined") {
    std::snprintf(reason, sizeof reason,
                  "one combined request is fastest here (parallel would take %.2fx as long): steps grow with "
                  "their rows about as fast as the rows",
                  parallel.wall_s / std::max(1e-12, combined.wall_s));
  } else {
    std::snprintf(reason, sizeof reason, "sequential requests are fastest here (%.2fx faster than parallel)",
                  parallel.wall_s / std::max(1e-12, sequential.wall_s));
  }
  advice.reason = reason;
  if (fit.samples < kMinSamples) {
    advice.note = "the server has run only " + std::to_string(fit.samples) + " steps (at least " +
                  std::to_string(kMinSamples) + " are needed); run some requests first";
  } else if (fit.multi_row_decode_samples < kMinMultiRowSamples) {
    advice.note =
        "the server has run too few steps with several requests decoding together to tell a "
        "step's fixed cost from its cost per row; run some parallel requests first";
  } else if (fit.max_decode_rows_seen < std::min(n, q.max_seqs)) {
    advice.note = "extrapolated: the largest step measured decoded " +
                  std::to_string(fit.max_decode_rows_seen) + " requests together, parallel would decode " +
                  std::to_string(std::min(n, q.max_seqs)) +
                  "; run that many parallel requests once for a measured answer";
  }
  advice.confident = advice.note.empty();
  return advice;
}

}  // namespace lockstep::server
