// The scheduler with recurrent state slots (kv/recurrent_state_pool.h), driven by a fabricated recurrent
// model: each row folds its token into its sequence's state (checking that the state holds exactly the
// positions below it, and starting from nothing at position 0) and a sampled token is a hash of the state. So
// a slot shared by two running sequences, a state not recomputed after a preemption, or a prefix-cache hit
// (positions skipped without passing through the state) changes the output or fails the check.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "engine/scheduler.h"
#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::FakePrompt;
using testing::Job;
using testing::kFakeVocab;

constexpr int64_t kStateFloats = 2;  // [hash of the tokens so far, how many]

// One step of the fabricated recurrent model over `plan`: the sampled tokens.
StepResult RecurrentForward(const StepPlan& plan) {
  StepResult result;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {  // chunk i's rows are those of batch sequence i
    const ScheduledChunk& chunk = plan.chunks[i];
    EXPECT_EQ(chunk.draft_count, 0);
    float* state = plan.batch.sequences[i].recurrent_state;
    EXPECT_NE(state, nullptr);
    if (state == nullptr) return result;
    for (const BatchRow& row : plan.batch.rows) {
      if (size_t(row.sequence) != i) continue;
      if (row.position == 0) state[0] = state[1] = 0;
      EXPECT_EQ(state[1], float(row.position)) << "request " << chunk.id << ": the state misses positions";
      state[0] = float((int64_t(state[0]) * 31 + row.token + 1) % 1000003);
      state[1] += 1;
    }
    if (chunk.sample) result.tokens.push_back({chunk.id, int32_t(state[0]) % kFakeVocab});
  }
  return result;
}

struct Outcome {
  std::map<RequestId, std::vector<int32_t>> generated;
  int64_t preemptions = 0;
  int32_t most_running = 0;
};

// Runs the jobs (all arriving at once) to the end with `slots` state slots; checks that no two running
// requests share a slot on any step and that every slot and block comes back.
Outcome RunRecurrent(const std::vector<Job>& jobs, int64_t num_blocks, int32_t block_tokens,
                     SchedulerOptions options, int32_t slots) {
  Outcome out;
  auto pool = BlockPool::Create(testing::FakeLayout(block_tokens), num_blocks);
  auto states = RecurrentStatePool::Create(kStateFloats, slots);
  EXPECT_TRUE(pool.ok() && states.ok());
  if (!pool.ok() || !states.ok()) return out;
  {
    Scheduler scheduler(**pool, options, states->get());
    std::map<RequestId, int32_t> left;
    for (const Job& job : jobs) {
      scheduler.Add(job.id, job.prompt, job.fork_of);
      left[job.id] = job.max_tokens;
    }
    for (int step = 0; step < 5000 && !scheduler.idle(); ++step) {
      StepPlan plan = scheduler.Schedule();
      out.most_running = std::max(out.most_running, scheduler.num_running());
      EXPECT_LE(scheduler.num_running(), slots);
      EXPECT_EQ((*states)->num_free(), slots - scheduler.num_running());
      std::vector<const float*> seen;
      for (const SequenceKv& seq : plan.batch.sequences) seen.push_back(seq.recurrent_state);
      std::sort(seen.begin(), seen.end());
      EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "two sequences share a state";
      const StepResult result = RecurrentForward(plan);
      scheduler.Update(result);
      for (const SampledToken& t : result.tokens) {
        out.generated[t.id].push_back(t.token);
        if (--left[t.id] == 0) scheduler.Remove(t.id);
      }
    }
    EXPECT_TRUE(scheduler.idle());
    out.preemptions = scheduler.preemptions_total();
  }
  EXPECT_EQ((*states)->num_free(), slots);
  EXPECT_EQ((*pool)->num_free(), num_blocks);
  return out;
}

std::vector<Job> Jobs(int n, int prompt, int tokens) {
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(i, prompt + 3 * i), tokens});
  return jobs;
}

TEST(SchedulerRecurrentTest, SlotsLimitTheRunningRequests) {
  const std::vector<Job> jobs = Jobs(5, 6, 9);
  const Outcome two = RunRecurrent(jobs, 256, 4, {8, 16}, 2);
  EXPECT_EQ(two.most_running, 2);
  const Outcome one = RunRecurrent(jobs, 256, 4, {8, 16}, 1);
  EXPECT_EQ(one.most_running, 1);
  const Outcome roomy = RunRecurrent(jobs, 256, 4, {8, 16}, 8);
  EXPECT_EQ(roomy.most_running, 5);
  for (const Job& job : jobs) {
    EXPECT_EQ(two.generated.at(job.id).size(), 9u);
    EXPECT_EQ(two.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
    EXPECT_EQ(one.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
  }
}

TEST(SchedulerRecurrentTest, PreemptionGivesTheSlotBackAndRecomputesTheState) {
  // 12 blocks of 4 tokens: three requests growing to 3 + 20 tokens must take turns (as SchedulerTest's).
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(i, 3), 20});
  const Outcome tight = RunRecurrent(jobs, 12, 4, {8, 64}, 3);
  EXPECT_GT(tight.preemptions, 0);
  const Outcome roomy = RunRecurrent(jobs, 64, 4, {8, 64}, 3);
  EXPECT_EQ(roomy.preemptions, 0);
  for (const Job& job : jobs) EXPECT_EQ(tight.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
}

TEST(SchedulerRecurrentTest, ChunkedPromptsCarryTheState) {
  const std::vector<Job> jobs = Jobs(3, 40, 5);
  const Outcome whole = RunRecurrent(jobs, 256, 4, {8, 512}, 3);
  for (int budget : {1, 3, 7, 16}) {
    const Outcome chunked = RunRecurrent(jobs, 256, 4, {8, budget}, 3);
    for (const Job& job : jobs) {
      EXPECT_EQ(chunked.generated.at(job.id), whole.generated.at(job.id)) << "budget " << budget;
    }
  }
}

TEST(SchedulerRecurrentTest, RemoveGivesTheSlotBack) {
  auto pool = BlockPool::Create(testing::FakeLayout(4), 64);
  auto states = RecurrentStatePool::Create(kStateFloats, 1);
  ASSERT_TRUE(pool.ok() && states.ok());
  Scheduler scheduler(**pool, {4, 64}, states->get());
  scheduler.Add(1, FakePrompt(1, 5));
  scheduler.Add(2, FakePrompt(2, 5));
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);  // request 2 waits for the one slot
  EXPECT_EQ(plan.chunks[0].id, 1u);
  EXPECT_EQ((*states)->num_free(), 0);
  scheduler.Update(RecurrentForward(plan));
  EXPECT_TRUE(scheduler.Remove(1));  // cancelled mid-generation
  EXPECT_EQ((*states)->num_free(), 1);
  plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].id, 2u);
  scheduler.Update(RecurrentForward(plan));
  EXPECT_TRUE(scheduler.Remove(2));
  EXPECT_EQ((*states)->num_free(), 1);
}

TEST(SchedulerRecurrentTest, NoPrefixHitsForksOrDrafts) {
  auto pool = BlockPool::Create(testing::FakeLayout(4), 64);
  auto states = RecurrentStatePool::Create(kStateFloats, 4);
  ASSERT_TRUE(pool.ok() && states.ok());
  SchedulerOptions options{4, 64};
  options.prefix_caching = true;  // asked for: a recurrent model cannot use it
  Scheduler scheduler(**pool, options, states->get());
  EXPECT_FALSE(scheduler.kv().prefix_caching());
  const std::vector<int32_t> prompt = FakePrompt(3, 21);
  scheduler.Add(1, prompt);
  StepPlan plan = scheduler.Schedule();
  scheduler.Update(RecurrentForward(plan));
  scheduler.Add(2, prompt, /*fork_of=*/1);  // same prompt, a fork of a request that computed it
  scheduler.SetDraft(1, {5, 6, 7});
  plan = scheduler.Schedule();
  for (const ScheduledChunk& chunk : plan.chunks) {
    EXPECT_EQ(chunk.draft_count, 0);
    if (chunk.id == 2) {
      EXPECT_EQ(chunk.start, 0);  // computes all of its prompt itself
    }
  }
  scheduler.Update(RecurrentForward(plan));
  EXPECT_EQ(scheduler.cached_tokens(2), 0);
  EXPECT_EQ(scheduler.prefix_hits_total(), 0);
  scheduler.Remove(1);
  scheduler.Remove(2);
}

}  // namespace
}  // namespace lockstep
