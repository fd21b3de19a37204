// Scheduler with prompt logits (Add's PromptRows::kLogits) over the fabricated model: every prompt position
// but the last gets a logit row exactly once — across chunks, beside decodes, and through a preemption in the
// middle of the prompt — the logit rows the chunks name are the batch's rows that want logits, and such a
// request neither reads the prefix cache nor forks.
#include <gtest/gtest.h>

#include <map>

#include "engine/scheduler.h"
#include "scheduler_testing.h"

namespace lockstep {
namespace {

using testing::FakeForward;
using testing::FakePrompt;

// Checks one plan's logit rows against its batch; appends each chunk's prompt-logit positions to *seen.
void CheckPlan(const StepPlan& plan, std::map<RequestId, std::vector<int32_t>>* seen) {
  std::vector<int32_t> logit_positions;  // position of each logit row, in batch order
  std::vector<size_t> row_chunk;
  size_t row = 0;
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    for (int32_t i = 0; i < plan.chunks[c].count; ++i, ++row) {
      if (plan.batch.rows[row].wants_logits) logit_positions.push_back(plan.batch.rows[row].position);
    }
  }
  ASSERT_EQ(row, plan.batch.rows.size());
  ASSERT_EQ(int64_t(logit_positions.size()), plan.batch.LogitRows());
  int64_t named = 0;
  for (const ScheduledChunk& chunk : plan.chunks) {
    for (int32_t i = 0; i < chunk.prompt_logit_count; ++i) {
      ASSERT_LT(size_t(chunk.prompt_logit_row + i), logit_positions.size());
      EXPECT_EQ(logit_positions[size_t(chunk.prompt_logit_row + i)], chunk.prompt_logit_position + i);
      (*seen)[chunk.id].push_back(chunk.prompt_logit_position + i);
    }
    named += chunk.prompt_logit_count;
    if (chunk.sample) {
      ++named;
      ASSERT_LT(size_t(chunk.logit_row), logit_positions.size());
      EXPECT_EQ(logit_positions[size_t(chunk.logit_row)], chunk.start + chunk.count - 1);
      if (chunk.prompt_logit_count > 0) {
        EXPECT_EQ(chunk.logit_row, chunk.prompt_logit_row + chunk.prompt_logit_count);
      }
    }
  }
  EXPECT_EQ(named, plan.batch.LogitRows());
}

std::vector<int32_t> Iota(int32_t n) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

TEST(SchedulerPromptLogitsTest, EveryPromptPositionOnceThroughChunksAndPreemption) {
  // 12 blocks of 4 tokens; one row of prefill per step beside request 1's decode, so request 1's growth
  // runs the pool dry while request 2 is still in its prompt, and request 2 (the newest) is preempted there.
  auto pool = BlockPool::Create(testing::FakeLayout(4), 12);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 2});
  scheduler.Add(1, FakePrompt(1, 4));
  StepPlan plan = scheduler.Schedule();
  scheduler.Update(FakeForward(plan, 4));
  scheduler.Add(2, FakePrompt(2, 30), /*fork_of=*/0, PromptRows::kLogits);
  std::map<RequestId, std::vector<int32_t>> seen;
  int32_t prompt_logits_at_preemption = -1;
  for (int step = 0; step < 400 && !scheduler.idle(); ++step) {
    plan = scheduler.Schedule();
    CheckPlan(plan, &seen);
    for (RequestId id : plan.preempted) {
      if (id == 2 && prompt_logits_at_preemption < 0) {
        prompt_logits_at_preemption = int32_t(seen[2].size());
      }
    }
    scheduler.Update(FakeForward(plan, 4));
    if (scheduler.Contains(1) && scheduler.tokens(1).size() >= 24) scheduler.Remove(1);
    if (scheduler.Contains(2) && scheduler.tokens(2).size() >= 32) scheduler.Remove(2);
  }
  EXPECT_TRUE(scheduler.idle());
  EXPECT_GT(prompt_logits_at_preemption, 0);  // preempted in the middle of its prompt
  EXPECT_LT(prompt_logits_at_preemption, 29);
  EXPECT_EQ(seen[2], Iota(29));  // positions 0..28, each once, in order
  EXPECT_TRUE(seen[1].empty());
}

TEST(SchedulerPromptLogitsTest, NeitherReadsTheCacheNorForksButPublishes) {
  auto pool = BlockPool::Create(testing::FakeLayout(4), 64);
  ASSERT_TRUE(pool.ok());
  Scheduler scheduler(**pool, {4, 64});
  const std::vector<int32_t> prompt = FakePrompt(3, 21);
  scheduler.Add(1, prompt);
  StepPlan plan = scheduler.Schedule();
  scheduler.Update(FakeForward(plan, 4));
  // Cached (request 1's full blocks) and forkable (request 1 is still running): request 2 takes neither.
  scheduler.Add(2, prompt, /*fork_of=*/1, PromptRows::kLogits);
  std::map<RequestId, std::vector<int32_t>> seen;
  plan = scheduler.Schedule();
  CheckPlan(plan, &seen);
  scheduler.Update(FakeForward(plan, 4));
  EXPECT_EQ(scheduler.cached_tokens(2), 0);
  EXPECT_EQ(seen[2], Iota(20));
  EXPECT_EQ(scheduler.prefix_queries_total(), 21);  // request 1's lookup only
  // A third request without prompt logits still finds the blocks.
  scheduler.Remove(1);
  scheduler.Add(3, prompt);
  plan = scheduler.Schedule();
  scheduler.Update(FakeForward(plan, 4));
  EXPECT_EQ(scheduler.cached_tokens(3), 20);
}

TEST(SchedulerPromptLogitsTest, ChunksCarryAtMostTheLogitRowLimit) {
  auto pool = BlockPool::Create(testing::FakeLayout(4), 64);
  ASSERT_TRUE(pool.ok());
  SchedulerOptions options{4, 100};
  options.max_prompt_logit_rows = 16;
  Scheduler scheduler(**pool, options);
  scheduler.Add(1, FakePrompt(4, 40), 0, PromptRows::kLogits);
  std::map<RequestId, std::vector<int32_t>> seen;
  std::vector<int32_t> counts;
  while (!scheduler.idle() && scheduler.tokens(1).size() == 40) {
    StepPlan plan = scheduler.Schedule();
    CheckPlan(plan, &seen);
    counts.push_back(plan.chunks.at(0).count);
    scheduler.Update(FakeForward(plan, 4));
  }
  EXPECT_EQ(counts, (std::vector<int32_t>{16, 16, 8}));  // the last chunk: 7 logit rows and the sampled one
  EXPECT_EQ(seen[1], Iota(39));
}

}  // namespace
}  // namespace lockstep
