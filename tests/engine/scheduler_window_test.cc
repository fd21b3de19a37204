// Sliding-window KV release in the scheduler (SchedulerOptions::kv_window), with the fabricated model of
// scheduler_testing.h reading each row's window from its own blocks: a released block read again, or one
// reused by another sequence while still in a window, fails an expectation or changes an output.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/scheduler.h"
#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::FakePrompt;
using testing::Job;
using testing::RunJobs;
using testing::RunOutcome;

constexpr int32_t kBlock = 16;
constexpr int32_t kWindow = 16;  // AttentionStart keeps at most 2 blocks after a step, 3 while writing

SchedulerOptions Options(int max_seqs, int max_batch_tokens, bool caching, int32_t window) {
  SchedulerOptions o;
  o.max_seqs = max_seqs;
  o.max_batch_tokens = max_batch_tokens;
  o.prefix_caching = caching;
  o.kv_window = window;
  return o;
}

std::vector<int32_t> ConcatTokens(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(SchedulerWindowTest, WindowedSequencesFitAPoolTheirWholeContextsDoNot) {
  // Four requests growing to 100 tokens (7 blocks each, 28 in all) in a pool of 12 blocks.
  std::vector<Job> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(i, 5 + 7 * i), 95 - 7 * i});
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "cache on" : "cache off");
    const RunOutcome tight = RunJobs(jobs, 12, kBlock, Options(8, 32, caching, kWindow));
    EXPECT_EQ(tight.preemptions, 0);
    const RunOutcome roomy = RunJobs(jobs, 64, kBlock, Options(8, 32, false, kWindow));
    for (const Job& job : jobs) EXPECT_EQ(tight.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
    // Without the window (the same fabricated model reading everything) the pool is too small.
    EXPECT_GT(RunJobs(jobs, 12, kBlock, Options(8, 32, caching, 0)).preemptions, 0);
  }
}

TEST(SchedulerWindowTest, ReleasedBlocksServeLaterPromptsOnlyWhileStillCached) {
  // Request 1 runs a 70-token prompt (released block by block as its chunks pass); request 2 repeats it
  // later and attaches its cached blocks; requests 3..6 of other prompts then press the pool so that the
  // idle released blocks are evicted and reused; request 7 repeats the prompt again and must recompute
  // what was evicted. Every output equals the request run alone, uncached, in a roomy pool.
  const std::vector<int32_t> prompt = FakePrompt(7, 70);
  std::vector<Job> jobs = {{1, prompt, 20}, {2, prompt, 20, 30}};
  for (int i = 0; i < 4; ++i) jobs.push_back({RequestId(3 + i), FakePrompt(20 + i, 60), 30, 60});
  jobs.push_back({7, ConcatTokens(prompt, FakePrompt(40, 3)), 20, 120});
  const RunOutcome run = RunJobs(jobs, 12, kBlock, Options(8, 24, true, kWindow));
  EXPECT_EQ(run.cached_tokens.at(2), 64);  // 4 full blocks, the last token's block recomputed
  EXPECT_LT(run.cached_tokens.at(7), 64);  // some were evicted meanwhile
  for (const Job& job : jobs) {
    const RunOutcome alone =
        RunJobs({{job.id, job.prompt, job.max_tokens}}, 64, kBlock, Options(8, 24, false, kWindow));
    EXPECT_EQ(run.generated.at(job.id), alone.generated.at(job.id)) << job.id;
  }
}

TEST(SchedulerWindowTest, AForkOfAParentThatRanAheadComputesItsOwnWindow) {
  // The child arrives when its parent has decoded 40 tokens past the shared prompt and released the blocks
  // the child's window needs: it must not share the holes (caching off: it recomputes; on: it attaches
  // what is still cached). A child arriving at once shares as usual.
  const std::vector<int32_t> prompt = FakePrompt(3, 40);
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "cache on" : "cache off");
    const std::vector<Job> late = {{1, prompt, 60}, {2, prompt, 20, 45, 1}};
    const std::vector<Job> early = {{1, prompt, 60}, {2, prompt, 20, 0, 1}};
    const RunOutcome solo = RunJobs({{1, prompt, 60}}, 64, kBlock, Options(8, 64, false, kWindow));
    for (const auto* jobs : {&late, &early}) {
      const RunOutcome run = RunJobs(*jobs, 12, kBlock, Options(8, 64, caching, kWindow));
      EXPECT_EQ(run.generated.at(1), solo.generated.at(1));
      ASSERT_EQ(run.generated.at(2).size(), 20u);
      EXPECT_TRUE(
          std::equal(run.generated.at(2).begin(), run.generated.at(2).end(), solo.generated.at(1).begin()));
    }
  }
}

}  // namespace
}  // namespace lockstep
