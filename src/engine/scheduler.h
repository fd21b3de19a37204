// Scheduler: the continuous-batching bookkeeping, with no kernels. It knows every request's tokens (prompt +
// sampled so far) and how many of them are in the KV cache ("computed"), owns the sequences' block tables,
// and each step decides which rows the one forward pass computes. Engine-thread only.
//
// Each step (Schedule):
//   1. decode rows: every running request whose prompt is done contributes its next token (oldest first).
//      When a decode row cannot get a KV block, the most recently admitted running request is preempted: its
//      blocks are freed and it goes back to the FRONT of the waiting queue, to be recomputed from scratch
//      later (its tokens are kept, so it continues exactly where it was). Never failed.
//   2. prefill chunks of running requests still in their prompt (oldest first), within max_batch_tokens.
//   3. admission: waiting requests, first come first served (preempted ones first), while max_seqs, the
//      token budget and the free blocks allow (a request is admitted only when blocks for all its known
//      tokens + 1, plus one spare block per running request, are free; its whole prompt's blocks are taken
//      then; none is admitted in a step that preempted). Long prompts are chunked to the remaining budget.
// Update(result) then records the rows as computed and appends the sampled tokens. Remove(id) (finished,
// cancelled) frees the blocks at once. The oldest running request is never preempted, so every request
// finishes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "model/batch.h"

namespace lockstep {

using RequestId = uint64_t;  // as in engine/request.h

struct SchedulerOptions {
  int max_seqs = 64;
  int max_batch_tokens = 512;
};

// Rows [start, start + count) of one request in this step's batch.
struct ScheduledChunk {
  RequestId id = 0;
  int32_t start = 0;
  int32_t count = 0;
  bool sample = false;     // the chunk reaches the last known token: its last row's logits are sampled
  int32_t logit_row = -1;  // index among the batch's logit rows when sample
  bool decode = false;     // a decode row (one new token of a request past its prompt) rather than prefill
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

// The sampled token of every chunk with sample == true (any order).
struct StepResult {
  std::vector<SampledToken> tokens;
};

class Scheduler {
 public:
  Scheduler(BlockPool& pool, const SchedulerOptions& options);
  ~Scheduler();  // releases every block still held

  // Tokens a request may ever hold at once (prompt + max_tokens) must fit the pool; see Add.
  bool CanEverFit(int64_t total_tokens) const;
  // Queues a new request at the back of the waiting queue. `prompt` non-empty; id unique.
  void Add(RequestId id, std::vector<int32_t> prompt);
  // Drops a request (waiting or running) and frees its blocks. False when unknown.
  bool Remove(RequestId id);

  StepPlan Schedule();
  // Applies the outcome of the last Schedule(): its rows are now in the KV; sampled tokens are appended.
  void Update(const StepResult& result);

  bool Contains(RequestId id) const { return seqs_.count(id) != 0; }
  const std::vector<int32_t>& tokens(RequestId id) const;
  int32_t prompt_len(RequestId id) const;
  int32_t num_computed(RequestId id) const;
  int32_t preemptions(RequestId id) const;
  bool running(RequestId id) const;
  int32_t num_running() const { return int32_t(running_.size()); }
  int32_t num_waiting() const { return int32_t(waiting_.size()); }
  // Waiting requests never scheduled yet (for the queue limit).
  int32_t num_waiting_new() const;
  int64_t preemptions_total() const { return preemptions_total_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  const BlockPool& pool() const { return pool_; }

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
    BlockTable table;
  };

  Seq& Get(RequestId id) const;
  void Preempt(Seq& seq, StepPlan& plan);
  void AddChunk(Seq& seq, int32_t count, StepPlan& plan);
  void ScheduleDecodes(StepPlan& plan, int32_t& budget);
  void SchedulePrefills(StepPlan& plan, int32_t& budget);
  void Admit(StepPlan& plan, int32_t& budget);

  BlockPool& pool_;
  SchedulerOptions options_;
  std::unordered_map<RequestId, std::unique_ptr<Seq>> seqs_;
  std::vector<Seq*> running_;  // admission order: oldest first
  std::deque<Seq*> waiting_;   // front is next
  std::vector<ScheduledChunk> last_chunks_;
  int64_t preemptions_total_ = 0;
};

}  // namespace lockstep
