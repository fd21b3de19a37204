#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "base/status.h"
#include "model/attention.h"

namespace lockstep {

namespace {

// A recurrent state cannot be cut at a prefix: no prefix caching for models with one, unless a snapshot
// cache keeps states at block boundaries (Scheduler's comment).
SchedulerOptions EffectiveOptions(SchedulerOptions options, const RecurrentStatePool* states,
                                  const RecurrentStateCache* snapshots) {
  if (states != nullptr && snapshots == nullptr) options.prefix_caching = false;
  return options;
}

// How many of the first `limit` tokens of `a` and `b` are equal.
size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, size_t limit) {
  LOCKSTEP_CHECK(limit <= a.size() && limit <= b.size());
  return size_t(std::mismatch(a.begin(), a.begin() + ptrdiff_t(limit), b.begin()).first - a.begin());
}

}  // namespace

Scheduler::Scheduler(BlockPool& pool, const SchedulerOptions& options, RecurrentStatePool* states,
                     RecurrentStateCache* snapshots)
    : pool_(pool),
      states_(states),
      snapshots_(states != nullptr && options.prefix_caching ? snapshots : nullptr),
      options_(EffectiveOptions(options, states, snapshots_)),
      kv_(pool, KvCacheOptions{options_.prefix_caching, options_.cache_salt}) {
  LOCKSTEP_CHECK(options_.max_seqs >= 1 && options_.max_batch_tokens >= 1);
  LOCKSTEP_CHECK(snapshots_ == nullptr || snapshots_->state_floats() == states_->state_floats());
}

Scheduler::~Scheduler() = default;  // kv_ releases every block still held

bool Scheduler::CanEverFit(int64_t total_tokens) const {
  return pool_.BlocksFor(total_tokens) <= pool_.num_blocks();
}

void Scheduler::Add(RequestId id, std::vector<int32_t> prompt, RequestId fork_of, PromptRows prompt_rows,
                    std::vector<float> lora_scales, int32_t shared_prefix_hint) {
  LOCKSTEP_CHECK(!prompt.empty());
  LOCKSTEP_CHECK(seqs_.count(id) == 0);
  auto seq = std::make_unique<Seq>();
  seq->id = id;
  seq->prompt_len = int32_t(prompt.size());
  seq->prefill_until = seq->prompt_len;
  seq->tokens = std::move(prompt);
  if (shared_prefix_hint > 0 && shared_prefix_hint <= seq->prompt_len) {
    seq->hinted_boundary = shared_prefix_hint / pool_.block_tokens() * pool_.block_tokens();
  }
  seq->prompt_rows = prompt_rows;
  if (prompt_rows == PromptRows::kLastEmbedding) seq->prompt_rows_from = seq->prompt_len - 1;
  while (!lora_scales.empty() && lora_scales.back() == 0) lora_scales.pop_back();
  seq->lora_scales = std::move(lora_scales);
  const Seq* parent =
      fork_of != 0 && prompt_rows == PromptRows::kNone && states_ == nullptr ? Find(fork_of) : nullptr;
  if (parent != nullptr && parent->lora_scales == seq->lora_scales) {
    // The common prefix of the two prompts, short of this prompt's last token (computed for its logits).
    const size_t shared = CommonPrefix(parent->tokens, seq->tokens,
                                       std::min<size_t>(size_t(parent->prompt_len), seq->tokens.size() - 1));
    if (shared > 0) {
      seq->fork_parent = fork_of;
      seq->fork_tokens = int32_t(shared);
      seq->parent_preemptions = parent->preemptions;
    }
  }
  kv_.Add(id, LoraCacheSalt(seq->lora_scales));
  waiting_.push_back(seq.get());
  seqs_.emplace(id, std::move(seq));
}

bool Scheduler::Remove(RequestId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  Seq* seq = it->second.get();
  kv_.Remove(id);
  ReleaseState(*seq);
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  seqs_.erase(it);
  return true;
}

void Scheduler::SetDraft(RequestId id, std::vector<int32_t> draft) { Get(id).draft = std::move(draft); }

Scheduler::Seq* Scheduler::Find(RequestId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

Scheduler::Seq& Scheduler::Get(RequestId id) const {
  Seq* seq = Find(id);
  LOCKSTEP_CHECK_MSG(seq != nullptr, "unknown request id");
  return *seq;
}

const std::vector<int32_t>& Scheduler::tokens(RequestId id) const { return Get(id).tokens; }
int32_t Scheduler::prompt_len(RequestId id) const { return Get(id).prompt_len; }
int32_t Scheduler::num_computed(RequestId id) const { return Get(id).num_computed; }
int32_t Scheduler::preemptions(RequestId id) const { return Get(id).preemptions; }
int32_t Scheduler::cached_tokens(RequestId id) const { return Get(id).cached_tokens; }
bool Scheduler::running(RequestId id) const { return Get(id).is_running; }

int32_t Scheduler::num_waiting_new() const {
  int32_t n = 0;
  for (const Seq* seq : waiting_) n += seq->started ? 0 : 1;
  return n;
}

void Scheduler::ReleaseState(Seq& seq) {
  if (seq.state_slot == kNoStateSlot) return;
  states_->Release(seq.state_slot);
  seq.state_slot = kNoStateSlot;
}

void Scheduler::Preempt(Seq& seq, StepPlan& plan) {
  kv_.Free(seq.id);
  ReleaseState(seq);  // the recompute starts from position 0 or from a snapshot (prefix cache)
  seq.draft.clear();
  seq.num_computed = 0;
  seq.prefill_until = int32_t(seq.tokens.size());
  seq.fork_parent = 0;
  seq.snapshot_at = 0;
  ++seq.preemptions;
  ++preemptions_total_;
  seq.is_running = false;
  running_.erase(std::remove(running_.begin(), running_.end(), &seq), running_.end());
  waiting_.push_front(&seq);
  plan.preempted.push_back(seq.id);
}

void Scheduler::AdvanceComputed(Seq& seq, int32_t to) {
  if (to <= seq.num_computed) return;
  if (seq.preemptions == 0) {  // a recompute after preemption is not a query of its own
    seq.cached_tokens += to - seq.num_computed;
    prefix_hits_total_ += to - seq.num_computed;
  }
  seq.num_computed = to;
}

KvCacheManager::UsableEnd Scheduler::SnapshotExists() const {
  if (snapshots_ == nullptr) return {};
  return [cache = snapshots_](BlockHash hash) { return cache->Contains(hash); };
}

int32_t Scheduler::SharedBoundary(const Seq& computing, const Seq& reader) const {
  // The reader attaches at most up to the block before its last token's (computed for its logits).
  const int32_t bt = pool_.block_tokens();
  const size_t limit = std::min(reader.tokens.size() - 1, computing.tokens.size());
  const int32_t ahead_of = std::max(computing.num_computed, reader.num_computed);
  if (int64_t(limit) / bt * bt <= ahead_of) return 0;
  const int32_t boundary = int32_t(CommonPrefix(computing.tokens, reader.tokens, limit)) / bt * bt;
  return boundary > ahead_of ? boundary : 0;
}

int32_t Scheduler::NextSnapshotPoint(const Seq& seq) const {
  if (snapshots_ == nullptr) return 0;
  const int32_t bt = pool_.block_tokens();
  int32_t next = 0;
  auto consider = [&](int32_t boundary) {
    if (boundary > seq.num_computed && (next == 0 || boundary < next)) next = boundary;
  };
  consider(seq.prompt_len / bt * bt);
  consider(seq.hinted_boundary);
  for (const auto& [id, other] : seqs_) {
    // Another request that reads the cache and will want these blocks: it has not computed them (it may be
    // waiting for this one's claims).
    if (other.get() == &seq || !other->reads_cache() || other->lora_scales != seq.lora_scales) continue;
    consider(SharedBoundary(seq, *other));
  }
  return next;
}

bool Scheduler::WaitsForSnapshot(const Seq& seq) const {
  bool older = true;  // `other` was admitted before `seq`
  for (const Seq* other : running_) {
    if (other == &seq) {
      older = false;
      continue;
    }
    const bool prefilling = int32_t(other->tokens.size()) - other->num_computed > 1 ||
                            other->num_computed < other->prefill_until - 1;  // decodes take no snapshot
    if (!prefilling || other->lora_scales != seq.lora_scales || other->num_computed < seq.num_computed ||
        (other->num_computed == seq.num_computed && !older)) {
      continue;
    }
    // NextSnapshotPoint(*other) stops at this boundary (seq reads the cache).
    if (SharedBoundary(*other, seq) > 0) return true;
  }
  return false;
}

void Scheduler::LoadSnapshot(Seq& seq, int32_t position) {
  LOCKSTEP_CHECK(seq.state_slot != kNoStateSlot);
  const bool loaded =
      snapshots_->Load(kv_.BoundaryHash(seq.id, seq.tokens, position), states_->data(seq.state_slot));
  LOCKSTEP_CHECK_MSG(loaded, "a matched KV run ends without its state snapshot");
}

void Scheduler::StoreSnapshot(Seq& seq) {
  if (snapshots_ == nullptr) return;
  const int32_t bt = pool_.block_tokens(), at = seq.num_computed;
  const bool planned = seq.snapshot_at == at;
  const bool in_reply = at % bt == 0 && at > seq.prompt_len / bt * bt;  // past the prompt's last boundary
  if (!planned && !in_reply) return;
  const BlockHash key = kv_.BoundaryHash(seq.id, seq.tokens, at);
  if (planned) {
    snapshots_->Store(key, states_->data(seq.state_slot));
    return;
  }
  // In its reply: wanted only if a next turn comes, so low priority (never evicting a snapshot a prompt or
  // a waiting request needs), and only the latest per request.
  if (seq.reply_snapshot.has_value() && *seq.reply_snapshot != key)
    snapshots_->DropLowPriority(*seq.reply_snapshot);
  seq.reply_snapshot = key;
  snapshots_->Store(key, states_->data(seq.state_slot), /*low_priority=*/true);
}

void Scheduler::AddChunk(Seq& seq, int32_t count, StepPlan& plan, int32_t draft) {
  ScheduledChunk chunk;
  chunk.id = seq.id;
  chunk.start = seq.num_computed;
  chunk.count = count;
  chunk.draft_count = draft;
  chunk.sample = (seq.prompt_rows == PromptRows::kNone || seq.prompt_rows == PromptRows::kLogits) &&
                 seq.num_computed + count - draft == int32_t(seq.tokens.size());
  chunk.decode = count - draft == 1 && chunk.start >= seq.prefill_until;
  LOCKSTEP_CHECK(draft == 0 || (chunk.decode && chunk.sample && draft <= int32_t(seq.draft.size())));
  {  // positions [from, prompt_rows_end()) of this chunk, each once
    const int32_t from = std::max(chunk.start, seq.prompt_rows_from);
    const int32_t to = std::min(chunk.start + count, seq.prompt_rows_end());
    if (from < to) {
      // Rows with outputs come first (PlanPrefill keeps them so), but for the one last row of kLastEmbedding.
      LOCKSTEP_CHECK(from == chunk.start || seq.prompt_rows == PromptRows::kLastEmbedding);
      if (seq.prompt_rows == PromptRows::kLogits) {
        chunk.prompt_logit_position = from;
        chunk.prompt_logit_count = to - from;
        chunk.prompt_logit_row = logit_rows_;
        logit_rows_ += chunk.prompt_logit_count;
      } else {
        chunk.embedding_position = from;
        chunk.embedding_count = to - from;
        chunk.embedding_row = embedding_rows_;
        embedding_rows_ += chunk.embedding_count;
      }
      seq.prompt_rows_from = to;
    }
  }
  const int32_t sequence = int32_t(plan.batch.sequences.size());
  plan.batch.sequences.push_back(
      SequenceKv{&kv_.addresses(seq.id), seq.lora_scales,
                 seq.state_slot == kNoStateSlot ? nullptr : states_->data(seq.state_slot)});
  if (chunk.sample) chunk.logit_row = logit_rows_;  // the first of 1 + draft
  for (int32_t i = 0; i < count; ++i) {
    BatchRow row;
    row.position = chunk.start + i;
    row.token = i == 0 || draft == 0 ? seq.tokens[size_t(row.position)] : seq.draft[size_t(i - 1)];
    row.sequence = sequence;
    row.wants_logits = (chunk.sample && i >= count - 1 - draft) ||
                       (row.position >= chunk.prompt_logit_position &&
                        row.position < chunk.prompt_logit_position + chunk.prompt_logit_count);
    row.wants_embedding = row.position >= chunk.embedding_position &&
                          row.position < chunk.embedding_position + chunk.embedding_count;
    plan.batch.rows.push_back(row);
  }
  if (chunk.sample) logit_rows_ += 1 + draft;
  (chunk.decode ? plan.decode_tokens : plan.prefill_tokens) += count;
  seq.started = true;
  plan.chunks.push_back(chunk);
}

int32_t Scheduler::PlanPrefill(Seq& seq, int32_t budget, StepPlan& plan, bool force) {
  if (budget <= 0) return 0;
  if (seq.fork_parent != 0) {
    const Seq* parent = Find(seq.fork_parent);
    const bool holds = parent != nullptr && parent->is_running &&
                       parent->preemptions == seq.parent_preemptions && seq.num_computed < seq.fork_tokens;
    if (!holds || force) {
      seq.fork_parent = 0;
    } else if (parent->num_computed < seq.fork_tokens) {
      return 0;  // the parent is still computing the shared part
    } else if (options_.kv_window > 0 &&
               !kv_.Holds(parent->id, AttentionStart(pool_.layout(), seq.fork_tokens, options_.kv_window))) {
      // The parent ran ahead and released blocks this child's window still reads: compute (or attach
      // from the prefix cache) instead.
      seq.fork_parent = 0;
    } else {
      kv_.Share(seq.id, parent->id, seq.fork_tokens);
      AdvanceComputed(seq, seq.fork_tokens);
      seq.fork_parent = 0;
    }
  }
  const std::span<const int32_t> tokens = seq.tokens;
  int32_t end = int32_t(tokens.size());
  if (seq.reads_cache()) {
    const int32_t attached = kv_.AttachCached(seq.id, tokens, seq.num_computed, SnapshotExists());
    if (snapshots_ != nullptr && attached > seq.num_computed) LoadSnapshot(seq, attached);
    AdvanceComputed(seq, attached);
    if (!force) end = kv_.ClaimedElsewhereFrom(seq.id, tokens, seq.num_computed);
    if (!force && snapshots_ != nullptr && WaitsForSnapshot(seq)) return 0;
  } else if (seq.num_computed < seq.prompt_rows_from) {
    // A recompute after preemption: rows whose outputs were planned already come without them, so a chunk
    // that reaches output rows starts with them (AddChunk's order).
    end = seq.prompt_rows_from;
  } else if (seq.num_computed < seq.prompt_rows_end()) {
    end = std::min(end, seq.num_computed + options_.max_prompt_logit_rows);
  }
  const int32_t snapshot_point = NextSnapshotPoint(seq);
  if (snapshot_point > 0) end = std::min(end, snapshot_point);
  const int64_t room =
      kv_.capacity_tokens(seq.id) + pool_.num_free() * pool_.block_tokens() - seq.num_computed;
  const int32_t count = int32_t(std::min<int64_t>({end - seq.num_computed, budget, room}));
  if (count <= 0) return 0;
  if (options_.whole_prompts && (seq.num_computed != 0 || count != int32_t(tokens.size()))) return 0;
  if (snapshot_point > 0 && seq.num_computed + count == snapshot_point) {
    seq.snapshot_at = snapshot_point;  // Update copies the state there
  }
  LOCKSTEP_CHECK(kv_.PrepareWrite(seq.id, seq.num_computed, seq.num_computed + count));
  AddChunk(seq, count, plan);
  return count;
}

void Scheduler::ScheduleDecodes(StepPlan& plan, int32_t& budget) {
  // running_ may shrink from the back while we walk it (preemption of the newest).
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Seq* seq = running_[i];
    if (int32_t(seq->tokens.size()) - seq->num_computed != 1 || seq->num_computed < seq->prefill_until - 1) {
      continue;  // still prefilling
    }
    bool self_preempted = false;
    while (!kv_.PrepareWrite(seq->id, seq->num_computed, seq->num_computed + 1)) {
      // Everything behind index i is not yet scheduled this step; the newest of them is the victim.
      Seq* victim = running_.back();
      Preempt(*victim, plan);
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    const int32_t draft = PlanDraft(*seq, budget - 1);
    AddChunk(*seq, 1 + draft, plan, draft);
    budget -= 1 + draft;
  }
}

int32_t Scheduler::PlanDraft(Seq& seq, int32_t budget) {
  const int32_t from = seq.num_computed + 1;  // the first draft row's position
  int32_t to = from + std::min<int32_t>(int32_t(seq.draft.size()), std::max(budget, 0));
  if (to == from || states_ != nullptr) return 0;  // a rejected draft row would advance the state
  // New blocks only while every other running request keeps one spare for its own next decode; else the
  // draft stays within the blocks this sequence holds.
  if (kv_.BlocksToWrite(seq.id, to) + int64_t(running_.size()) - 1 > pool_.num_free()) {
    to = std::min<int32_t>(to, int32_t(kv_.capacity_tokens(seq.id)));
  }
  if (to <= from) return 0;
  LOCKSTEP_CHECK(kv_.PrepareWrite(seq.id, from, to));
  return to - from;
}

void Scheduler::SchedulePrefills(StepPlan& plan, int32_t& budget) {
  for (Seq* seq : running_) {
    if (budget <= 0) break;
    const int32_t remaining = int32_t(seq->tokens.size()) - seq->num_computed;
    if (remaining <= 1 && seq->num_computed >= seq->prefill_until - 1) continue;  // a decode (handled above)
    budget -= PlanPrefill(*seq, budget, plan, /*force=*/false);
  }
}

void Scheduler::Admit(StepPlan& plan, int32_t& budget) {
  if (!plan.preempted.empty()) return;  // blocks are short: let the running requests progress first
  while (!waiting_.empty() && budget > 0 && int32_t(running_.size()) < options_.max_seqs) {
    Seq* seq = waiting_.front();
    const std::span<const int32_t> tokens = seq->tokens;
    const int64_t known = int64_t(tokens.size());
    const PrefixMatch match =
        seq->reads_cache() ? kv_.Match(seq->id, tokens, SnapshotExists()) : PrefixMatch{};
    // Blocks for everything it knows plus its first new token, and one spare block per running request so
    // that their decodes do not immediately preempt it again (thrashing). Strictly FCFS: nobody overtakes it.
    if (kv_.BlocksToAdmit(match, known + 1) + int64_t(running_.size()) > pool_.num_free()) break;
    if (states_ != nullptr && states_->num_free() == 0) break;  // waits for a state slot
    waiting_.pop_front();
    if (states_ != nullptr) seq->state_slot = states_->Acquire();
    running_.push_back(seq);
    seq->is_running = true;
    // Blocks for the whole prompt now, so that its later chunks never wait for blocks (two half-prefilled
    // requests could otherwise hold the pool with no decode row to trigger preemption).
    LOCKSTEP_CHECK(kv_.Admit(seq->id, tokens, match, known));
    if (seq->preemptions == 0 && !seq->started && seq->reads_cache())
      prefix_queries_total_ += seq->prompt_len;
    if (snapshots_ != nullptr && match.tokens > 0) LoadSnapshot(*seq, match.tokens);
    AdvanceComputed(*seq, match.tokens);
    budget -= PlanPrefill(*seq, budget, plan, /*force=*/false);
  }
}

StepPlan Scheduler::Schedule() {
  LOCKSTEP_CHECK_MSG(last_chunks_.empty(), "Schedule() called twice without Update()");
  StepPlan plan;
  logit_rows_ = 0;
  embedding_rows_ = 0;
  int32_t budget = options_.max_batch_tokens;
  ScheduleDecodes(plan, budget);
  SchedulePrefills(plan, budget);
  Admit(plan, budget);
  if (plan.empty()) {
    // Every running request waits for another: the oldest computes on its own rather than the step idling.
    for (Seq* seq : running_) {
      if (PlanPrefill(*seq, budget, plan, /*force=*/true) > 0) break;
    }
  }
  last_chunks_ = plan.chunks;
  return plan;
}

void Scheduler::Update(const StepResult& result) {
  std::vector<RequestId> drafted;  // their tokens are appended here, before their blocks are published
  for (const ScheduledChunk& chunk : last_chunks_) {
    Seq* seq = Find(chunk.id);
    if (seq == nullptr) continue;
    LOCKSTEP_CHECK(seq->num_computed == chunk.start);
    if (chunk.draft_count > 0) {
      // Tokens sampled t_0..t_j: row i's input (the draft's i - 1) was right for i <= j, so positions
      // [start, start + j + 1) hold the right KV; none sampled (the request ends): the first row's is right.
      LOCKSTEP_CHECK(int32_t(seq->tokens.size()) == chunk.start + 1);
      int32_t sampled = 0;
      for (const SampledToken& token : result.tokens) {
        if (token.id != chunk.id) continue;
        LOCKSTEP_CHECK(sampled == 0 || seq->draft[size_t(sampled - 1)] == seq->tokens.back());
        seq->tokens.push_back(token.token);
        ++sampled;
      }
      LOCKSTEP_CHECK(sampled <= chunk.draft_count + 1);
      seq->num_computed += std::max(sampled, 1);
      drafted.push_back(chunk.id);
    } else {
      seq->num_computed += chunk.count;
    }
    if (!result.failed) StoreSnapshot(*seq);
    seq->snapshot_at = 0;
    if (!result.failed)
      kv_.Publish(seq->id, seq->tokens, seq->num_computed);  // blocks completed by this step
    if (options_.kv_window > 0) {  // blocks out of every layer's window from here on
      kv_.ReleaseBefore(seq->id, AttentionStart(pool_.layout(), seq->num_computed, options_.kv_window));
    }
  }
  for (Seq* seq : running_) seq->draft.clear();
  for (const SampledToken& sampled : result.tokens) {
    Seq* seq = Find(sampled.id);
    if (seq == nullptr || std::find(drafted.begin(), drafted.end(), sampled.id) != drafted.end()) continue;
    LOCKSTEP_CHECK_MSG(seq->num_computed == int32_t(seq->tokens.size()), "a token sampled before its prompt");
    seq->tokens.push_back(sampled.token);
  }
  last_chunks_.clear();
}

}  // namespace lockstep
