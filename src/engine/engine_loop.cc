#include "engine/engine_loop.h"

#include <algorithm>
#include <span>
#include <utility>

#include "engine/ngram_draft.h"

namespace lockstep {

namespace {
double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Engine::Loop::Active::Active(PendingRequest p, const Tokenizer* tokenizer)
    : pending(std::move(p)), sampler(pending.request.sampling), stop_matcher(pending.request.stop) {
  if (tokenizer != nullptr) {
    detokenizer.emplace(*tokenizer, /*skip_special=*/true, /*continuation=*/true,
                        pending.request.preserved_tokens);
  }
  const Request& r = pending.request;
  if (r.grammar) constraint.emplace(r.grammar, /*allow_end=*/!r.ignore_eos, r.stop_token_ids);
}

SchedulerOptions Engine::Loop::SchedulerOptionsFor(const EngineOptions& options, const ModelConfig& config) {
  SchedulerOptions s{options.max_seqs, options.max_batch_tokens, options.prefix_caching, 0,
                     int32_t(config.WidestWindow())};
  if (!config.causal) {  // a prompt in one chunk, all of its rows embedding rows (Engine::Validate's limit)
    s.whole_prompts = true;
    s.prefix_caching = false;
    s.max_prompt_logit_rows = std::max(s.max_prompt_logit_rows, options.max_batch_tokens);
  }
  return s;
}

Engine::Loop::Loop(std::shared_ptr<Model> model, std::shared_ptr<const Tokenizer> tokenizer,
                   const EngineOptions& options, std::unique_ptr<BlockPool> blocks,
                   std::unique_ptr<RecurrentStatePool> states, std::unique_ptr<RecurrentStateCache> snapshots,
                   std::shared_ptr<Inbox> inbox, EngineObserver* observer)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      options_(options),
      blocks_(std::move(blocks)),
      states_(std::move(states)),
      snapshots_(std::move(snapshots)),
      layout_(blocks_->layout()),
      scheduler_(*blocks_, SchedulerOptionsFor(options, model_->config()), states_.get(), snapshots_.get()),
      inbox_(std::move(inbox)),
      observer_(observer),
      threads_(std::make_unique<ThreadPool>(options.threads)) {
  stats_.kv_blocks_total = blocks_->num_blocks();
  stats_.kv_blocks_free = blocks_->num_free();
  stats_.block_tokens = blocks_->block_tokens();
  stats_.prefix_caching = scheduler_.kv().prefix_caching();
  stats_.kv_dtype = options.kv_dtype;
  stats_.recurrent_slots_total = states_ != nullptr ? states_->num_slots() : 0;
  stats_.recurrent_cache_slots_total = snapshots_ != nullptr ? snapshots_->num_slots() : 0;
  if (tokenizer_ != nullptr) {
    for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
      if (tokenizer_->IsEndOfGeneration(id)) end_ids_.push_back(id);
    }
  }
}

Engine::Loop::~Loop() { Join(); }

void Engine::Loop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Engine::Loop::Join() {
  if (thread_.joinable()) thread_.join();
}

EngineStats Engine::Loop::Stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

void Engine::Loop::CountSubmit(bool accepted) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  ++(accepted ? stats_.requests_submitted : stats_.requests_rejected);
}

void Engine::Loop::Run() {
  while (true) {
    if (scheduler_.idle()) PublishStats(nullptr);  // the step gauges read 0 while idle
    if (!TakeInbox(/*wait=*/scheduler_.idle())) break;
    if (scheduler_.idle()) continue;
    Step();
    // Requests admitted and finished within this step leave the waiting count; refresh it now, since an idle
    // engine next blocks in Take() and would otherwise keep counting them against --max-queue.
    PublishLoad();
  }
  FinishAll(FinishReason::kCancelled, "");
  // Every request is gone: every block must be free or cached idle (a leak check on every engine's exit).
  LOCKSTEP_CHECK_MSG(blocks_->num_used() == 0, "KV blocks still referenced after every request ended");
  PublishStats(nullptr);
}

bool Engine::Loop::TakeInbox(bool wait) {
  Inbox::Taken taken = inbox_->Take(wait && !closed_);
  if (taken.closed) {
    closed_ = true;
    drain_ = taken.drain;
  }
  for (PendingRequest& pending : taken.requests) {
    const RequestId id = pending.id;
    auto active = std::make_unique<Active>(std::move(pending), tokenizer_.get());
    active->draft_length = options_.draft_tokens;
    const Request& request = active->pending.request;
    // A bidirectional model computes every prompt row in one pass anyway: all of them are embedding rows
    // (the pooling picks), so none reads the prefix cache.
    const bool last_row = (request.embedding == Pooling::kLast || request.embedding == Pooling::kRank) &&
                          model_->config().causal;
    const PromptRows rows = last_row                              ? PromptRows::kLastEmbedding
                            : request.embedding != Pooling::kNone ? PromptRows::kEmbeddings
                            : request.prompt_logprobs >= 0        ? PromptRows::kLogits
                                                                  : PromptRows::kNone;
    scheduler_.Add(id, request.prompt_ids, request.fork_of, rows, request.lora_scales,
                   request.shared_prefix_hint);
    {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      stats_.prompt_tokens_total += int64_t(active->pending.request.prompt_ids.size());
    }
    active_.emplace(id, std::move(active));
  }
  for (RequestId id : taken.cancels) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    TokenEvent event;
    event.finish_reason = FinishReason::kCancelled;
    Finish(*it->second, std::move(event));
  }
  if (closed_ && !drain_) FinishAll(FinishReason::kCancelled, "");
  for (std::function<void()>& task : taken.tasks) task();
  PublishLoad();
  return !(closed_ && scheduler_.idle());
}

void Engine::Loop::PublishLoad() {
  const int64_t not_started = scheduler_.num_waiting_new();
  const int64_t preempted = scheduler_.num_waiting() - not_started;
  inbox_->SetEngineLoad(not_started, scheduler_.num_running() + preempted);
}

void Engine::Loop::Step() {
  step_start_ = Clock::now();
  if (options_.draft_tokens > 0) ProposeDrafts();
  StepPlan plan = scheduler_.Schedule();
  LOCKSTEP_CHECK_MSG(!plan.empty(), "the scheduler planned nothing with requests pending");
  const Clock::time_point start = Clock::now();
  for (const ScheduledChunk& chunk : plan.chunks) {
    Active& active = *active_.at(chunk.id);
    if (!active.first_scheduled) active.first_scheduled = start;
  }
  const int64_t n_vocab = model_->config().n_vocab;
  logits_.resize(size_t(plan.batch.LogitRows() * n_vocab));
  embeddings_.resize(size_t(plan.batch.EmbeddingRows() * model_->config().n_embd));
  Status status = model_->Forward(plan.batch, layout_, ForwardOutputs{logits_, embeddings_}, *threads_);
  if (!status.ok()) {
    scheduler_.Update(StepResult{{}, /*failed=*/true});
    for (const ScheduledChunk& chunk : plan.chunks) {
      auto it = active_.find(chunk.id);
      if (it == active_.end()) continue;
      TokenEvent event;
      event.finish_reason = FinishReason::kError;
      event.error = "forward pass failed: " + status.ToString();
      Finish(*it->second, std::move(event));
    }
    PublishStats(&plan);
    return;
  }
  ScorePromptRows(plan, n_vocab);
  PoolEmbeddingRows(plan);
  StepResult result;
  std::vector<std::pair<RequestId, TokenEvent>> events;
  std::vector<RequestId> constrained_out;  // grammar allows no token: finished after Update
  std::vector<RequestId> scored_out;       // max_tokens 0: done once the prompt is scored
  std::vector<RequestId> embedded_out;     // embeddings: done once every prompt position is pooled
  for (const ScheduledChunk& chunk : plan.chunks) {
    Active& active = *active_.at(chunk.id);
    const Request& request = active.pending.request;
    if (request.embedding != Pooling::kNone) {
      if (active.embedded_end == int32_t(request.prompt_ids.size())) embedded_out.push_back(chunk.id);
      continue;
    }
    if (request.max_tokens == 0 && active.prompt_logprobs.size() + 1 >= request.prompt_ids.size()) {
      scored_out.push_back(chunk.id);
      continue;
    }
    if (!chunk.sample) continue;
    if (!SampleChunk(chunk, n_vocab, result, events)) constrained_out.push_back(chunk.id);
  }
  scheduler_.Update(result);
  for (RequestId id : scored_out) {
    Active& active = *active_.at(id);
    TokenEvent event;
    event.finish_reason = FinishReason::kLength;
    event.prompt_logprobs = std::move(active.prompt_logprobs);
    Finish(active, std::move(event));
  }
  for (RequestId id : embedded_out) {
    Active& active = *active_.at(id);
    Finish(active, EmbeddingEvent(active));
  }
  for (RequestId id : constrained_out) FinishConstrained(*active_.at(id));
  for (auto& [id, event] : events) {
    Active& active = *active_.at(id);
    if (event.last()) {
      Finish(active, std::move(event));
    } else {
      active.pending.channel->Push(std::move(event));
    }
  }
  PublishStats(&plan, int64_t(result.tokens.size()));
}

void Engine::Loop::ProposeDrafts() {
  if (scheduler_.num_running() > options_.draft_max_seqs) return;
  for (auto& [id, active] : active_) {
    const Request& request = active->pending.request;
    if (!scheduler_.running(id) || request.embedding != Pooling::kNone || active->generated == 0) continue;
    const std::vector<int32_t>& tokens = scheduler_.tokens(id);
    if (scheduler_.num_computed(id) + 1 != int32_t(tokens.size())) continue;  // not decoding
    // Every drafted token, if right, is one more generated: stay within max_tokens and the context.
    const int64_t left = std::min<int64_t>(request.max_tokens - active->generated,
                                           options_.max_context - int64_t(tokens.size()));
    const int32_t room = int32_t(std::min<int64_t>(active->draft_length, left - 1));
    scheduler_.SetDraft(id, ProposeNgramDraft(tokens, room));
  }
}

bool Engine::Loop::SampleChunk(const ScheduledChunk& chunk, int64_t n_vocab, StepResult& result,
                               std::vector<std::pair<RequestId, TokenEvent>>& events) {
  Active& active = *active_.at(chunk.id);
  const std::vector<int32_t>& draft = scheduler_.draft(chunk.id);
  // The history each row's sampler sees: the request's tokens, then the draft's tokens confirmed so far.
  std::vector<int32_t> drafted_history;
  if (chunk.draft_count > 0) drafted_history = scheduler_.tokens(chunk.id);
  int32_t sampled = 0;
  bool none = false;  // the grammar allows no token (after a confirmed one: the request ends next step)
  for (int32_t i = 0; i <= chunk.draft_count; ++i) {
    const size_t logit_row = size_t(chunk.logit_row + i);
    std::span<const float> row(logits_.data() + logit_row * size_t(n_vocab), size_t(n_vocab));
    const std::span<const uint64_t> allowed = AllowedTokens(active, int32_t(n_vocab), &none);
    if (none) break;
    const SampleResult sample = active.sampler.Sample(
        row, chunk.draft_count > 0 ? drafted_history : scheduler_.tokens(chunk.id), allowed);
    if (active.constraint) active.constraint->Accept(sample.token);
    result.tokens.push_back({chunk.id, sample.token});
    events.emplace_back(chunk.id, MakeTokenEvent(active, sample));
    ++sampled;
    if (events.back().second.last() || i == chunk.draft_count || sample.token != draft[size_t(i)]) break;
    drafted_history.push_back(sample.token);
  }
  if (chunk.draft_count > 0) {
    const int32_t confirmed = std::max(sampled - 1, 0);
    active.draft_length = confirmed == chunk.draft_count
                              ? std::min(2 * chunk.draft_count, options_.draft_tokens)
                              : confirmed + 1;
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.draft_tokens_total += chunk.draft_count;
    stats_.draft_accepted_total += confirmed;
  }
  return sampled > 0 || !none;
}

void Engine::Loop::ScorePromptRows(const StepPlan& plan, int64_t n_vocab) {
  struct Row {
    std::span<const float> logits;
    int32_t top_n;
    PromptLogprob* out;
  };
  std::vector<Row> rows;
  for (const ScheduledChunk& chunk : plan.chunks) {
    if (chunk.prompt_logit_count == 0) continue;
    Active& active = *active_.at(chunk.id);
    const Request& request = active.pending.request;
    std::vector<PromptLogprob>& scored = active.prompt_logprobs;
    LOCKSTEP_CHECK(scored.size() == size_t(chunk.prompt_logit_position));  // each position once, in order
    scored.resize(scored.size() + size_t(chunk.prompt_logit_count));
    for (int32_t i = 0; i < chunk.prompt_logit_count; ++i) {
      const int32_t position = chunk.prompt_logit_position + i;
      PromptLogprob& entry = scored[size_t(position)];
      entry.token = request.prompt_ids[size_t(position) + 1];
      const size_t row = size_t(chunk.prompt_logit_row + i);
      rows.push_back({std::span<const float>(logits_.data() + row * size_t(n_vocab), size_t(n_vocab)),
                      request.prompt_logprobs, &entry});
    }
  }
  if (rows.empty()) return;
  threads_->Run(int64_t(rows.size()), [&](int64_t task, int /*worker*/) {
    Row& row = rows[size_t(task)];
    row.out->logprob = TokenLogprobOf(row.logits, row.out->token, row.top_n, &row.out->top);
    const float own = row.logits[size_t(row.out->token)];
    int32_t ahead = 0;
    for (size_t t = 0; t < row.logits.size(); ++t) {
      ahead += row.logits[t] > own || (row.logits[t] == own && int32_t(t) < row.out->token);
    }
    row.out->rank = ahead + 1;
  });
}

void Engine::Loop::PoolEmbeddingRows(const StepPlan& plan) {
  const int64_t d = model_->config().n_embd;
  for (const ScheduledChunk& chunk : plan.chunks) {
    if (chunk.embedding_count == 0) continue;
    Active& active = *active_.at(chunk.id);
    const Pooling pooling = active.pending.request.embedding;
    const int32_t last = int32_t(active.pending.request.prompt_ids.size()) - 1;
    // Each position once, in order (last-token pooling, rank: the last position alone).
    // Rank pools the last row, but on a bidirectional model the first ([CLS]: llama.cpp's bert rank pooling).
    const bool first = pooling == Pooling::kCls || (pooling == Pooling::kRank && !model_->config().causal);
    const bool last_only = !first && (pooling == Pooling::kLast || pooling == Pooling::kRank);
    LOCKSTEP_CHECK(active.embedded_end == chunk.embedding_position ||
                   (last_only && chunk.embedding_position == last));
    active.embedding.resize(size_t(d));
    for (int32_t i = 0; i < chunk.embedding_count; ++i) {
      const int32_t position = chunk.embedding_position + i;
      const float* row = embeddings_.data() + size_t(chunk.embedding_row + i) * size_t(d);
      if (pooling == Pooling::kMean) {
        for (int64_t k = 0; k < d; ++k) active.embedding[size_t(k)] += row[k];
      } else if ((first && position == 0) || (last_only && position == last)) {
        std::copy(row, row + d, active.embedding.begin());
      }
    }
    active.embedded_end = chunk.embedding_position + chunk.embedding_count;
  }
}

TokenEvent Engine::Loop::EmbeddingEvent(Active& active) const {
  TokenEvent event;
  event.finish_reason = FinishReason::kLength;
  const Request& request = active.pending.request;
  if (request.embedding == Pooling::kRank) {  // the classifier's logits of the pooled final hidden state
    const Classifier& head = *model_->classifier();  // Engine::Submit checked it is there
    const std::vector<float> hidden(active.embedding.begin(), active.embedding.end());
    event.embedding.resize(size_t(head.n_cls));
    head.Apply(hidden, event.embedding);
    return event;
  }
  const double scale = request.embedding == Pooling::kMean ? 1.0 / double(request.prompt_ids.size()) : 1.0;
  event.embedding.reserve(active.embedding.size());
  for (double v : active.embedding) event.embedding.push_back(float(v * scale));
  return event;
}

std::span<const uint64_t> Engine::Loop::AllowedTokens(Active& active, int32_t n_vocab, bool* none) {
  *none = false;
  const Request& request = active.pending.request;
  const bool hold_end = active.generated < request.min_tokens;
  if (!active.constraint && !hold_end) return {};
  const size_t words = (size_t(n_vocab) + 63) / 64;
  if (active.constraint) {
    if (active.constraint->FillMask(words, &mask_) == 0) {
      *none = true;
      return {};
    }
  } else {
    mask_.assign(words, ~uint64_t{0});
    if (n_vocab % 64 != 0) mask_.back() = (uint64_t{1} << (n_vocab % 64)) - 1;  // no ids past the vocabulary
  }
  if (hold_end) {
    std::vector<int32_t> cleared;  // set bits cleared: set again if nothing else is left
    const auto clear = [&](int32_t id) {
      if (id < 0 || id >= n_vocab) return;
      const uint64_t bit = uint64_t{1} << (id % 64);
      if ((mask_[size_t(id / 64)] & bit) == 0) return;
      mask_[size_t(id / 64)] &= ~bit;
      cleared.push_back(id);
    };
    for (int32_t id : end_ids_) clear(id);
    for (int32_t id : request.stop_token_ids) clear(id);
    if (std::all_of(mask_.begin(), mask_.end(), [](uint64_t w) { return w == 0; })) {
      for (int32_t id : cleared) mask_[size_t(id / 64)] |= uint64_t{1} << (id % 64);
    }
  }
  return mask_;
}

std::string Engine::Loop::FlushText(Active& active) {
  std::string text;
  if (active.detokenizer) {
    StopMatcher::Output out = active.stop_matcher.Push(active.detokenizer->Flush());
    text = std::move(out.text);
    if (out.stopped) return text;
  }
  return text + active.stop_matcher.Flush();
}

TokenEvent Engine::Loop::MakeTokenEvent(Active& active, const SampleResult& sample) {
  const Request& request = active.pending.request;
  const Clock::time_point now = Clock::now();
  if (!active.first_token) active.first_token = now;
  active.last_token = now;
  TokenEvent event;
  event.request_id = active.pending.id;
  event.token = sample.token;
  event.index = active.generated++;
  if (event.index == 0) event.prompt_logprobs = std::move(active.prompt_logprobs);
  event.logprob = sample.logprob;
  event.top_logprobs = sample.top;
  const Tokenizer* tokenizer = tokenizer_.get();
  event.special = tokenizer != nullptr && tokenizer->IsSpecial(sample.token);

  const bool stop_token = std::find(request.stop_token_ids.begin(), request.stop_token_ids.end(),
                                    sample.token) != request.stop_token_ids.end();
  const bool eos = !request.ignore_eos && tokenizer != nullptr && tokenizer->IsEndOfGeneration(sample.token);
  if (stop_token || eos) {
    event.finish_reason = FinishReason::kStop;
    event.stop_kind = stop_token ? StopKind::kStopToken : StopKind::kEos;
    event.text_delta = FlushText(active);
    return event;
  }
  if (active.detokenizer) {
    event.token_text = active.detokenizer->Push(sample.token);
    StopMatcher::Output out = active.stop_matcher.Push(event.token_text);
    event.text_delta = std::move(out.text);
    if (out.stopped) {
      event.finish_reason = FinishReason::kStop;
      event.stop_kind = StopKind::kStopString;
      event.stop_string = std::move(out.matched);
      event.stop_tail = std::move(out.tail);
      return event;
    }
  }
  if (active.constraint && active.constraint->over_budget()) {  // the token cost too much to follow
    event.finish_reason = FinishReason::kError;
    event.error = active.constraint->error();
    event.text_delta += FlushText(active);
    return event;
  }
  if (active.constraint && active.constraint->complete()) {
    event.finish_reason = FinishReason::kStop;
    event.stop_kind = StopKind::kGrammar;
    event.text_delta += FlushText(active);
    return event;
  }
  const int64_t context_used = int64_t(request.prompt_ids.size()) + active.generated;
  if (active.generated >= request.max_tokens || context_used >= options_.max_context) {
    event.finish_reason = FinishReason::kLength;
    event.text_delta += FlushText(active);
  }
  return event;
}

void Engine::Loop::FinishConstrained(Active& active) {
  TokenEvent event;
  event.text_delta = FlushText(active);
  if (std::string why = active.constraint->error(); !why.empty()) {
    event.finish_reason = FinishReason::kError;
    event.error = std::move(why);
  } else if (active.constraint->accepting()) {
    event.finish_reason = FinishReason::kStop;
    event.stop_kind = StopKind::kGrammar;
  } else {
    event.finish_reason = FinishReason::kError;
    event.error = "the grammar allows no token of this vocabulary after the text generated so far";
  }
  Finish(active, std::move(event));
}

void Engine::Loop::Finish(Active& active, TokenEvent event) {
  const RequestId id = active.pending.id;
  const Clock::time_point now = Clock::now();
  event.request_id = id;
  RequestTiming& t = event.timing;
  const Clock::time_point submit = active.pending.submit_time;
  t.queue_s = Seconds((active.first_scheduled ? *active.first_scheduled : now) - submit);
  t.ttft_s = active.first_token ? Seconds(*active.first_token - submit) : 0.0;
  t.tpot_s = active.generated >= 2
                 ? Seconds(*active.last_token - *active.first_token) / (active.generated - 1)
                 : 0.0;
  t.e2e_s = Seconds(now - submit);
  t.prompt_tokens = int32_t(active.pending.request.prompt_ids.size());
  t.generated_tokens = active.generated;
  t.preemptions = scheduler_.Contains(id) ? scheduler_.preemptions(id) : 0;
  t.cached_tokens = scheduler_.Contains(id) ? scheduler_.cached_tokens(id) : 0;
  scheduler_.Remove(id);
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    switch (event.finish_reason) {
      case FinishReason::kStop:
        ++stats_.requests_finished_stop;
        break;
      case FinishReason::kLength:
        ++stats_.requests_finished_length;
        break;
      case FinishReason::kCancelled:
        ++stats_.requests_cancelled;
        break;
      default:
        ++stats_.requests_failed;
        break;
    }
    CountHeldResources();
  }
  if (observer_ != nullptr) observer_->OnRequestFinished(id, event.finish_reason, t);
  std::shared_ptr<EventChannel> channel = active.pending.channel;
  active_.erase(id);  // `active` is gone from here on
  PublishLoad();      // before the last event: whoever it reaches may submit again at once
  channel->Push(std::move(event));
}

void Engine::Loop::FinishAll(FinishReason reason, const std::string& error) {
  std::vector<RequestId> ids;
  for (const auto& [id, active] : active_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) {
    TokenEvent event;
    event.finish_reason = reason;
    event.error = error;
    Finish(*active_.at(id), std::move(event));
  }
}

void Engine::Loop::CountHeldResources() {
  stats_.kv_blocks_used = blocks_->num_used();
  stats_.kv_blocks_free = blocks_->num_free();
  stats_.recurrent_slots_used = states_ != nullptr ? states_->num_slots() - states_->num_free() : 0;
  if (snapshots_ != nullptr) {
    stats_.recurrent_cache_slots_used = snapshots_->num_used();
    stats_.recurrent_snapshots_total = snapshots_->stores();
    stats_.recurrent_snapshot_hits_total = snapshots_->loads();
    stats_.recurrent_snapshot_evictions_total = snapshots_->evictions();
  }
}

void Engine::Loop::CountKvCache() {
  CountHeldResources();
  stats_.kv_blocks_cached = blocks_->num_cached();
  stats_.kv_block_evictions_total = blocks_->evictions();
}

void Engine::Loop::PublishStats(const StepPlan* plan, int64_t sampled) {
  EngineStats snapshot;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.running = scheduler_.num_running();
    stats_.waiting = scheduler_.num_waiting();
    CountKvCache();
    stats_.prefix_cache_queries_total = scheduler_.prefix_queries_total();
    stats_.prefix_cache_hits_total = scheduler_.prefix_hits_total();
    if (plan != nullptr) {
      ++stats_.steps;
      stats_.step_rows = int32_t(plan->batch.rows.size());
      stats_.step_prefill_tokens = plan->prefill_tokens;
      stats_.step_decode_tokens = plan->decode_tokens;
      stats_.prefill_tokens_total += plan->prefill_tokens;
      stats_.preemptions_total = scheduler_.preemptions_total();
      stats_.generation_tokens_total += sampled;  // not chunks that sample: some end without a token
    } else {
      stats_.step_rows = stats_.step_prefill_tokens = stats_.step_decode_tokens = 0;
    }
    snapshot = stats_;
  }
  if (plan != nullptr && observer_ != nullptr) {
    observer_->OnStep(snapshot);
    observer_->OnStepRecord(MakeStepRecord(*plan), snapshot);
  }
}

StepRecord Engine::Loop::MakeStepRecord(const StepPlan& plan) const {
  StepRecord record;
  record.step = stats_.steps;  // PublishStats counted this step already (engine thread: no lock needed)
  record.start = step_start_;
  record.duration_s = Seconds(Clock::now() - step_start_);
  record.prefill_rows = plan.prefill_tokens;
  record.decode_rows = plan.decode_tokens;
  record.chunks.reserve(plan.chunks.size());
  for (const ScheduledChunk& chunk : plan.chunks) {
    record.chunks.push_back({chunk.id, chunk.count, chunk.decode});
    const int64_t start = chunk.start, count = chunk.count;
    record.attended_positions += count * start + count * (count + 1) / 2;
  }
  record.preempted = plan.preempted;
  record.requests.reserve(active_.size());
  for (const auto& [id, active] : active_) {
    StepRecord::Progress p;
    p.id = id;
    p.label = active->pending.request.label;
    p.prompt_tokens = int32_t(active->pending.request.prompt_ids.size());
    p.generated = active->generated;
    p.max_tokens = active->pending.request.max_tokens;
    p.submitted = active->pending.submit_time;
    p.first_token = active->first_token;
    if (scheduler_.Contains(id)) {
      p.preemptions = scheduler_.preemptions(id);
      if (scheduler_.running(id)) {
        const bool in_prompt = scheduler_.num_computed(id) + 1 < int32_t(scheduler_.tokens(id).size());
        p.state = in_prompt ? StepRecord::State::kPrefill : StepRecord::State::kDecode;
      } else {
        p.state = p.preemptions > 0 ? StepRecord::State::kPreempted : StepRecord::State::kWaiting;
      }
    }
    record.requests.push_back(std::move(p));
  }
  std::sort(record.requests.begin(), record.requests.end(),
            [](const StepRecord::Progress& a, const StepRecord::Progress& b) { return a.id < b.id; });
  return record;
}

}  // namespace lockstep
