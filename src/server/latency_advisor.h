// LatencyAdvisor: predicts the wall time of answering N questions of about M output tokens each, three ways —
// combined (one request: all questions in one prompt, N·M tokens), parallel (N requests at once) and
// sequential (one request after another) — by replaying the engine's scheduling rules (decode rows first,
// then prefill chunks, first-come admission within max_seqs and max_batch_tokens; see engine/scheduler.h)
// step by step and pricing every step with the fitted StepTimeModel. KV capacity is assumed sufficient.
// Served as GET /advisor (dashboard_routes.cc); clients read it over HTTP (client/advisor.h). Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/step_time_model.h"

namespace lockstep::server {

struct AdviceQuery {
  int questions = 5;
  int tokens = 64;                 // output tokens per question
  int prompt_tokens = 32;          // prompt tokens per question (chat template included)
  int combined_prompt_tokens = 0;  // the combined prompt; 0 = questions × prompt_tokens
  int max_seqs = 64;
  int max_batch_tokens = 512;
};

struct ModePrediction {
  std::string name;  // "combined" | "parallel" | "sequential"
  double wall_s = 0;
  double ttft_s = 0;  // first token of any answer
  int64_t steps = 0;
};

struct Advice {
  std::vector<ModePrediction> modes;  // combined, parallel, sequential
  std::string recommended;            // the mode with the least predicted wall time
  std::string reason;                 // one sentence for people
  bool confident = false;             // enough steps seen, decodes as wide as parallel's among them
  std::string note;                   // why not confident ("" when confident)
};

// Wall time of one batch of requests all submitted at t = 0, each with its prompt and output tokens.
ModePrediction SimulateRequests(const std::vector<int>& prompt_tokens, int output_tokens, int max_seqs,
                                int max_batch_tokens, const StepTimeFit& fit);

Advice Advise(const AdviceQuery& query, const StepTimeFit& fit);

}  // namespace lockstep::server
