// Engine::Loop: the engine thread and everything it owns — the model's forward pass, the KV block pool, the
// scheduler, and each active request's Sampler, detokenizer and stop matcher. Internal to engine/; only the
// thread it starts touches these (Stats() copies a mutex-guarded snapshot).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar_constraint.h"
#include "engine/request_queue.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "kv/block_pool.h"
#include "kv/recurrent_state_cache.h"
#include "kv/recurrent_state_pool.h"
#include "kv/saved_prefix.h"
#include "tensor/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {

class Engine::Loop {
 public:
  Loop(std::shared_ptr<Model> model, std::shared_ptr<const Tokenizer> tokenizer, const EngineOptions& options,
       std::unique_ptr<BlockPool> blocks, std::unique_ptr<RecurrentStatePool> states,
       std::unique_ptr<RecurrentStateCache> snapshots, std::shared_ptr<Inbox> inbox,
       EngineObserver* observer);
  ~Loop();  // joins the thread (the inbox must be closed first)

  void Start();
  void Join();
  EngineStats Stats() const;
  void CountSubmit(bool accepted);
  const Model& model() const { return *model_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const BlockPool& blocks() const { return *blocks_; }
  // Engine::ExportPrefix / ImportPrefix / ForgetPrefix, run on the engine thread (an Inbox task).
  Result<SavedPrefix> ExportPrefix(std::span<const int32_t> tokens);
  Result<int32_t> ImportPrefix(const SavedPrefix& prefix);
  Result<int64_t> ForgetPrefix(std::span<const int32_t> tokens);

 private:
  using Clock = std::chrono::steady_clock;
  struct Active {
    PendingRequest pending;
    Sampler sampler;
    std::optional<IncrementalDetokenizer> detokenizer;
    StopMatcher stop_matcher;
    std::optional<GrammarConstraint> constraint;  // Request::grammar's parse state
    std::vector<PromptLogprob> prompt_logprobs;   // Request::prompt_logprobs, until the first event
    // Request::embedding: the pooled vector so far (mean: the sum, in position order) and the end of the
    // positions pooled.
    std::vector<double> embedding;
    int32_t embedded_end = 0;
    int32_t generated = 0;
    // Speculative decoding: tokens the next draft may have at most, EngineOptions::draft_tokens when the
    // request is taken; doubled after a draft the model confirmed whole, the confirmed count + 1 after one it
    // did not, so text that does not repeat costs one draft row a step, not draft_tokens.
    int32_t draft_length = 0;
    std::optional<Clock::time_point> first_scheduled, first_token, last_token;
    Active(PendingRequest p, const Tokenizer* tokenizer);
  };

  void Run();
  // Takes new requests and cancellations; returns false when the loop should end.
  bool TakeInbox(bool wait);
  void Step();
  // Speculative decoding: gives each decoding request that may use one an n-gram draft for this step.
  void ProposeDrafts();
  // Samples a chunk's rows: one, or with draft rows each in turn while the sampled token equals the draft's
  // (engine/scheduler.h ScheduledChunk::draft_count), appending to result and events. False: the request's
  // grammar allows no token (nothing sampled).
  bool SampleChunk(const ScheduledChunk& chunk, int64_t n_vocab, StepResult& result,
                   std::vector<std::pair<RequestId, TokenEvent>>& events);
  // Scores the prompt tokens of this step's prompt-logit rows (ScheduledChunk::prompt_logit_*), spread over
  // the thread pool, into each request's Active::prompt_logprobs.
  void ScorePromptRows(const StepPlan& plan, int64_t n_vocab);
  // The scheduler's options for this engine and model (a bidirectional model: whole prompts, no cache).
  static SchedulerOptions SchedulerOptionsFor(const EngineOptions& options, const ModelConfig& config);
  // Adds this step's embedding rows (ScheduledChunk::embedding_*) to each request's pooled vector.
  void PoolEmbeddingRows(const StepPlan& plan);
  // The event that ends an embedding request once every prompt position is pooled.
  TokenEvent EmbeddingEvent(Active& active) const;
  // Builds the event for a sampled token; sets its finish reason when the request ends here.
  TokenEvent MakeTokenEvent(Active& active, const SampleResult& sample);
  // Ends a request: emits its last event (a token event already carrying a finish reason, or a bare one) and
  // frees its KV.
  void Finish(Active& active, TokenEvent event);
  void FinishAll(FinishReason reason, const std::string& error);
  // Copies the KV blocks and state slots in use into stats_ (stats_mutex_ held).
  void CountHeldResources();
  // That and the prefix cache's blocks: cached, evicted (stats_mutex_ held).
  void CountKvCache();
  // plan: the step just run (null while idle); sampled: the tokens it sampled.
  void PublishStats(const StepPlan* plan, int64_t sampled = 0);
  StepRecord MakeStepRecord(const StepPlan& plan) const;
  // Why saved prefixes cannot be used with this model and these options (Ok when they can).
  Status SavedPrefixSupport() const;
  // After a saved prefix's blocks came or went: the KV counts in stats_ (the step's gauges are kept).
  void CountCachedBlocks();
  // Tells the inbox how many accepted requests have not started and how many hold a sequence slot.
  void PublishLoad();
  std::string FlushText(Active& active);
  // Ends a constrained request whose grammar allows no token (complete, or unspellable here).
  void FinishConstrained(Active& active);
  // The tokens `active` may sample now, as a mask in mask_ (empty: every token): its grammar's, less the
  // tokens that would end it while it has fewer than min_tokens (kept when nothing else would be left).
  // *none: its grammar allows no token.
  std::span<const uint64_t> AllowedTokens(Active& active, int32_t n_vocab, bool* none);

  std::shared_ptr<Model> model_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  std::unique_ptr<BlockPool> blocks_;
  std::unique_ptr<RecurrentStatePool> states_;      // models with recurrent layers only
  std::unique_ptr<RecurrentStateCache> snapshots_;  // their prefix cache's state snapshots, if any
  KvLayout layout_;
  Scheduler scheduler_;  // after blocks_, states_ and snapshots_: destroyed first
  std::shared_ptr<Inbox> inbox_;
  EngineObserver* observer_;
  std::unique_ptr<ThreadPool> threads_;
  std::unordered_map<RequestId, std::unique_ptr<Active>> active_;
  std::vector<float> logits_;
  std::vector<float> embeddings_;  // this step's embedding rows, n_embd floats each
  std::vector<uint64_t> mask_;     // allowed tokens of the constrained request being sampled
  std::vector<int32_t> end_ids_;   // the vocabulary's end-of-generation tokens (Request::min_tokens)
  bool closed_ = false;
  bool drain_ = false;
  Clock::time_point step_start_;  // when the current step began (before scheduling)

  mutable std::mutex stats_mutex_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace lockstep
