// Speculative decoding in the scheduler (SetDraft, ScheduledChunk::draft_count), with the fabricated model
// of scheduler_testing.h: a sampled token is a hash of the KV read back from the sequence's own blocks, so a
// rejected draft's KV counted as computed, a block published with it, or a draft row reading the wrong
// blocks changes the outputs from the undrafted run's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/scheduler.h"
#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::Drafter;
using testing::FakeForward;
using testing::FakeLayout;
using testing::FakePrompt;
using testing::Job;
using testing::kFakeVocab;
using testing::RunJobs;
using testing::RunOutcome;

class SchedulerDraftTest : public ::testing::Test {
 protected:
  static SchedulerOptions Options(int max_seqs, int max_batch_tokens) {
    SchedulerOptions options;
    options.max_seqs = max_seqs;
    options.max_batch_tokens = max_batch_tokens;
    return options;
  }
  // Drafts up to `k` tokens of the reference run's output from where the job is, right for the first
  // `(generated % (k + 2))` of them and wrong after that (so every acceptance length occurs), never past
  // the job's max_tokens.
  static Drafter OracleDrafter(const RunOutcome& reference, int32_t k) {
    return [&reference, k](const Job& job, std::span<const int32_t> tokens) {
      const std::vector<int32_t>& out = reference.generated.at(job.id);
      const int32_t generated = int32_t(tokens.size() - job.prompt.size());
      const int32_t room = std::min(k, job.max_tokens - generated - 1);
      std::vector<int32_t> draft;
      const int32_t right = generated % (k + 2);
      for (int32_t i = 0; i < room; ++i) {
        const int32_t token = out[size_t(generated + i)];
        draft.push_back(i < right ? token : (token + 1) % kFakeVocab);
      }
      return draft;
    };
  }
};

TEST_F(SchedulerDraftTest, DraftsGiveTheUndraftedOutputsInFewerSteps) {
  std::vector<Job> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(i, 5 + 7 * i), 40, i});
  const RunOutcome plain = RunJobs(jobs, 64, 4, Options(8, 64));
  const RunOutcome drafted = RunJobs(jobs, 64, 4, Options(8, 64), OracleDrafter(plain, 4));
  for (const Job& job : jobs) EXPECT_EQ(drafted.generated.at(job.id), plain.generated.at(job.id)) << job.id;
  EXPECT_LT(drafted.steps, plain.steps);
}

// Blocks filled by decoding are published; a later prompt made of an earlier job's prompt and output attaches
// them. Rejected drafts wrote KV past the accepted positions, in blocks later published: had that KV been
// published (or counted as computed), the later job's output would differ.
TEST_F(SchedulerDraftTest, OnlyConfirmedKvIsPublished) {
  const std::vector<int32_t> prompt = FakePrompt(3, 6);
  std::vector<Job> first = {{1, prompt, 30, 0}};
  const RunOutcome alone = RunJobs(first, 64, 4, Options(4, 32));
  std::vector<int32_t> follow = prompt;
  const std::vector<int32_t>& out = alone.generated.at(1);
  follow.insert(follow.end(), out.begin(), out.begin() + 25);
  follow.push_back(7);
  std::vector<Job> jobs = {{1, prompt, 30, 0}, {2, follow, 5, 60}};
  const RunOutcome plain = RunJobs(jobs, 64, 4, Options(4, 32));
  const RunOutcome drafted = RunJobs(jobs, 64, 4, Options(4, 32), OracleDrafter(plain, 3));
  for (const Job& job : jobs) EXPECT_EQ(drafted.generated.at(job.id), plain.generated.at(job.id)) << job.id;
  EXPECT_GE(drafted.cached_tokens.at(2), 28);  // the job's blocks, computed while drafting, were found
  EXPECT_EQ(drafted.cached_tokens.at(2), plain.cached_tokens.at(2));
}

// A pool too small for everyone: drafts never preempt a neighbour (they stay within the sequence's blocks
// when taking new ones would leave another running request without its spare), preempted requests lose
// their drafts, and the outputs are still the undrafted ones.
TEST_F(SchedulerDraftTest, DraftsUnderBlockPressureKeepTheOutputs) {
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(20 + i, 9), 30, 0});
  const RunOutcome plain = RunJobs(jobs, 24, 4, Options(5, 64));
  EXPECT_GT(plain.preemptions, 0);
  const RunOutcome drafted = RunJobs(jobs, 24, 4, Options(5, 64), OracleDrafter(plain, 6));
  for (const Job& job : jobs) EXPECT_EQ(drafted.generated.at(job.id), plain.generated.at(job.id)) << job.id;
  EXPECT_LE(drafted.preemptions, plain.preemptions);
}

// The plan itself: a decode row with drafts carries them as its next rows, every row wanting logits, in
// consecutive logit rows; the budget trims the draft; Update keeps the sampled tokens and counts as computed
// only the rows whose input was confirmed.
TEST_F(SchedulerDraftTest, PlanAndUpdate) {
  auto pool = BlockPool::Create(FakeLayout(4), 16);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, Options(2, 4));
  scheduler.Add(1, {10, 11, 12});
  StepPlan prefill = scheduler.Schedule();
  ASSERT_EQ(prefill.chunks.size(), 1u);
  scheduler.Update(StepResult{{{1, 20}}});  // tokens 10 11 12 20; computed 3

  scheduler.SetDraft(1, {21, 22, 23, 24, 25});
  StepPlan plan = scheduler.Schedule();
  ASSERT_EQ(plan.chunks.size(), 1u);
  const ScheduledChunk& chunk = plan.chunks[0];
  EXPECT_TRUE(chunk.decode);
  EXPECT_TRUE(chunk.sample);
  EXPECT_EQ(chunk.draft_count, 3);  // the budget of 4 rows: the decode row and three drafts
  EXPECT_EQ(chunk.count, 4);
  EXPECT_EQ(chunk.logit_row, 0);
  EXPECT_EQ(plan.batch.LogitRows(), 4);
  EXPECT_EQ(plan.decode_tokens, 4);
  const int32_t inputs[] = {20, 21, 22, 23};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.batch.rows[size_t(i)].position, 3 + i);
    EXPECT_EQ(plan.batch.rows[size_t(i)].token, inputs[i]);
    EXPECT_TRUE(plan.batch.rows[size_t(i)].wants_logits);
  }
  // Sampled 21 (confirms row 1's input), 22 (confirms row 2's), then 30 where the draft said 23.
  scheduler.Update(StepResult{{{1, 21}, {1, 22}, {1, 30}}});
  EXPECT_EQ(scheduler.tokens(1), (std::vector<int32_t>{10, 11, 12, 20, 21, 22, 30}));
  EXPECT_EQ(scheduler.num_computed(1), 6);
  EXPECT_TRUE(scheduler.draft(1).empty());  // drafts last one step

  // Without a draft: an ordinary decode row at the first unconfirmed position.
  StepPlan next = scheduler.Schedule();
  ASSERT_EQ(next.chunks.size(), 1u);
  EXPECT_EQ(next.chunks[0].draft_count, 0);
  EXPECT_EQ(next.chunks[0].start, 6);
  EXPECT_EQ(next.batch.rows[0].token, 30);
  scheduler.Update(StepResult{{{1, 31}}});
  EXPECT_EQ(scheduler.num_computed(1), 7);
}

}  // namespace
}  // namespace lockstep
