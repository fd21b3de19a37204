// Scheduler tests with a fabricated model (scheduler_testing.h): a wrong block table, an overwritten block,
// or a bad recompute changes the output.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>

#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::FakeForward;
using testing::Job;
using testing::RunJobs;
using testing::RunOutcome;

KvLayout TinyLayout(int32_t block_tokens) { return testing::FakeLayout(block_tokens); }
std::vector<int32_t> Prompt(int seed, int len) { return testing::FakePrompt(seed, len); }

TEST(SchedulerTest, AdmitsFirstComeFirstServedWithinMaxSeqs) {
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back({RequestId(i + 1), Prompt(i, 5), 4});
  SchedulerOptions options{2, 64};
  RunOutcome out = RunJobs(jobs, 64, 4, options);
  // Two at a time, in order: 1,2 at step 0; 3,4 after them; 5,6 last.
  EXPECT_EQ(out.first_step[1], 0);
  EXPECT_EQ(out.first_step[2], 0);
  EXPECT_LT(out.first_step[2], out.first_step[3]);
  EXPECT_LE(out.first_step[3], out.first_step[4]);
  EXPECT_LT(out.first_step[4], out.first_step[5]);
  EXPECT_LE(out.first_step[5], out.first_step[6]);
  for (auto& [id, gen] : out.generated) EXPECT_EQ(gen.size(), 4u);
}

TEST(SchedulerTest, OutputsDoNotDependOnNeighbours) {
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({RequestId(i + 1), Prompt(i, 3 + 7 * i), 5 + 3 * i, i % 3});
  RunOutcome together = RunJobs(jobs, 256, 4, {8, 32});
  for (const Job& job : jobs) {
    Job solo = job;
    solo.arrival_step = 0;
    RunOutcome alone = RunJobs({solo}, 256, 4, {8, 32});
    EXPECT_EQ(together.generated[job.id], alone.generated[job.id]) << "request " << job.id;
  }
}

TEST(SchedulerTest, ChunksLongPromptsWhileDecodesAdvance) {
  auto pool = BlockPool::Create(TinyLayout(4), 128);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 8});
  scheduler.Add(1, Prompt(1, 3));
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  scheduler.Update(FakeForward(plan, 4));
  scheduler.Add(2, Prompt(2, 30));  // needs 30 rows: chunks of at most 7 beside the decode
  int steps = 0;
  while (scheduler.num_computed(2) < 30) {
    plan = scheduler.Schedule();
    ASSERT_EQ(plan.chunks.size(), 2u);
    EXPECT_EQ(plan.chunks[0].id, 1u);  // decode row first
    EXPECT_TRUE(plan.chunks[0].decode);
    EXPECT_EQ(plan.chunks[0].count, 1);
    EXPECT_EQ(plan.chunks[1].id, 2u);
    EXPECT_FALSE(plan.chunks[1].decode);
    EXPECT_LE(plan.chunks[1].count, 7);
    EXPECT_EQ(plan.chunks[1].sample, scheduler.num_computed(2) + plan.chunks[1].count == 30);
    EXPECT_EQ(plan.decode_tokens, 1);
    EXPECT_EQ(plan.prefill_tokens, plan.chunks[1].count);
    scheduler.Update(FakeForward(plan, 4));
    ++steps;
  }
  EXPECT_EQ(steps, 5);  // 7+7+7+7+2
  EXPECT_EQ(scheduler.tokens(1).size(), 3u + 6u);
  EXPECT_EQ(scheduler.tokens(2).size(), 31u);
  scheduler.Remove(1);
  scheduler.Remove(2);
  EXPECT_EQ((*pool)->num_free(), 128);
}

TEST(SchedulerTest, PreemptsNewestAndResumesWithSameTokens) {
  // 12 blocks of 4 tokens: three requests growing to 3 + 20 tokens cannot all fit; they must take turns.
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back({RequestId(i + 1), Prompt(i, 3), 20});
  RunOutcome tight = RunJobs(jobs, 12, 4, {8, 64});
  EXPECT_GT(tight.preemptions, 0);
  RunOutcome roomy = RunJobs(jobs, 64, 4, {8, 64});
  EXPECT_EQ(roomy.preemptions, 0);
  for (const Job& job : jobs) EXPECT_EQ(tight.generated[job.id], roomy.generated[job.id]) << job.id;
}

TEST(SchedulerTest, PreemptedRequestGoesBackAheadOfNewerOnes) {
  auto pool = BlockPool::Create(TinyLayout(2), 6);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {2, 64});  // max_seqs 2: request 3 waits
  scheduler.Add(1, Prompt(1, 2));
  scheduler.Add(2, Prompt(2, 2));
  // Both admitted: 2 blocks each incl. room for one decode.
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 2u);
  scheduler.Update(FakeForward(plan, 2));
  scheduler.Add(3, Prompt(3, 2));  // arrives later
  std::vector<RequestId> preempted;
  for (int step = 0; step < 6 && preempted.empty(); ++step) {
    plan = scheduler.Schedule();
    preempted = plan.preempted;
    scheduler.Update(FakeForward(plan, 2));
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted[0], 2u);  // the most recently admitted running request
  EXPECT_FALSE(scheduler.running(2));
  EXPECT_FALSE(scheduler.running(3));
  scheduler.Remove(1);  // room again: 2 must be admitted before 3
  plan = scheduler.Schedule();
  ASSERT_FALSE(plan.chunks.empty());
  EXPECT_EQ(plan.chunks[0].id, 2u);
  scheduler.Update(FakeForward(plan, 2));
  scheduler.Remove(2);
  scheduler.Remove(3);
  EXPECT_EQ((*pool)->num_free(), 6);
}

TEST(SchedulerTest, NoStarvationUnderSustainedArrivals) {
  // A long request among a stream of short ones, in a small pool: it must finish, and in bounded steps.
  std::vector<Job> jobs;
  jobs.push_back({1, Prompt(1, 20), 40, 0});
  for (int i = 0; i < 40; ++i) jobs.push_back({RequestId(i + 2), Prompt(i + 2, 4), 6, i});
  RunOutcome out = RunJobs(jobs, 20, 4, {4, 16});
  EXPECT_EQ(out.generated[1].size(), 40u);
  EXPECT_LT(out.steps, 2000);
}

TEST(SchedulerTest, ChunkedPromptsInATightPoolNeverDeadlock) {
  // Long prompts, a tiny token budget (many chunks each) and a pool that holds about two of them.
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back({RequestId(i + 1), Prompt(i, 17 + i), 8, i});
  RunOutcome out = RunJobs(jobs, 12, 4, {6, 5});
  for (const Job& job : jobs) EXPECT_EQ(out.generated[job.id].size(), 8u);
  RunOutcome roomy = RunJobs(jobs, 128, 4, {6, 64});
  for (const Job& job : jobs) EXPECT_EQ(out.generated[job.id], roomy.generated[job.id]);
}

TEST(SchedulerTest, CancellingFreesBlocksAtOnce) {
  auto pool = BlockPool::Create(TinyLayout(4), 32);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 64});
  scheduler.Add(1, Prompt(1, 10));
  scheduler.Add(2, Prompt(2, 10));
  scheduler.Add(3, Prompt(3, 10));
  StepPlan plan = scheduler.Schedule();
  scheduler.Update(FakeForward(plan, 4));
  EXPECT_EQ((*pool)->num_used(), 9);
  EXPECT_TRUE(scheduler.Remove(2));  // running
  EXPECT_EQ((*pool)->num_used(), 6);
  EXPECT_FALSE(scheduler.Remove(2));
  scheduler.Add(4, Prompt(4, 4));
  EXPECT_TRUE(scheduler.Remove(4));  // still waiting
  EXPECT_TRUE(scheduler.Remove(1));
  EXPECT_TRUE(scheduler.Remove(3));
  EXPECT_EQ((*pool)->num_free(), 32);
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerTest, RejectsWhatCanNeverFit) {
  auto pool = BlockPool::Create(TinyLayout(16), 4);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 64});
  EXPECT_TRUE(scheduler.CanEverFit(64));
  EXPECT_FALSE(scheduler.CanEverFit(65));
}

TEST(SchedulerTest, WaitsWhenPoolIsBusyInsteadOfFailing) {
  // One request's prompt fills the pool: the next waits until the first is removed.
  auto pool = BlockPool::Create(TinyLayout(4), 4);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 64});
  scheduler.Add(1, Prompt(1, 14));
  scheduler.Add(2, Prompt(2, 3));
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  scheduler.Update(FakeForward(plan, 4));
  EXPECT_EQ(scheduler.num_waiting(), 1);
  scheduler.Remove(1);
  plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].id, 2u);
  scheduler.Update(FakeForward(plan, 4));
  scheduler.Remove(2);
  EXPECT_EQ((*pool)->num_free(), 4);
}

}  // namespace
}  // namespace lockstep
