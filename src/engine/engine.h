// Engine: the continuous-batching inference loop. One engine thread owns the model's forward pass, the paged
// KV cache and the scheduler; every step it runs ONE Model::Forward over a ragged batch holding one decode
// row for each running request plus prefill chunks, samples each request's row with that request's own
// Sampler, and emits TokenEvents. Requests join and leave between steps.
//
// Thread-safety: Submit, Cancel, Stats, Shutdown and every RequestHandle method may be called from any
// thread. Callbacks (EventCallback) run on the engine thread and must not block (post to an executor / strand
// instead).
//
// Output is batch-invariant: a request's tokens (greedy or seeded sampling) are bit-identical whether it runs
// alone or beside others, whatever their arrival times; preemption + recompute gives the same tokens too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/request.h"
#include "kv/saved_prefix.h"
#include "model/batch.h"
#include "model/model.h"

namespace lockstep {

class Tokenizer;
class EventChannel;
class Inbox;

struct EngineOptions {
  int threads = 1;             // forward-pass threads (the engine thread is one of them)
  int max_seqs = 64;           // running sequences at most
  int max_batch_tokens = 512;  // rows per forward pass at most (decode rows + prefill chunks)
  // KV pool size: kv_tokens if > 0 (rounded up to whole blocks), else kv_memory_bytes if > 0 (rounded down),
  // else min(max_seqs × context, 1 GiB of KV), at least one full context.
  int64_t kv_tokens = 0;
  int64_t kv_memory_bytes = 0;
  int block_tokens = 16;
  KvDtype kv_dtype = KvDtype::kF16;
  // Requests waiting (submitted, not started, beyond the free sequence slots) at most; beyond:
  // ResourceExhausted. 0 = no waiting: requests beyond what can run at once are refused.
  int max_queue = 1024;
  int max_context = 0;  // context limit in tokens; 0 = the model's n_ctx_train
  // Automatic prefix caching (kv/kv_cache_manager.h): full KV blocks are kept, named by a hash of their
  // prefix, and reused by later prompts; idle cached blocks are evicted least recently used when a block is
  // needed, so the cache costs no capacity. Outputs are the same either way.
  bool prefix_caching = true;
  // Speculative decoding by n-gram lookup (engine/ngram_draft.h): while at most draft_max_seqs requests
  // run, each decode row may carry up to draft_tokens tokens copied from where the request's latest tokens
  // occurred before; the model checks them all in the same forward pass and every token up to the first
  // wrong one is kept. The tokens are exactly those without drafting (same logits: the pass is chunk
  // invariant; same sampler calls in the same order), for every sampling setting, grammar and stop rule;
  // only the number of steps changes. 0 = off.
  int draft_tokens = 0;
  int draft_max_seqs = 4;
  // Models with recurrent layers (qwen35): the recurrent states kept at once (kv/recurrent_state_pool.h), one
  // per running request, so at most max_seqs; 0 = max_seqs. Fewer bound the state memory (a request waits
  // for a free slot); ignored by other models. Such models run without drafts (engine/scheduler.h).
  int recurrent_slots = 0;
  // Models with recurrent layers and prefix caching on: snapshots of states at KV block boundaries kept at
  // once (kv/recurrent_state_cache.h; each as big as a state slot), least recently used evicted; a prefix
  // hit needs one where its cached KV ends. 0 = none: no prefix caching for such models. Ignored by others.
  // kAutomaticCacheSlots: as many as fit in the KV pool's memory, at least kMinAutomaticCacheSlots, at most
  // one per KV block (a snapshot is only of use where its block is cached); resolved in Engine::Create.
  static constexpr int kAutomaticCacheSlots = -1;
  static constexpr int kMinAutomaticCacheSlots = 8;
  int recurrent_cache_slots = kAutomaticCacheSlots;
};

// Engine-wide counters and the last step's shape (Engine::Stats()).
struct EngineStats {
  // Now / last step.
  int32_t running = 0;    // requests holding KV (being prefilled or decoded)
  int32_t waiting = 0;    // submitted and not running (queued or preempted)
  int32_t step_rows = 0;  // rows of the last forward pass
  int32_t step_prefill_tokens = 0;
  int32_t step_decode_tokens = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;
  int32_t block_tokens = 0;
  int64_t kv_blocks_cached = 0;  // blocks findable by their hash (in use or idle; idle ones count as free)
  bool prefix_caching = false;   // EngineOptions::prefix_caching
  KvDtype kv_dtype = KvDtype::kF16;  // EngineOptions::kv_dtype
  // Models with recurrent layers: the state slots (EngineOptions::recurrent_slots, resolved) and those held
  // by running requests; both 0 for other models.
  int32_t recurrent_slots_total = 0;
  int32_t recurrent_slots_used = 0;
  // Their snapshot cache (EngineOptions::recurrent_cache_slots, resolved: 0 when there is none): slots and
  // those holding a snapshot; snapshots taken, copied into a request's state (hits) and evicted.
  int32_t recurrent_cache_slots_total = 0;
  int32_t recurrent_cache_slots_used = 0;
  int64_t recurrent_snapshots_total = 0;
  int64_t recurrent_snapshot_hits_total = 0;
  int64_t recurrent_snapshot_evictions_total = 0;
  double kv_usage() const { return kv_blocks_total ? double(kv_blocks_used) / double(kv_blocks_total) : 0.0; }
  // Totals since start.
  int64_t steps = 0;
  int64_t prompt_tokens_total = 0;      // prompt tokens of accepted requests (counted once)
  int64_t prefill_tokens_total = 0;     // rows computed as prefill (recomputation included)
  int64_t generation_tokens_total = 0;  // tokens sampled
  int64_t preemptions_total = 0;
  // Prefix cache: prompt tokens looked up (each request's first admission) and those not computed because
  // their KV was found (cache, neighbour, fork); evicted cached blocks.
  int64_t prefix_cache_queries_total = 0;
  int64_t prefix_cache_hits_total = 0;
  int64_t kv_block_evictions_total = 0;
  // Speculative decoding (EngineOptions::draft_tokens): tokens drafted into decode rows, and those the model
  // confirmed (each saved a step).
  int64_t draft_tokens_total = 0;
  int64_t draft_accepted_total = 0;
  double prefix_cache_hit_ratio() const {
    return prefix_cache_queries_total ? double(prefix_cache_hits_total) / double(prefix_cache_queries_total)
                                      : 0.0;
  }
  int64_t requests_submitted = 0;
  int64_t requests_rejected = 0;  // rejected at Submit
  int64_t requests_finished_stop = 0;
  int64_t requests_finished_length = 0;
  int64_t requests_cancelled = 0;
  int64_t requests_failed = 0;
};

// One step as the engine ran it (EngineObserver::OnStepRecord): what the forward pass held and how long it
// took, and where every request the engine holds stands afterwards. For dashboards and step-time models.
struct StepRecord {
  struct Chunk {  // one request's rows in this step's batch, in batch order
    RequestId id = 0;
    int32_t rows = 0;
    bool decode = false;  // a decode row (else prefill rows)
  };
  enum class State { kWaiting, kPrefill, kDecode, kPreempted };  // kPreempted: waiting to be recomputed
  struct Progress {  // a request still held after the step (finished ones are reported by OnRequestFinished)
    RequestId id = 0;
    std::string label;  // Request::label
    State state = State::kWaiting;
    int32_t prompt_tokens = 0;
    int32_t generated = 0;
    int32_t max_tokens = 0;
    int32_t preemptions = 0;
    std::chrono::steady_clock::time_point submitted;
    std::optional<std::chrono::steady_clock::time_point> first_token;
  };
  int64_t step = 0;  // 1-based, as EngineStats::steps
  std::chrono::steady_clock::time_point start;
  double duration_s = 0;  // scheduling + forward pass + sampling + event delivery
  int32_t prefill_rows = 0;
  int32_t decode_rows = 0;
  int64_t attended_positions = 0;  // sum over rows of (position + 1): the attention work of the step
  std::vector<Chunk> chunks;
  std::vector<RequestId> preempted;  // preempted while planning this step
  std::vector<Progress> requests;    // every request held after the step, by id
};
const char* StepStateName(StepRecord::State state);  // "waiting" | "prefill" | "decode" | "preempted"

// Optional observer: called on the engine thread after every step and for every finished request; must not
// block (e.g. update atomic counters or histograms, or copy into a mutex-guarded buffer).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void OnStep(const EngineStats& stats) {}
  // Right after OnStep, with the step's detail.
  virtual void OnStepRecord(const StepRecord& record, const EngineStats& stats) {}
  virtual void OnRequestFinished(RequestId id, FinishReason reason, const RequestTiming& timing) {}
};

// Delivery of a request's events on the engine thread, in order; the last has last() == true. Must not block,
// and must not call back into the Engine synchronously except Cancel(). It may run before Submit() returns.
using EventCallback = std::function<void(TokenEvent event)>;

// A submitted request's event stream. Events are queued in the handle unless an EventCallback was given to
// Submit (then they go only to the callback and Next/TryNext return nothing). Dropping the handle does not
// cancel the request; call Cancel().
class RequestHandle {
 public:
  RequestHandle(RequestId id, std::shared_ptr<EventChannel> channel, std::shared_ptr<Inbox> inbox);
  ~RequestHandle();
  RequestId id() const { return id_; }

  // Waits for the next event; std::nullopt on timeout or when the stream has ended (the last event was
  // taken).
  std::optional<TokenEvent> Next(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Next event if one is queued now; never blocks.
  std::optional<TokenEvent> TryNext();
  // True once the last event has been produced (it may still be queued).
  bool finished() const;
  // Asks the engine to stop this request; its last event (FinishReason::kCancelled) follows within one step.
  // No effect once finished.
  void Cancel();

 private:
  RequestId id_;
  std::shared_ptr<EventChannel> channel_;
  std::shared_ptr<Inbox> inbox_;
};

class Engine {
 public:
  // Starts the engine thread. `tokenizer` may be null (no text deltas, no EOS detection beyond
  // stop_token_ids, stop strings rejected). The model must outlive nothing else: the engine shares ownership.
  static Result<std::unique_ptr<Engine>> Create(std::shared_ptr<Model> model,
                                                std::shared_ptr<const Tokenizer> tokenizer,
                                                const EngineOptions& options,
                                                EngineObserver* observer = nullptr);
  ~Engine();  // Shutdown(/*drain=*/false)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request. Errors: InvalidArgument (empty prompt, token id out of range, bad
  // sampling values, max_tokens < 1, too many top_logprobs, stop strings without a tokenizer), OutOfRange
  // (prompt + max_tokens beyond the context or beyond the whole KV pool — it could never run),
  // ResourceExhausted (the waiting queue is full), Unavailable (shutting down).
  Result<std::shared_ptr<RequestHandle>> Submit(Request request, EventCallback on_event = nullptr);
  // Submits requests that share a prompt prefix as one group, all or none (same errors as Submit, for the
  // first request that fails): the engine takes them in one step, and every request after the first forks
  // from the first (Request::fork_of), so the common prefix is computed once — n > 1 choices, server-side
  // fan-out. `on_event` is empty (events queue in the handles) or one callback per request.
  Result<std::vector<std::shared_ptr<RequestHandle>>> SubmitGroup(std::vector<Request> requests,
                                                                  std::vector<EventCallback> on_event = {});
  // Cancels by id (a no-op for unknown or finished ids). Takes effect before the next step.
  void Cancel(RequestId id);

  // Saved prefixes (llama.cpp's slot save / restore / erase; kv/saved_prefix.h). Each runs on the engine
  // thread between steps and waits for it there: call from any thread but the engine's (never from an
  // EventCallback). Unimplemented with prefix caching off, and for models with recurrent layers without
  // state snapshots (recurrent_cache_slots 0); Unavailable once shutting down.
  // The cached KV of `tokens`' full blocks from the start, copied out: fewer tokens than given (none, even)
  // where a block is not cached. Models with recurrent layers: with every state snapshot kept at the run's
  // block ends (SavedPrefix::states), up to the last one. model_fingerprint is left 0, for the caller.
  Result<SavedPrefix> ExportPrefix(std::vector<int32_t> tokens);
  // Caches `prefix`'s blocks (a block cached already is kept; idle cached blocks of other prompts are
  // evicted where needed, least recently used first) and returns the tokens from its start cached
  // afterwards: fewer than it holds when too few blocks are free of running requests (models with recurrent
  // layers: up to the last of its states among those blocks, each stored as a snapshot). InvalidArgument
  // when it was saved with another KV layout (dtype, block size, shapes) or state size, or holds a token
  // outside the vocabulary.
  Result<int32_t> ImportPrefix(std::shared_ptr<const SavedPrefix> prefix);
  // Drops the idle cached blocks of `tokens`' full blocks from the prefix cache (blocks a running request
  // holds stay) and returns how many.
  Result<int64_t> ForgetPrefix(std::vector<int32_t> tokens);

  EngineStats Stats() const;
  const ModelConfig& model_config() const;
  // The model's classifier head (Request::embedding kRank needs one); null when it has none.
  const Classifier* classifier() const;
  const EngineOptions& options() const { return options_; }  // with the defaults resolved
  int64_t kv_capacity_tokens() const;
  int32_t max_context() const;  // the context limit in tokens

  // Stops accepting requests; with drain, waits for every queued and running request to finish, otherwise
  // cancels them (each gets its kCancelled event). Joins the engine thread. Idempotent.
  void Shutdown(bool drain);

 private:
  class Loop;
  Engine(EngineOptions options, std::unique_ptr<Loop> loop, std::shared_ptr<Inbox> inbox);
  // Submit's checks; also sets sampling.logprobs when top_logprobs asks for it.
  Status Validate(Request& request) const;

  EngineOptions options_;
  std::unique_ptr<Loop> loop_;
  std::shared_ptr<Inbox> inbox_;
  std::mutex shutdown_mutex_;  // Shutdown from several threads joins once
};

}  // namespace lockstep
