// The scheduler with recurrent state slots (kv/recurrent_state_pool.h), driven by a fabricated recurrent
// model: each row folds its token into its sequence's state (checking that the state holds exactly the
// positions below it, and starting from nothing at position 0) and a sampled token is a hash of the state. So
// a slot shared by two running sequences, a state not recomputed after a preemption, or a prefix-cache hit
// without the state snapshot of exactly its prefix (kv/recurrent_state_cache.h) changes the output or fails
// the check.
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
  std::map<RequestId, int32_t> cached_tokens;  // at its end
  int64_t preemptions = 0;
  int32_t most_running = 0;
  int64_t hits = 0;
  int64_t prefill_rows = 0;
  int64_t snapshots = 0, snapshot_loads = 0, snapshot_evictions = 0;
};

// Runs the jobs (each arriving at its arrival_step) to the end with `slots` state slots and, when
// cache_slots > 0, a snapshot cache of that many (kv/recurrent_state_cache.h) with prefix caching on; checks
// that no two running requests share a slot on any step and that every slot and block comes back.
Outcome RunRecurrent(const std::vector<Job>& jobs, int64_t num_blocks, int32_t block_tokens,
                     SchedulerOptions options, int32_t slots, int32_t cache_slots = 0) {
  Outcome out;
  auto pool = BlockPool::Create(testing::FakeLayout(block_tokens), num_blocks);
  auto states = RecurrentStatePool::Create(kStateFloats, slots);
  auto cache = RecurrentStateCache::Create(kStateFloats, std::max(cache_slots, 1));
  EXPECT_TRUE(pool.ok() && states.ok() && cache.ok());
  if (!pool.ok() || !states.ok() || !cache.ok()) return out;
  options.prefix_caching = cache_slots > 0;
  {
    Scheduler scheduler(**pool, options, states->get(), cache_slots > 0 ? cache->get() : nullptr);
    std::map<RequestId, int32_t> left;
    size_t added = 0;
    for (int step = 0; step < 5000 && (added < jobs.size() || !scheduler.idle()); ++step) {
      for (const Job& job : jobs) {
        if (job.arrival_step != step) continue;
        scheduler.Add(job.id, job.prompt, job.fork_of, PromptRows::kNone, {}, job.shared_prefix_hint);
        left[job.id] = job.max_tokens;
        ++added;
      }
      if (scheduler.idle()) continue;
      StepPlan plan = scheduler.Schedule();
      out.most_running = std::max(out.most_running, scheduler.num_running());
      out.prefill_rows += plan.prefill_tokens;
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
        if (--left[t.id] == 0) {
          out.cached_tokens[t.id] = scheduler.cached_tokens(t.id);
          scheduler.Remove(t.id);
        }
      }
    }
    EXPECT_TRUE(scheduler.idle());
    EXPECT_EQ(added, jobs.size());
    out.preemptions = scheduler.preemptions_total();
    out.hits = scheduler.prefix_hits_total();
  }
  if (cache_slots > 0) {
    out.snapshots = (*cache)->stores();
    out.snapshot_loads = (*cache)->loads();
    out.snapshot_evictions = (*cache)->evictions();
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

// Requests over one document with their own questions.
std::vector<Job> FanOut(int n, int doc_len, int tokens, int arrival_step = 0) {
  const std::vector<int32_t> doc = FakePrompt(7, doc_len);
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> prompt = doc;
    for (int32_t t : FakePrompt(100 + i, 3 + i)) prompt.push_back(t);
    jobs.push_back({RequestId(i + 1), prompt, tokens, arrival_step});
  }
  return jobs;
}

TEST(SchedulerRecurrentTest, FanOutComputesTheSharedDocumentOnce) {
  const std::vector<Job> jobs = FanOut(4, 37, 6);  // a 37-token document: 9 full blocks of 4 shared
  for (int budget : {512, 16, 7}) {
    const Outcome off = RunRecurrent(jobs, 256, 4, {8, budget}, 4);
    const Outcome on = RunRecurrent(jobs, 256, 4, {8, budget}, 4, /*cache_slots=*/8);
    EXPECT_EQ(off.hits, 0);
    for (const Job& job : jobs) {
      EXPECT_EQ(on.generated.at(job.id), off.generated.at(job.id))
          << "budget " << budget << " job " << job.id;
    }
    // The first computes the document up to its last block boundary (36); the others wait for it and attach
    // its blocks and the snapshot there.
    EXPECT_EQ(on.cached_tokens.at(1), 0) << budget;
    for (RequestId id : {2, 3, 4}) EXPECT_EQ(on.cached_tokens.at(id), 36) << "budget " << budget;
    EXPECT_EQ(on.hits, 3 * 36);
    EXPECT_EQ(on.prefill_rows, off.prefill_rows - 3 * 36);
    EXPECT_EQ(on.snapshot_loads, 3);
  }
}

TEST(SchedulerRecurrentTest, ANextTurnResumesFromThePromptsLastBlockBoundary) {
  std::vector<Job> jobs;
  const std::vector<int32_t> first = FakePrompt(3, 22);
  jobs.push_back({1, first, 4});
  std::vector<int32_t> second = first;  // the first turn's prompt, then more
  for (int32_t t : FakePrompt(9, 11)) second.push_back(t);
  jobs.push_back({2, second, 4, /*arrival_step=*/20});  // after the first finished
  const Outcome off = RunRecurrent(jobs, 64, 4, {8, 512}, 2);
  const Outcome on = RunRecurrent(jobs, 64, 4, {8, 512}, 2, /*cache_slots=*/2);
  for (const Job& job : jobs) EXPECT_EQ(on.generated.at(job.id), off.generated.at(job.id)) << job.id;
  EXPECT_EQ(on.cached_tokens.at(2), 20);  // 22 prompt tokens: the snapshot at 20 (5 blocks of 4)
  // Each prompt's last block boundary (20, 32) and the first's reply's (24; evicted by 32, and the second's
  // at 36 finds no slot: a reply's snapshot never evicts a prompt's).
  EXPECT_EQ(on.snapshots, 3);
  EXPECT_EQ(on.snapshot_evictions, 1);
  EXPECT_EQ(on.snapshot_loads, 1);
}

TEST(SchedulerRecurrentTest, ANextTurnResumesFromItsReplysLastBlockBoundary) {
  // The first turn's 22 prompt tokens and 11 generated ones (positions up to 32 computed); the next turn's
  // prompt holds them all, then more.
  const std::vector<int32_t> first = FakePrompt(3, 22);
  const std::vector<Job> alone = {{1, first, 11}};
  const std::vector<int32_t> reply = RunRecurrent(alone, 64, 4, {8, 512}, 2).generated.at(1);
  ASSERT_EQ(reply.size(), 11u);
  std::vector<int32_t> second = first;
  second.insert(second.end(), reply.begin(), reply.end());
  for (int32_t t : FakePrompt(9, 5)) second.push_back(t);
  const std::vector<Job> jobs = {{1, first, 11}, {2, second, 4, /*arrival_step=*/30}};
  const Outcome off = RunRecurrent(jobs, 64, 4, {8, 512}, 2);
  const Outcome on = RunRecurrent(jobs, 64, 4, {8, 512}, 2, /*cache_slots=*/2);
  for (const Job& job : jobs) EXPECT_EQ(on.generated.at(job.id), off.generated.at(job.id)) << job.id;
  EXPECT_EQ(on.cached_tokens.at(2), 32);  // the snapshot taken while decoding, at 32
  EXPECT_EQ(on.snapshot_loads, 1);
}

TEST(SchedulerRecurrentTest, AReplyHoldsOneSpareSlotAndEvictsNoPromptSnapshot) {
  // A 9-token prompt (snapshot at 8) whose 30 generated tokens pass seven block boundaries (12 .. 36), then
  // another conversation, then the first prompt again with more: two slots, so the reply's snapshots must
  // replace each other and leave the first prompt's.
  const std::vector<int32_t> a = FakePrompt(3, 9);
  std::vector<int32_t> a2 = a;
  for (int32_t t : FakePrompt(9, 4)) a2.push_back(t);
  const std::vector<Job> jobs = {{1, a, 30}, {2, FakePrompt(4, 9), 3, 40}, {3, a2, 3, 50}};
  const Outcome off = RunRecurrent(jobs, 64, 4, {8, 512}, 2);
  const Outcome on = RunRecurrent(jobs, 64, 4, {8, 512}, 2, /*cache_slots=*/2);
  for (const Job& job : jobs) EXPECT_EQ(on.generated.at(job.id), off.generated.at(job.id)) << job.id;
  EXPECT_EQ(on.cached_tokens.at(3), 8);
  // The second prompt's snapshot evicts the reply's (at 36), the third's (at 12) the second's; the reply's
  // seven replaced each other without evicting.
  EXPECT_EQ(on.snapshot_evictions, 2);
}

TEST(SchedulerRecurrentTest, ASharedPrefixHintLeavesASnapshotForLaterRequests) {
  // Two conversations with one 23-token system message, the second arriving after the first finished: only
  // the hint (23: a snapshot at 20) leaves a state there for it; a hint past the prompt is ignored.
  const std::vector<int32_t> system = FakePrompt(5, 23);
  std::vector<int32_t> a = system, b = system;
  for (int32_t t : FakePrompt(8, 6)) a.push_back(t);
  for (int32_t t : FakePrompt(9, 9)) b.push_back(t);
  const std::vector<Job> plain = {{1, a, 3}, {2, b, 3, /*arrival_step=*/20}};
  std::vector<Job> hinted = plain;
  for (Job& job : hinted) job.shared_prefix_hint = 23;
  std::vector<Job> beyond = plain;
  beyond[0].shared_prefix_hint = 30;
  const Outcome off = RunRecurrent(plain, 64, 4, {8, 512}, 2);
  const Outcome unhinted = RunRecurrent(plain, 64, 4, {8, 512}, 2, /*cache_slots=*/4);
  const Outcome on = RunRecurrent(hinted, 64, 4, {8, 512}, 2, /*cache_slots=*/4);
  const Outcome past = RunRecurrent(beyond, 64, 4, {8, 512}, 2, /*cache_slots=*/4);
  for (const Job& job : plain) {
    EXPECT_EQ(unhinted.generated.at(job.id), off.generated.at(job.id)) << job.id;
    EXPECT_EQ(on.generated.at(job.id), off.generated.at(job.id)) << job.id;
    EXPECT_EQ(past.generated.at(job.id), off.generated.at(job.id)) << job.id;
  }
  EXPECT_EQ(unhinted.cached_tokens.at(2), 0);
  EXPECT_EQ(on.cached_tokens.at(2), 20);
  EXPECT_EQ(on.snapshot_loads, 1);
  EXPECT_EQ(past.cached_tokens.at(2), 0);
}

TEST(SchedulerRecurrentTest, EvictedSnapshotsAreNotHits) {
  // Turn one of two conversations, then turn two of the first: with one snapshot slot the second
  // conversation's snapshot has evicted the first's (its KV blocks are still cached, but unusable). 13-token
  // prompts and 3 generated tokens: no reply reaches a block boundary (16).
  const std::vector<int32_t> a = FakePrompt(3, 13), b = FakePrompt(4, 13);
  std::vector<int32_t> a2 = a;
  for (int32_t t : FakePrompt(9, 6)) a2.push_back(t);
  const std::vector<Job> jobs = {{1, a, 3}, {2, b, 3, 10}, {3, a2, 3, 20}};
  const Outcome off = RunRecurrent(jobs, 64, 4, {8, 512}, 2);
  const Outcome one = RunRecurrent(jobs, 64, 4, {8, 512}, 2, /*cache_slots=*/1);
  const Outcome two = RunRecurrent(jobs, 64, 4, {8, 512}, 2, /*cache_slots=*/2);
  for (const Job& job : jobs) {
    EXPECT_EQ(one.generated.at(job.id), off.generated.at(job.id)) << job.id;
    EXPECT_EQ(two.generated.at(job.id), off.generated.at(job.id)) << job.id;
  }
  EXPECT_EQ(one.cached_tokens.at(3), 0);
  EXPECT_EQ(one.snapshot_evictions, 2);  // b's evicts a's, then the second turn's (at 20) b's
  EXPECT_EQ(two.cached_tokens.at(3), 12);
  EXPECT_EQ(two.snapshot_evictions, 1);  // the second turn's evicts b's
}

TEST(SchedulerRecurrentTest, PreemptedRequestsResumeFromTheirSnapshot) {
  // 12 blocks of 4: three requests growing to 9 + 20 tokens take turns; each resumes from the snapshot at its
  // prompt's last block boundary (8) instead of position 0.
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back({RequestId(i + 1), FakePrompt(i, 9), 20});
  const Outcome roomy = RunRecurrent(jobs, 64, 4, {8, 64}, 3);
  const Outcome tight = RunRecurrent(jobs, 12, 4, {8, 64}, 3);
  const Outcome cached = RunRecurrent(jobs, 12, 4, {8, 64}, 3, /*cache_slots=*/4);
  EXPECT_GT(tight.preemptions, 0);
  EXPECT_GT(cached.preemptions, 0);
  EXPECT_GT(cached.snapshot_loads, 0);
  EXPECT_EQ(cached.hits, 0);  // a recompute is not a prefix-cache query of its own
  for (const Job& job : jobs) {
    EXPECT_EQ(tight.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
    EXPECT_EQ(cached.generated.at(job.id), roomy.generated.at(job.id)) << job.id;
  }
}

}  // namespace
}  // namespace lockstep
