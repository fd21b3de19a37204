// Prefix caching, shared prefills and forks in the scheduler, with the fabricated model of
// scheduler_testing.h: a token sampled from a shared block that another sequence overwrote, freed or never
// computed differs from the uncached run's.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/scheduler.h"
#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::FakeForward;
using testing::FakePrompt;
using testing::Job;
using testing::RunJobs;
using testing::RunOutcome;

SchedulerOptions Options(int max_seqs, int max_batch_tokens, bool caching) {
  SchedulerOptions options;
  options.max_seqs = max_seqs;
  options.max_batch_tokens = max_batch_tokens;
  options.prefix_caching = caching;
  return options;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(SchedulerPrefixTest, SharedPrefixesGiveTheUncachedOutputsOverBlockBoundaries) {
  for (int prefix : {15, 16, 17, 31, 32, 33, 48}) {
    SCOPED_TRACE("prefix length " + std::to_string(prefix));
    const std::vector<int32_t> shared = FakePrompt(7, prefix);
    std::vector<Job> jobs;
    const int suffixes[] = {1, 2, 9, 16, 0};
    for (int i = 0; i < 5; ++i) {
      // The last job repeats the first one's prompt exactly (arriving after it finished).
      std::vector<int32_t> prompt =
          i == 4 ? jobs[0].prompt : Concat(shared, FakePrompt(100 + i, suffixes[i]));
      jobs.push_back({RequestId(i + 1), prompt, 6, i < 2 ? 0 : (i == 4 ? 40 : 3 * i)});
    }
    const RunOutcome cached = RunJobs(jobs, 64, 16, Options(8, 24, true));
    const RunOutcome uncached = RunJobs(jobs, 64, 16, Options(8, 24, false));
    for (const Job& job : jobs)
      EXPECT_EQ(cached.generated.at(job.id), uncached.generated.at(job.id)) << job.id;
    EXPECT_EQ(uncached.hits, 0);
    EXPECT_LE(cached.prefill_rows, uncached.prefill_rows);
    if (prefix > 16) {
      EXPECT_GT(cached.hits, 0);
    }
    // The repeat hits every full block before its last token.
    EXPECT_EQ(cached.cached_tokens.at(5), int32_t((jobs[4].prompt.size() - 1) / 16 * 16));
  }
}

TEST(SchedulerPrefixTest, RequestsArrivingTogetherComputeTheSharedPrefixOnce) {
  // Five requests, a 100-token prefix (6 full blocks of 16) and 10 tokens of their own, all at step 0, with
  // a 64-row budget so the first one's prefix takes two steps: the others wait for its blocks.
  const std::vector<int32_t> shared = FakePrompt(3, 100);
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back({RequestId(i + 1), Concat(shared, FakePrompt(50 + i, 10)), 8});
  const RunOutcome cached = RunJobs(jobs, 128, 16, Options(8, 64, true));
  const RunOutcome uncached = RunJobs(jobs, 128, 16, Options(8, 64, false));
  for (const Job& job : jobs) EXPECT_EQ(cached.generated.at(job.id), uncached.generated.at(job.id));
  EXPECT_EQ(uncached.prefill_rows, 5 * 110);
  EXPECT_EQ(cached.prefill_rows, 110 + 4 * (110 - 96));  // 96 = the 6 shared full blocks
  for (RequestId id = 2; id <= 5; ++id) EXPECT_EQ(cached.cached_tokens.at(id), 96);
  EXPECT_EQ(cached.hits, 4 * 96);
  EXPECT_EQ(cached.queries, 5 * 110);
}

TEST(SchedulerPrefixTest, ARepeatedPromptComputesOnlyItsLastBlock) {
  for (int len : {70, 64}) {
    const std::vector<int32_t> prompt = FakePrompt(11, len);
    const RunOutcome out = RunJobs({{1, prompt, 4, 0}, {2, prompt, 4, 20}}, 32, 16, Options(4, 512, true));
    EXPECT_EQ(out.generated.at(1), out.generated.at(2));
    // 70: blocks 0-3 cached, 6 rows computed; 64: the block holding the last token is computed again.
    EXPECT_EQ(out.cached_tokens.at(2), len == 70 ? 64 : 48);
    EXPECT_EQ(out.prefill_rows, len + (len == 70 ? 6 : 16));
  }
}

TEST(SchedulerPrefixTest, BlocksFilledByDecodingAreCachedToo) {
  // A conversation's next turn re-sends the reply: its blocks were computed while decoding.
  auto pool = BlockPool::Create(testing::FakeLayout(16), 32);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, Options(4, 512, true));
  scheduler.Add(1, FakePrompt(5, 20));
  while (scheduler.tokens(1).size() < 50) scheduler.Update(FakeForward(scheduler.Schedule(), 16));
  const std::vector<int32_t> history = scheduler.tokens(1);  // 49 computed positions: 3 full blocks
  scheduler.Remove(1);
  scheduler.Add(2, Concat(history, FakePrompt(6, 3)));
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].start, 48);
  EXPECT_EQ(scheduler.cached_tokens(2), 48);
  scheduler.Update(FakeForward(plan, 16));
  scheduler.Remove(2);
  EXPECT_EQ((*pool)->num_used(), 0);
}

TEST(SchedulerPrefixTest, ForksComputeTheirCommonPrefixOnceWithOrWithoutTheCache) {
  const std::vector<int32_t> prompt = FakePrompt(9, 50);
  const std::vector<int32_t> shared = FakePrompt(4, 37);
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "cache on" : "cache off");
    // n = 3: the same prompt; the children compute only its last token.
    std::vector<Job> n3 = {{1, prompt, 12}, {2, prompt, 12, 0, 1}, {3, prompt, 12, 0, 1}};
    const RunOutcome forked = RunJobs(n3, 64, 16, Options(8, 64, caching));
    EXPECT_EQ(forked.prefill_rows, 50 + 1 + 1);
    EXPECT_EQ(forked.cached_tokens.at(2), 49);
    const RunOutcome solo = RunJobs({{1, prompt, 12}}, 64, 16, Options(8, 64, false));
    for (RequestId id = 1; id <= 3; ++id) EXPECT_EQ(forked.generated.at(id), solo.generated.at(1));
    // Fan-out: a shared part (37 tokens: two full blocks and a partial one, copied) and a question each.
    std::vector<Job> fan;
    for (int i = 0; i < 4; ++i) {
      fan.push_back({RequestId(i + 1), Concat(shared, FakePrompt(20 + i, 5 + i)), 10, 0, i == 0 ? 0u : 1u});
    }
    const RunOutcome fanned = RunJobs(fan, 64, 16, Options(8, 64, caching));
    EXPECT_EQ(fanned.prefill_rows, 42 + 6 + 7 + 8);
    for (const Job& job : fan) {
      Job alone = job;
      alone.fork_of = 0;
      const RunOutcome by_itself = RunJobs({alone}, 64, 16, Options(8, 64, false));
      EXPECT_EQ(fanned.generated.at(job.id), by_itself.generated.at(job.id)) << job.id;
    }
  }
}

TEST(SchedulerPrefixTest, PreemptionAndTightPoolsNeverFreeASharedBlock) {
  // Shared prefixes in a pool too small for all of them at once: preemption drops only the victim's
  // references, recompute attaches what is still cached, and every output equals a roomy uncached run's.
  const std::vector<int32_t> shared = FakePrompt(2, 20);
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(
        {RequestId(i + 1), Concat(shared, FakePrompt(30 + i, 1 + i)), 24, i / 2, i % 3 == 2 ? 1u : 0u});
  }
  const RunOutcome tight = RunJobs(jobs, 14, 4, Options(6, 16, true));
  EXPECT_GT(tight.preemptions, 0);
  const RunOutcome roomy = RunJobs(jobs, 256, 4, Options(6, 64, false));
  EXPECT_EQ(roomy.preemptions, 0);
  for (const Job& job : jobs) EXPECT_EQ(tight.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
}

TEST(SchedulerPrefixTest, APoolFullOfCachedBlocksStillAdmits) {
  // 8 blocks of 4: the first request leaves 7 cached idle blocks; a different prompt needing all 8 evicts
  // them (the cache costs no capacity).
  auto pool = BlockPool::Create(testing::FakeLayout(4), 8);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, Options(4, 64, true));
  scheduler.Add(1, FakePrompt(1, 28));
  while (scheduler.tokens(1).size() < 30) scheduler.Update(FakeForward(scheduler.Schedule(), 4));
  scheduler.Remove(1);
  EXPECT_EQ((*pool)->num_cached_idle(), 7);
  EXPECT_EQ((*pool)->num_free(), 8);
  scheduler.Add(2, FakePrompt(2, 31));
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].count, 31);
  EXPECT_EQ((*pool)->num_used(), 8);
  EXPECT_EQ((*pool)->evictions(), 7);
  scheduler.Update(FakeForward(plan, 4));
  scheduler.Remove(2);
  EXPECT_EQ((*pool)->num_used(), 0);
}

TEST(SchedulerPrefixTest, ANeighbourAdmittedBesideTheComputingOneWaitsOneStepThenAttaches) {
  // L computes the shared blocks in step 0; F, admitted in the same step, claims nothing of them and waits;
  // in step 1 (they were published by step 0's Update) F attaches them and computes only its own tail.
  const std::vector<int32_t> shared = FakePrompt(8, 40);
  const std::vector<int32_t> mine = Concat(shared, FakePrompt(9, 6));
  auto pool = BlockPool::Create(testing::FakeLayout(16), 32);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, Options(4, 64, true));
  scheduler.Add(1, Concat(shared, FakePrompt(10, 4)));
  scheduler.Add(2, mine);
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].id, 1u);
  EXPECT_TRUE(scheduler.running(2));
  scheduler.Update(FakeForward(plan, 16));
  plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[1].id, 2u);
  EXPECT_EQ(plan.chunks[1].start, 32);
  EXPECT_EQ(plan.chunks[1].count, 14);
  EXPECT_EQ(scheduler.cached_tokens(2), 32);
  scheduler.Update(FakeForward(plan, 16));
  while (scheduler.tokens(2).size() < mine.size() + 3)
    scheduler.Update(FakeForward(scheduler.Schedule(), 16));
  const std::vector<int32_t> out(scheduler.tokens(2).begin() + int64_t(mine.size()),
                                 scheduler.tokens(2).end());
  scheduler.Remove(1);
  scheduler.Remove(2);
  const RunOutcome solo = RunJobs({{2, mine, 3}}, 32, 16, Options(4, 64, false));
  EXPECT_EQ(out, solo.generated.at(2));
  EXPECT_EQ((*pool)->num_used(), 0);
}

}  // namespace
}  // namespace lockstep
