// Scheduler: the continuous-batching bookkeeping, with no kernels. It knows every request's tokens (prompt +
// sampled so far) and how many of them are in the KV cache ("computed"), asks the KvCacheManager for their
// blocks (which also says how many tokens are computed already: prefix cache, neighbours, forks), and each
// step decides which rows the one forward pass computes. Engine-thread only.
//
// Each step (Schedule):
//   1. decode rows: every running request whose prompt is done contributes its next token (oldest first).
//      When a decode row cannot get a KV block, the most recently admitted running request is preempted: its
//      block references are dropped and it goes back to the FRONT of the waiting queue, to be recomputed
//      later (its tokens are kept, so it continues exactly where it was; its published blocks stay cached,
//      so the recompute is mostly a cache hit). Never failed.
//   2. prefill chunks of running requests still in their prompt (oldest first), within max_batch_tokens:
//        fork child, parent not yet at the shared length  → waits (no rows)
//        fork child, parent there                         → shares the parent's KV, computes only its rest
//        at a block start whose block is now cached       → attaches it (a neighbour published it)
//        a later block claimed by a running neighbour     → the chunk stops at that block and waits for it
//   3. admission: waiting requests, first come first served (preempted ones first), while max_seqs, the
//      token budget and the free blocks allow: a request's longest cached prefix is attached and blocks for
//      all its known tokens + 1, plus one spare block per running request, must be free (cached idle blocks
//      count as free: they are evicted on demand); none is admitted in a step that preempted. Then as in 2.
// Update(result) records the rows as computed, publishes newly full blocks to the prefix cache (in the step
// that completes them) and appends the sampled tokens.
// Speculative decoding: SetDraft(id, tokens) before Schedule() gives a decoding request tokens to try after
// its next one; its decode row then carries them as extra rows (ScheduledChunk::draft_count), each wanting
// logits, within the budget and without taking a block another request's next decode would need. The
// engine samples row by row and stops at the first sampled token that differs from the draft; Update takes
// the tokens it sampled for the chunk (1 .. draft_count + 1) and counts as computed only the positions whose
// input was right, so a rejected draft's KV is overwritten later and never published. Remove(id) (finished,
// cancelled) drops the request's block references at once.
// Models with recurrent layers (qwen35; kv/recurrent_state_pool.h): each running request also holds a state
// slot, taken at admission (a request waits, FCFS, while none is free) and given back when it finishes, is
// removed or is preempted; its rows carry the slot's state (SequenceKv::recurrent_state). A state holds every
// computed position and cannot be cut at a prefix, so such models have no fork sharing and no draft rows (a
// rejected draft would have advanced the state), and prefix caching only with a snapshot cache
// (kv/recurrent_state_cache.h; without one: no hits, nothing published, a preempted request recomputes from
// position 0). With one, a prefill chunk ends at a snapshot point and the state there is copied into the
// cache (Update), named by the hash of the block ending there; a prefix hit (admission, or a neighbour's
// blocks attached mid-prefill) is a run of cached blocks ending at a snapshot, which is copied into the
// request's slot. Snapshot points of a request, block boundaries past what it has computed:
//   - its prompt's last block boundary (a next turn extends the prompt; a preempted request resumes there);
//   - the end of the full blocks it shares with another known request (waiting or running, same LoRA) that
//     has not computed them yet (fan-out over one document: the first computes it, the others attach it);
//   - the block boundary at or below its shared-prefix hint (Add's: e.g. the end of a system message);
//   - while decoding, each block boundary its generated tokens reach (a next turn's prompt holds the reply);
//     only the latest is kept, so a long reply holds one cache slot, not one per block.
// A request waits (as for a claim) while a running request ahead of it computes blocks they share up to
// such a snapshot point. The oldest running request is never preempted, and
// a wait always ends (a claim or a fork link ends when its owner computes the block, leaves or is preempted;
// if every running request would wait, the oldest computes anyway), so every request finishes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/recurrent_state_cache.h"
#include "kv/recurrent_state_pool.h"
#include "model/batch.h"

namespace lockstep {

using RequestId = uint64_t;  // as in engine/request.h

// What a request's prompt rows produce besides their KV (Scheduler::Add).
enum class PromptRows {
  kNone,    // only the last row's logits, sampled
  kLogits,  // every prompt row but the last wants logits too (prompt logprobs;
            // ScheduledChunk::prompt_logit_*)
  // every prompt row wants its embedding (ScheduledChunk::embedding_*) and none wants logits: an embedding
  // request, which samples nothing
  kEmbeddings,
  // only the last prompt row wants its embedding, instead of logits (last-token pooling): like kNone, the
  // request reads the prefix cache; it samples nothing
  kLastEmbedding,
};

struct SchedulerOptions {
  int max_seqs = 64;
  int max_batch_tokens = 512;
  bool prefix_caching = true;  // reuse full KV blocks across requests (KvCacheManager)
  uint64_t cache_salt = 0;     // mixed into every block hash
  // The model's ModelConfig::WidestWindow(): when > 0 (every layer windowed), a sequence's KV blocks wholly
  // below model/attention.h's AttentionStart of its next position are released after each step.
  int32_t kv_window = 0;
  // Prompt-logit (or embedding) rows (Add's prompt_rows) one chunk may carry: bounds the step's logits
  // buffer (rows × n_vocab floats) however long the prompt.
  int32_t max_prompt_logit_rows = 256;
  // A bidirectional model (ModelConfig::causal false): a prompt is planned whole in one chunk or not at all
  // (it waits for a step with room), since each of its tokens depends on all the others. The caller keeps
  // every prompt within max_batch_tokens and max_prompt_logit_rows, and turns prefix_caching off.
  bool whole_prompts = false;
};

// Rows [start, start + count) of one request in this step's batch.
struct ScheduledChunk {
  RequestId id = 0;
  int32_t start = 0;
  int32_t count = 0;
  bool sample = false;     // the chunk reaches the last known token: its last row's logits are sampled
  int32_t logit_row = -1;  // index among the batch's logit rows when sample
  bool decode = false;     // a decode row (one new token of a request past its prompt) rather than prefill
  // A decode row followed by this many draft rows (SetDraft): rows [start, start + count) with count =
  // draft_count + 1 all want logits, logit rows [logit_row, logit_row + count); row i's input is the draft's
  // token i - 1 (Scheduler::draft).
  int32_t draft_count = 0;
  // PromptRows::kLogits: the chunk's rows at positions [prompt_logit_position, + prompt_logit_count) want
  // logits for the prompt token after each; they are logit rows [prompt_logit_row, + prompt_logit_count),
  // just before the sampled row (logit_row) when the chunk also samples. Each position once per request,
  // even when recomputed after a preemption.
  int32_t prompt_logit_row = -1;
  int32_t prompt_logit_position = 0;
  int32_t prompt_logit_count = 0;
  // PromptRows::kEmbeddings: the chunk's rows at positions [embedding_position, + embedding_count) want their
  // embedding; they are the batch's embedding rows [embedding_row, + embedding_count). Each position once
  // per request, as above.
  int32_t embedding_row = -1;
  int32_t embedding_position = 0;
  int32_t embedding_count = 0;
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;  // decodes first, then prefill chunks, in batch row order
  Batch batch;                         // valid until the next Schedule/Remove
  std::vector<RequestId> preempted;    // preempted while planning this step
  int32_t prefill_tokens = 0;
  int32_t decode_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

struct SampledToken {
  RequestId id = 0;
  int32_t token = 0;
};

// The sampled token of every chunk with sample == true (any order); a chunk with draft rows: the tokens
// sampled for it in order, 1 to draft_count + 1 (each but the last equal to the draft's token there).
// failed: the forward pass did not complete (the engine ends the step's requests): their KV and states are
// not published to the prefix cache.
struct StepResult {
  std::vector<SampledToken> tokens;
  bool failed = false;
};

class Scheduler {
 public:
  // `states`: the state slots of a model with recurrent layers (borrowed; must outlive the scheduler), else
  // null. `snapshots`: with states, the snapshot cache that makes prefix caching possible for such a model
  // (borrowed likewise; unused with prefix caching off), else null.
  Scheduler(BlockPool& pool, const SchedulerOptions& options, RecurrentStatePool* states = nullptr,
            RecurrentStateCache* snapshots = nullptr);
  ~Scheduler();  // releases every block still held

  // Tokens a request may ever hold at once (prompt + max_tokens) must fit the pool; see Add.
  bool CanEverFit(int64_t total_tokens) const;
  // Queues a new request at the back of the waiting queue. `prompt` non-empty; id unique. `fork_of`: a
  // request added earlier whose KV this one takes for their common prompt prefix instead of computing it (n >
  // 1, server-side fan-out); ignored when that request is unknown (finished) or shares nothing.
  // `prompt_rows` kLogits or kEmbeddings: the request's prompt rows want logits or embeddings (PromptRows),
  // so the request computes its whole prompt itself: no prefix-cache hit, no waiting for a neighbour's block
  // (it still publishes its blocks). Any but kNone: no fork. `lora_scales`: the request's LoRA adapter scales
  // (SequenceKv::lora_scales of its rows; trailing zeros dropped); they salt its block hashes, and a fork
  // needs equal scales. `shared_prefix_hint` (Request's): with a snapshot cache, one more snapshot point at
  // the block boundary at or below it.
  void Add(RequestId id, std::vector<int32_t> prompt, RequestId fork_of = 0,
           PromptRows prompt_rows = PromptRows::kNone, std::vector<float> lora_scales = {},
           int32_t shared_prefix_hint = 0);
  // Tokens to try after the request's next token in the next Schedule() (speculative decoding); used only
  // if that step decodes it, trimmed to the budget and the free blocks, and forgotten after the step.
  void SetDraft(RequestId id, std::vector<int32_t> draft);
  // This step's draft tokens of a request (empty when it has none).
  const std::vector<int32_t>& draft(RequestId id) const { return Get(id).draft; }
  // Drops a request (waiting or running) and its block references. False when unknown.
  bool Remove(RequestId id);

  StepPlan Schedule();
  // Applies the outcome of the last Schedule(): its rows are now in the KV; sampled tokens are appended.
  void Update(const StepResult& result);

  bool Contains(RequestId id) const { return seqs_.count(id) != 0; }
  const std::vector<int32_t>& tokens(RequestId id) const;
  int32_t prompt_len(RequestId id) const;
  int32_t num_computed(RequestId id) const;
  int32_t preemptions(RequestId id) const;
  // Prompt tokens of this request that were not computed for it (prefix cache, a neighbour, its fork parent).
  int32_t cached_tokens(RequestId id) const;
  bool running(RequestId id) const;
  int32_t num_running() const { return int32_t(running_.size()); }
  int32_t num_waiting() const { return int32_t(waiting_.size()); }
  // Waiting requests never scheduled yet (for the queue limit).
  int32_t num_waiting_new() const;
  int64_t preemptions_total() const { return preemptions_total_; }
  // Prefix cache: prompt tokens looked up (each request's first admission) and found computed.
  int64_t prefix_queries_total() const { return prefix_queries_total_; }
  int64_t prefix_hits_total() const { return prefix_hits_total_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  const BlockPool& pool() const { return pool_; }
  const KvCacheManager& kv() const { return kv_; }
  // For runs of blocks outside any request (Engine::ImportPrefix / ForgetPrefix), between steps.
  KvCacheManager& kv() { return kv_; }

 private:
  struct Seq {
    RequestId id = 0;
    std::vector<int32_t> tokens;
    int32_t prompt_len = 0;
    int32_t num_computed = 0;
    int32_t prefill_until =
        0;  // positions below this are prefill (the prompt, or everything when recomputing)
    int32_t preemptions = 0;
    bool started = false;  // scheduled at least once
    bool is_running = false;
    int32_t cached_tokens = 0;
    // Fork link (Add's fork_of) while it holds: take fork_tokens positions from the parent once it has them.
    RequestId fork_parent = 0;
    int32_t fork_tokens = 0;
    int32_t parent_preemptions = 0;  // the parent's count when linked: a preempted parent ends the link
    PromptRows prompt_rows = PromptRows::kNone;  // Add's
    std::vector<int32_t> draft;                  // SetDraft's, for the next step only
    std::vector<float> lora_scales;              // Add's, without trailing zeros
    StateSlot state_slot = kNoStateSlot;         // recurrent models: held while running
    int32_t snapshot_at = 0;  // the end of the chunk planned this step when it is a snapshot point, else 0
    std::optional<BlockHash> reply_snapshot;  // its latest snapshot at a boundary in its generated tokens
    int32_t hinted_boundary = 0;   // Add's shared_prefix_hint rounded down to a block boundary (0: none)
    int32_t prompt_rows_from = 0;  // the first position whose prompt logits (embedding) were not planned yet
    // The end of the positions that want an output: prompt_len - 1 (logits: for the token after each),
    // prompt_len (embeddings; kLastEmbedding's start at prompt_len - 1), 0 (none).
    int32_t prompt_rows_end() const {
      return prompt_rows == PromptRows::kNone     ? 0
             : prompt_rows == PromptRows::kLogits ? prompt_len - 1
                                                  : prompt_len;
    }
    // Reads the prefix cache and may wait for a neighbour's block (its prompt rows want no output but the
    // last one's).
    bool reads_cache() const {
      return prompt_rows == PromptRows::kNone || prompt_rows == PromptRows::kLastEmbedding;
    }
  };

  Seq& Get(RequestId id) const;
  Seq* Find(RequestId id) const;
  void Preempt(Seq& seq, StepPlan& plan);
  void ReleaseState(Seq& seq);
  // `draft`: rows after the first come from seq.draft (a decode row with drafts).
  void AddChunk(Seq& seq, int32_t count, StepPlan& plan, int32_t draft = 0);
  // The draft rows a decode row at seq.num_computed may carry: within the budget left after the decode row,
  // and taking new blocks only while every other running request keeps a spare one. Prepares their writes.
  int32_t PlanDraft(Seq& seq, int32_t budget);
  // Moves num_computed to `to` without computing (cache, neighbour, fork); counts the hit.
  void AdvanceComputed(Seq& seq, int32_t to);
  // Snapshot cache (snapshots_ set): which cached block runs may end where (a snapshot exists there); the
  // first snapshot point of the request past num_computed (0: none); copies the snapshot at `position` (a
  // run's end just matched or attached) into its slot.
  KvCacheManager::UsableEnd SnapshotExists() const;
  int32_t NextSnapshotPoint(const Seq& seq) const;
  // The block boundary ending the tokens `reader` shares with `computing` (short of the reader's last token,
  // computed for its logits), when it lies past what both have computed; 0 otherwise. NextSnapshotPoint
  // (computing) and WaitsForSnapshot (reader) meet there.
  int32_t SharedBoundary(const Seq& computing, const Seq& reader) const;
  void LoadSnapshot(Seq& seq, int32_t position);
  // After a step that computed seq's rows (Update): copies its state into the cache at a planned snapshot
  // point, or at a block boundary its generated tokens reached (replacing its previous one there).
  void StoreSnapshot(Seq& seq);
  // Whether another running request (ahead of this one, or as far and older) will compute and snapshot the
  // next full blocks this one shares with it: then this one waits and attaches them.
  bool WaitsForSnapshot(const Seq& seq) const;
  // Plans the next prefill chunk of a running request within `budget`; 0 when it waits. `force` ignores
  // fork links and claims (the step would otherwise be empty).
  int32_t PlanPrefill(Seq& seq, int32_t budget, StepPlan& plan, bool force);
  void ScheduleDecodes(StepPlan& plan, int32_t& budget);
  void SchedulePrefills(StepPlan& plan, int32_t& budget);
  void Admit(StepPlan& plan, int32_t& budget);

  BlockPool& pool_;
  RecurrentStatePool* states_;
  RecurrentStateCache* snapshots_;  // null unless states_ and prefix caching
  SchedulerOptions options_;
  KvCacheManager kv_;
  std::unordered_map<RequestId, std::unique_ptr<Seq>> seqs_;
  std::vector<Seq*> running_;  // admission order: oldest first
  std::deque<Seq*> waiting_;   // front is next
  std::vector<ScheduledChunk> last_chunks_;
  int32_t logit_rows_ = 0;      // logit rows of the step being planned
  int32_t embedding_rows_ = 0;  // embedding rows of the step being planned
  int64_t preemptions_total_ = 0;
  int64_t prefix_queries_total_ = 0;
  int64_t prefix_hits_total_ = 0;
};

}  // namespace lockstep
