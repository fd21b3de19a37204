// A fabricated model for scheduler tests: a "forward pass" that writes each row's token into its KV slot (the
// tiny layout has one f32 per position) and "samples" a hash of the whole context read back from the
// sequence's own blocks. So a wrong block table, a shared block written by another sequence, a block freed
// while read, or a bad recompute changes the output.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <span>
#include <vector>

#include "engine/scheduler.h"

namespace lockstep::testing {

inline constexpr int32_t kFakeVocab = 1000;

KvLayout FakeLayout(int32_t block_tokens);
// Runs one fabricated forward pass + sampling over `plan`; returns the sampled tokens. With a window, a
// row's "context" is its last `window` positions (model/attention.h's rule), read from its own blocks. A
// chunk with draft rows samples row by row while the sampled token equals the next row's input (the draft).
StepResult FakeForward(const StepPlan& plan, int32_t block_tokens, int32_t window = 0);

struct Job {
  RequestId id;
  std::vector<int32_t> prompt;
  int32_t max_tokens;
  int arrival_step = 0;
  RequestId fork_of = 0;
  int32_t shared_prefix_hint = 0;
};

struct RunOutcome {
  std::map<RequestId, std::vector<int32_t>> generated;
  std::map<RequestId, int> first_step;  // step of first scheduling
  std::map<RequestId, int32_t> cached_tokens;
  int64_t preemptions = 0;
  int64_t prefill_rows = 0;  // rows computed as prefill over the whole run
  int64_t hits = 0, queries = 0;
  int steps = 0;
};

// Draft tokens for a decoding job (Scheduler::SetDraft), given its tokens so far.
using Drafter = std::function<std::vector<int32_t>(const Job& job, std::span<const int32_t> tokens)>;

// Drives a scheduler over a fresh pool until every job finished; checks invariants on every step and that
// every block is free or cached idle at the end. FakeForward windows each row by options.kv_window. With a
// drafter, every decoding job gets its draft before each step.
RunOutcome RunJobs(const std::vector<Job>& jobs, int64_t num_blocks, int32_t block_tokens,
                   SchedulerOptions options, const Drafter& drafter = {});

// A deterministic prompt: `len` tokens from `seed`.
std::vector<int32_t> FakePrompt(int seed, int len);

}  // namespace lockstep::testing
