#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "base/status.h"

namespace lockstep {

Scheduler::Scheduler(BlockPool& pool, const SchedulerOptions& options) : pool_(pool), options_(options) {
  LOCKSTEP_CHECK(options_.max_seqs >= 1 && options_.max_batch_tokens >= 1);
}

Scheduler::~Scheduler() {
  for (auto& [id, seq] : seqs_) seq->table.Clear(pool_);
}

bool Scheduler::CanEverFit(int64_t total_tokens) const {
  return pool_.BlocksFor(total_tokens) <= pool_.num_blocks();
}

void Scheduler::Add(RequestId id, std::vector<int32_t> prompt) {
  LOCKSTEP_CHECK(!prompt.empty());
  LOCKSTEP_CHECK(seqs_.count(id) == 0);
  auto seq = std::make_unique<Seq>();
  seq->id = id;
  seq->prompt_len = int32_t(prompt.size());
  seq->prefill_until = seq->prompt_len;
  seq->tokens = std::move(prompt);
  waiting_.push_back(seq.get());
  seqs_.emplace(id, std::move(seq));
}

bool Scheduler::Remove(RequestId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  Seq* seq = it->second.get();
  seq->table.Clear(pool_);
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  seqs_.erase(it);
  return true;
}

Scheduler::Seq& Scheduler::Get(RequestId id) const {
  auto it = seqs_.find(id);
  LOCKSTEP_CHECK_MSG(it != seqs_.end(), "unknown request id");
  return *it->second;
}

const std::vector<int32_t>& Scheduler::tokens(RequestId id) const { return Get(id).tokens; }
int32_t Scheduler::prompt_len(RequestId id) const { return Get(id).prompt_len; }
int32_t Scheduler::num_computed(RequestId id) const { return Get(id).num_computed; }
int32_t Scheduler::preemptions(RequestId id) const { return Get(id).preemptions; }
bool Scheduler::running(RequestId id) const {
  const Seq* seq = &Get(id);
  return std::find(running_.begin(), running_.end(), seq) != running_.end();
}

int32_t Scheduler::num_waiting_new() const {
  int32_t n = 0;
  for (const Seq* seq : waiting_) n += seq->started ? 0 : 1;
  return n;
}

void Scheduler::Preempt(Seq& seq, StepPlan& plan) {
  seq.table.Clear(pool_);
  seq.num_computed = 0;
  seq.prefill_until = int32_t(seq.tokens.size());
  ++seq.preemptions;
  ++preemptions_total_;
  running_.erase(std::remove(running_.begin(), running_.end(), &seq), running_.end());
  waiting_.push_front(&seq);
  plan.preempted.push_back(seq.id);
}

void Scheduler::AddChunk(Seq& seq, int32_t count, StepPlan& plan) {
  ScheduledChunk chunk;
  chunk.id = seq.id;
  chunk.start = seq.num_computed;
  chunk.count = count;
  chunk.sample = seq.num_computed + count == int32_t(seq.tokens.size());
  chunk.decode = count == 1 && chunk.start >= seq.prefill_until;
  const int32_t sequence = int32_t(plan.batch.sequences.size());
  plan.batch.sequences.push_back(SequenceKv{&seq.table.addresses()});
  for (int32_t i = 0; i < count; ++i) {
    BatchRow row;
    row.position = chunk.start + i;
    row.token = seq.tokens[size_t(row.position)];
    row.sequence = sequence;
    row.wants_logits = chunk.sample && i == count - 1;
    plan.batch.rows.push_back(row);
  }
  if (chunk.sample) {
    int32_t logit_rows = 0;
    for (const ScheduledChunk& c : plan.chunks) logit_rows += c.sample ? 1 : 0;
    chunk.logit_row = logit_rows;
  }
  (chunk.decode ? plan.decode_tokens : plan.prefill_tokens) += count;
  seq.started = true;
  plan.chunks.push_back(chunk);
}

void Scheduler::ScheduleDecodes(StepPlan& plan, int32_t& budget) {
  // running_ may shrink from the back while we walk it (preemption of the newest).
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Seq* seq = running_[i];
    if (int32_t(seq->tokens.size()) - seq->num_computed != 1 || seq->num_computed < seq->prefill_until - 1) {
      continue;  // still prefilling
    }
    bool self_preempted = false;
    while (!seq->table.EnsureCapacity(pool_, seq->num_computed + 1)) {
      // Everything behind index i is not yet scheduled this step; the newest of them is the victim.
      Seq* victim = running_.back();
      Preempt(*victim, plan);
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    AddChunk(*seq, 1, plan);
    --budget;
  }
}

void Scheduler::SchedulePrefills(StepPlan& plan, int32_t& budget) {
  const int32_t block_tokens = pool_.block_tokens();
  for (Seq* seq : running_) {
    if (budget <= 0) break;
    const int32_t remaining = int32_t(seq->tokens.size()) - seq->num_computed;
    if (remaining <= 1 && seq->num_computed >= seq->prefill_until - 1) continue;  // a decode (handled above)
    // Rows the table plus the free blocks can hold.
    const int64_t room =
        seq->table.capacity_tokens(block_tokens) + pool_.num_free() * block_tokens - seq->num_computed;
    const int32_t count = int32_t(std::min<int64_t>({remaining, budget, room}));
    if (count <= 0) continue;
    LOCKSTEP_CHECK(seq->table.EnsureCapacity(pool_, seq->num_computed + count));
    AddChunk(*seq, count, plan);
    budget -= count;
  }
}

void Scheduler::Admit(StepPlan& plan, int32_t& budget) {
  if (!plan.preempted.empty()) return;  // blocks are short: let the running requests progress first
  while (!waiting_.empty() && budget > 0 && int32_t(running_.size()) < options_.max_seqs) {
    Seq* seq = waiting_.front();
    const int64_t known = int64_t(seq->tokens.size());
    // Blocks for everything it knows plus its first new token, and one spare block per running request so
    // that their decodes do not immediately preempt it again (thrashing). Strictly FCFS: nobody overtakes it.
    if (pool_.BlocksFor(known + 1) + int64_t(running_.size()) > pool_.num_free()) break;
    waiting_.pop_front();
    running_.push_back(seq);
    const int32_t count = int32_t(std::min<int64_t>(known, budget));
    // Blocks for the whole prompt now, so that its later chunks never wait for blocks (two half-prefilled
    // requests could otherwise hold the pool with no decode row to trigger preemption).
    LOCKSTEP_CHECK(seq->table.EnsureCapacity(pool_, known));
    AddChunk(*seq, count, plan);
    budget -= count;
  }
}

StepPlan Scheduler::Schedule() {
  LOCKSTEP_CHECK_MSG(last_chunks_.empty(), "Schedule() called twice without Update()");
  StepPlan plan;
  int32_t budget = options_.max_batch_tokens;
  ScheduleDecodes(plan, budget);
  SchedulePrefills(plan, budget);
  Admit(plan, budget);
  last_chunks_ = plan.chunks;
  return plan;
}

void Scheduler::Update(const StepResult& result) {
  for (const ScheduledChunk& chunk : last_chunks_) {
    auto it = seqs_.find(chunk.id);
    if (it == seqs_.end()) continue;
    Seq& seq = *it->second;
    LOCKSTEP_CHECK(seq.num_computed == chunk.start);
    seq.num_computed += chunk.count;
  }
  for (const SampledToken& sampled : result.tokens) {
    auto it = seqs_.find(sampled.id);
    if (it == seqs_.end()) continue;
    Seq& seq = *it->second;
    LOCKSTEP_CHECK_MSG(seq.num_computed == int32_t(seq.tokens.size()), "a token sampled before its prompt");
    seq.tokens.push_back(sampled.token);
  }
  last_chunks_.clear();
}

}  // namespace lockstep
