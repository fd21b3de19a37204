#include "scheduler_testing.h"

#include <algorithm>
#include <memory>
#include <set>

namespace lockstep::testing {
namespace {

float* Slot(const Batch& batch, const BatchRow& row, int32_t position, int32_t block_tokens) {
  const auto& blocks = *batch.sequences[size_t(row.sequence)].blocks;
  static float dummy = 0;
  EXPECT_LT(size_t(position / block_tokens), blocks.size());
  if (size_t(position / block_tokens) >= blocks.size()) return &dummy;
  std::byte* block = blocks[size_t(position / block_tokens)];
  EXPECT_NE(block, nullptr) << "position " << position << " lies in a released block";
  if (block == nullptr) return &dummy;
  // Layout with one K float per slot (V follows; unused here).
  return reinterpret_cast<float*>(block) + position % block_tokens;
}

}  // namespace

KvLayout FakeLayout(int32_t block_tokens) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_kv_head = 1;
  layout.head_dim = 1;
  layout.block_tokens = block_tokens;
  layout.dtype = KvDtype::kF32;
  return layout;
}

StepResult FakeForward(const StepPlan& plan, int32_t block_tokens, int32_t window) {
  StepResult result;
  // Write KV of every row first (as the model does), then read contexts.
  for (const BatchRow& row : plan.batch.rows)
    *Slot(plan.batch, row, row.position, block_tokens) = float(row.token);
  size_t row_index = 0;
  for (const ScheduledChunk& chunk : plan.chunks) {
    const size_t first_row = row_index;
    const BatchRow& last = plan.batch.rows[row_index + size_t(chunk.count) - 1];
    row_index += size_t(chunk.count);
    if (chunk.draft_count > 0) {
      for (int32_t i = 0; i <= chunk.draft_count; ++i) {
        const BatchRow& row = plan.batch.rows[first_row + size_t(i)];
        EXPECT_TRUE(row.wants_logits);
        uint64_t h = 1469598103934665603ull;
        for (int32_t p = window > 0 ? std::max(0, row.position - window + 1) : 0; p <= row.position; ++p) {
          h = (h ^ uint64_t(*Slot(plan.batch, row, p, block_tokens))) * 1099511628211ull;
        }
        const int32_t token = int32_t(h % kFakeVocab);
        result.tokens.push_back({chunk.id, token});
        if (i == chunk.draft_count || token != plan.batch.rows[first_row + size_t(i) + 1].token) break;
      }
      continue;
    }
    if (!chunk.sample) {  // logits only for the prompt-logit rows (Scheduler::Add's PromptRows::kLogits)
      EXPECT_EQ(last.wants_logits, last.position < chunk.prompt_logit_position + chunk.prompt_logit_count);
      continue;
    }
    EXPECT_TRUE(last.wants_logits);
    uint64_t h = 1469598103934665603ull;
    for (int32_t p = window > 0 ? std::max(0, last.position - window + 1) : 0; p <= last.position; ++p) {
      h = (h ^ uint64_t(*Slot(plan.batch, last, p, block_tokens))) * 1099511628211ull;
    }
    result.tokens.push_back({chunk.id, int32_t(h % kFakeVocab)});
  }
  EXPECT_EQ(row_index, plan.batch.rows.size());
  return result;
}

RunOutcome RunJobs(const std::vector<Job>& jobs, int64_t num_blocks, int32_t block_tokens,
                   SchedulerOptions options, const Drafter& drafter) {
  auto pool = BlockPool::Create(FakeLayout(block_tokens), num_blocks);
  EXPECT_TRUE(pool.ok());
  RunOutcome outcome;
  {
    Scheduler scheduler(**pool, options);
    size_t next_job = 0;
    std::set<RequestId> live;
    for (int step = 0; step < 100000; ++step) {
      while (next_job < jobs.size() && jobs[next_job].arrival_step <= step) {
        const Job& job = jobs[next_job];
        EXPECT_TRUE(scheduler.CanEverFit(int64_t(job.prompt.size()) + job.max_tokens));
        scheduler.Add(job.id, job.prompt, job.fork_of);
        live.insert(job.id);
        ++next_job;
      }
      if (live.empty() && next_job == jobs.size()) break;
      if (scheduler.idle()) continue;  // nothing until the next arrival
      for (RequestId id : live) {
        if (!drafter || !scheduler.running(id)) continue;
        const std::vector<int32_t>& tokens = scheduler.tokens(id);
        if (scheduler.num_computed(id) + 1 != int32_t(tokens.size())) continue;
        const Job& job = *std::find_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.id == id; });
        scheduler.SetDraft(id, drafter(job, tokens));
      }
      StepPlan plan = scheduler.Schedule();
      ++outcome.steps;
      EXPECT_FALSE(plan.empty()) << "nothing planned at step " << step;
      EXPECT_LE(int32_t(plan.batch.rows.size()), options.max_batch_tokens);
      EXPECT_LE(scheduler.num_running(), options.max_seqs);
      // Every running request past its prompt gets its decode row each step (when nothing was preempted).
      if (plan.preempted.empty()) {
        std::set<RequestId> scheduled;
        for (const ScheduledChunk& c : plan.chunks) scheduled.insert(c.id);
        for (RequestId id : live) {
          if (scheduler.running(id) &&
              scheduler.num_computed(id) + 1 == int32_t(scheduler.tokens(id).size()) &&
              int32_t(plan.batch.rows.size()) < options.max_batch_tokens) {
            EXPECT_TRUE(scheduled.count(id)) << "decode of " << id << " skipped at step " << step;
          }
        }
      }
      for (const ScheduledChunk& c : plan.chunks) outcome.first_step.emplace(c.id, step);
      outcome.prefill_rows += plan.prefill_tokens;
      StepResult result = FakeForward(plan, block_tokens, options.kv_window);
      scheduler.Update(result);
      for (const SampledToken& t : result.tokens) {
        if (!live.count(t.id)) continue;  // a drafted chunk's tokens past the job's end
        auto& gen = outcome.generated[t.id];
        gen.push_back(t.token);
        const Job& job = *std::find_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.id == t.id; });
        if (int32_t(gen.size()) == job.max_tokens) {
          outcome.cached_tokens[t.id] = scheduler.cached_tokens(t.id);
          EXPECT_TRUE(scheduler.Remove(t.id));
          live.erase(t.id);
        }
      }
    }
    EXPECT_TRUE(live.empty());
    EXPECT_TRUE(scheduler.idle());
    outcome.preemptions = scheduler.preemptions_total();
    outcome.hits = scheduler.prefix_hits_total();
    outcome.queries = scheduler.prefix_queries_total();
    EXPECT_EQ((*pool)->num_used(), 0);  // every block back to free or cached idle
    EXPECT_EQ((*pool)->num_free(), num_blocks);
  }
  EXPECT_EQ((*pool)->num_free(), num_blocks);
  for (BlockId id = 0; id < BlockId(num_blocks); ++id) EXPECT_EQ((*pool)->ref_count(id), 0);
  return outcome;
}

std::vector<int32_t> FakePrompt(int seed, int len) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back((seed * 131 + i * 17) % kFakeVocab);
  return p;
}

}  // namespace lockstep::testing
