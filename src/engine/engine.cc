#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <utility>

#include "engine/engine_loop.h"
#include "grammar/token_masker.h"

namespace lockstep {

namespace {

constexpr int64_t kDefaultKvBytes = int64_t(1) << 30;
constexpr int64_t kFallbackContext = 4096;

// Request ids are unique per process, so handles of different engines never collide in logs.
std::atomic<RequestId> next_request_id{1};

Status ValidateOptions(const EngineOptions& o) {
  auto bad = [](const std::string& what) { return InvalidArgument("engine option " + what); };
  if (o.threads < 1 || o.threads > 1024)
    return bad("threads must be in 1..1024, got " + std::to_string(o.threads));
  if (o.max_seqs < 1) return bad("max_seqs must be >= 1, got " + std::to_string(o.max_seqs));
  if (o.max_batch_tokens < 1)
    return bad("max_batch_tokens must be >= 1, got " + std::to_string(o.max_batch_tokens));
  if (o.block_tokens < 1 || o.block_tokens > 1024) {
    return bad("block_tokens must be in 1..1024, got " + std::to_string(o.block_tokens));
  }
  if (o.max_queue < 0) return bad("max_queue must be >= 0, got " + std::to_string(o.max_queue));
  if (o.kv_tokens < 0) return bad("kv_tokens must be >= 0, got " + std::to_string(o.kv_tokens));
  if (o.kv_memory_bytes < 0) return bad("kv_memory must be >= 0, got " + std::to_string(o.kv_memory_bytes));
  if (o.max_context < 0) return bad("max_context must be >= 0, got " + std::to_string(o.max_context));
  if (o.draft_tokens < 0 || o.draft_tokens > 64)
    return bad("draft_tokens must be in 0..64, got " + std::to_string(o.draft_tokens));
  if (o.recurrent_slots < 0 || o.recurrent_slots > o.max_seqs) {
    return bad("recurrent_slots must be in 0..max_seqs (" + std::to_string(o.max_seqs) +
               ": each running request holds one slot), got " + std::to_string(o.recurrent_slots));
  }
  if (o.recurrent_cache_slots < 0 && o.recurrent_cache_slots != EngineOptions::kAutomaticCacheSlots) {
    return bad("recurrent_cache_slots must be >= 0 or kAutomaticCacheSlots (-1), got " +
               std::to_string(o.recurrent_cache_slots));
  }
  if (o.draft_max_seqs < 1)
    return bad("draft_max_seqs must be >= 1, got " + std::to_string(o.draft_max_seqs));
  return Status::Ok();
}

// EngineOptions::kAutomaticCacheSlots resolved: snapshots taking as much memory as the KV pool (a
// conversation's next turn needs both its KV blocks and a snapshot at their end, so the two caches run out
// together rather than the snapshots first), at least kMinAutomaticCacheSlots and at most one per block.
// Their memory is committed only as snapshots fill it (RecurrentStatePool hands out slot 0 first). A pool has
// at most 2^30 blocks (BlockPool::Create), so the count fits an int.
int AutomaticCacheSlots(const BlockPool& blocks, int64_t state_floats) {
  const int64_t state_bytes = std::max<int64_t>(1, state_floats * int64_t(sizeof(float)));
  const int64_t fit = int64_t(blocks.bytes()) / state_bytes;
  return int(
      std::max<int64_t>(EngineOptions::kMinAutomaticCacheSlots, std::min<int64_t>(fit, blocks.num_blocks())));
}

}  // namespace

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
    case FinishReason::kNone:
      break;
  }
  return "none";
}

const char* StepStateName(StepRecord::State state) {
  switch (state) {
    case StepRecord::State::kPrefill:
      return "prefill";
    case StepRecord::State::kDecode:
      return "decode";
    case StepRecord::State::kPreempted:
      return "preempted";
    case StepRecord::State::kWaiting:
      break;
  }
  return "waiting";
}

RequestHandle::RequestHandle(RequestId id, std::shared_ptr<EventChannel> channel,
                             std::shared_ptr<Inbox> inbox)
    : id_(id), channel_(std::move(channel)), inbox_(std::move(inbox)) {}

RequestHandle::~RequestHandle() = default;

std::optional<TokenEvent> RequestHandle::Next(std::optional<std::chrono::milliseconds> timeout) {
  return channel_->Next(timeout);
}
std::optional<TokenEvent> RequestHandle::TryNext() { return channel_->TryNext(); }
bool RequestHandle::finished() const { return channel_->finished(); }
void RequestHandle::Cancel() {
  if (!channel_->finished()) inbox_->Cancel(id_);
}

Result<std::unique_ptr<Engine>> Engine::Create(std::shared_ptr<Model> model,
                                               std::shared_ptr<const Tokenizer> tokenizer,
                                               const EngineOptions& options, EngineObserver* observer) {
  if (model == nullptr) return InvalidArgument("Engine::Create: no model");
  LOCKSTEP_RETURN_IF_ERROR(ValidateOptions(options));
  EngineOptions resolved = options;
  const ModelConfig& config = model->config();
  const int64_t trained = config.n_ctx_train > 0 ? config.n_ctx_train : kFallbackContext;
  resolved.max_context =
      int(options.max_context > 0 ? std::min<int64_t>(options.max_context, trained) : trained);

  const KvLayout layout = model->MakeKvLayout(options.kv_dtype, options.block_tokens);
  if (layout.BlockBytes() == 0) return InvalidArgument("the model's KV layout is empty");
  int64_t num_blocks = 0;
  if (options.kv_tokens > 0) {
    num_blocks = (options.kv_tokens + options.block_tokens - 1) / options.block_tokens;
  } else if (options.kv_memory_bytes > 0) {
    num_blocks = BlockPool::BlocksForBytes(layout, options.kv_memory_bytes);
    if (num_blocks < 1) {
      return InvalidArgument("kv memory of " + std::to_string(options.kv_memory_bytes) +
                             " bytes is less than one KV block (" + std::to_string(layout.BlockBytes()) +
                             " bytes for " + std::to_string(options.block_tokens) + " tokens)");
    }
  } else {
    const int64_t per_token = int64_t(layout.BlockBytes()) / options.block_tokens;
    int64_t tokens =
        std::min<int64_t>(int64_t(options.max_seqs) * resolved.max_context,
                          std::max<int64_t>(1, kDefaultKvBytes / std::max<int64_t>(1, per_token)));
    tokens = std::max<int64_t>(tokens, resolved.max_context);
    num_blocks = (tokens + options.block_tokens - 1) / options.block_tokens;
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<BlockPool> blocks, BlockPool::Create(layout, num_blocks));
  resolved.kv_tokens = blocks->num_blocks() * options.block_tokens;
  resolved.kv_memory_bytes = int64_t(blocks->bytes());

  std::unique_ptr<RecurrentStatePool> states;
  if (layout.recurrent_state_floats > 0) {
    resolved.recurrent_slots = options.recurrent_slots > 0 ? options.recurrent_slots : options.max_seqs;
    LOCKSTEP_ASSIGN_OR_RETURN(
        states, RecurrentStatePool::Create(layout.recurrent_state_floats, resolved.recurrent_slots));
  }
  std::unique_ptr<RecurrentStateCache> snapshots;
  if (layout.recurrent_state_floats > 0 && options.prefix_caching && options.recurrent_cache_slots != 0 &&
      model->config().causal) {
    if (options.recurrent_cache_slots == EngineOptions::kAutomaticCacheSlots) {
      resolved.recurrent_cache_slots = AutomaticCacheSlots(*blocks, layout.recurrent_state_floats);
    }
    LOCKSTEP_ASSIGN_OR_RETURN(snapshots, RecurrentStateCache::Create(layout.recurrent_state_floats,
                                                                     resolved.recurrent_cache_slots));
  } else {
    resolved.recurrent_cache_slots = 0;
  }

  auto inbox = std::make_shared<Inbox>(options.max_queue, options.max_seqs);
  auto loop = std::make_unique<Loop>(std::move(model), std::move(tokenizer), resolved, std::move(blocks),
                                     std::move(states), std::move(snapshots), inbox, observer);
  loop->Start();
  return std::unique_ptr<Engine>(new Engine(resolved, std::move(loop), std::move(inbox)));
}

Engine::Engine(EngineOptions options, std::unique_ptr<Loop> loop, std::shared_ptr<Inbox> inbox)
    : options_(std::move(options)), loop_(std::move(loop)), inbox_(std::move(inbox)) {}

Engine::~Engine() { Shutdown(/*drain=*/false); }

const ModelConfig& Engine::model_config() const { return loop_->model().config(); }
const Classifier* Engine::classifier() const { return loop_->model().classifier(); }
int64_t Engine::kv_capacity_tokens() const { return options_.kv_tokens; }
int32_t Engine::max_context() const { return options_.max_context; }
EngineStats Engine::Stats() const { return loop_->Stats(); }
void Engine::Cancel(RequestId id) { inbox_->Cancel(id); }

void Engine::Shutdown(bool drain) {
  inbox_->Close(drain);
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  loop_->Join();
}

Status Engine::Validate(Request& request) const {
  const int64_t n_vocab = model_config().n_vocab;
  const int64_t prompt = int64_t(request.prompt_ids.size());
  if (prompt == 0) return InvalidArgument("the prompt is empty (at least one token is needed)");
  for (size_t i = 0; i < request.prompt_ids.size(); ++i) {
    const int32_t id = request.prompt_ids[i];
    if (id < 0 || id >= n_vocab) {
      return InvalidArgument("prompt token " + std::to_string(i) + " is " + std::to_string(id) +
                             ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
  }
  if (request.grammar && request.grammar->vocab().size() > n_vocab) {
    return InvalidArgument("the grammar was prepared for a vocabulary of " +
                           std::to_string(request.grammar->vocab().size()) + " tokens; the model has " +
                           std::to_string(n_vocab));
  }
  if (!model_config().causal) {
    if (request.embedding == Pooling::kNone) {
      return InvalidArgument(
          "this model (" + model_config().architecture +
          ") is a bidirectional encoder: it computes embeddings only, no text or log-probs");
    }
    const int64_t limit = std::min<int64_t>(options_.max_batch_tokens, model_config().n_ctx_train);
    if (prompt > limit) {
      return OutOfRange("the input is " + std::to_string(prompt) + " tokens; a bidirectional model (" +
                        model_config().architecture +
                        ") computes an input whole in one forward pass, so it " + "takes at most " +
                        std::to_string(limit) + " (the smaller of max_batch_tokens " +
                        std::to_string(options_.max_batch_tokens) + " and the model's context " +
                        std::to_string(model_config().n_ctx_train) + ")");
    }
  }
  if (request.embedding != Pooling::kNone) {
    if (request.max_tokens != 0) {
      return InvalidArgument("an embedding request generates nothing: max_tokens must be 0, got " +
                             std::to_string(request.max_tokens));
    }
    if (request.prompt_logprobs >= 0 || request.grammar) {
      return InvalidArgument("an embedding request takes no prompt_logprobs and no grammar");
    }
    if (request.embedding == Pooling::kRank && loop_->model().classifier() == nullptr) {
      return InvalidArgument(
          "a rank request needs a classifier head: the model has no cls.output.weight and no classifier "
          "tokens were given");
    }
  } else if (request.max_tokens < 0 || (request.max_tokens == 0 && request.prompt_logprobs < 0)) {
    return InvalidArgument("max_tokens must be >= 1 (or 0 with prompt_logprobs), got " +
                           std::to_string(request.max_tokens));
  }
  if (request.shared_prefix_hint < 0) {
    return InvalidArgument("shared_prefix_hint must be >= 0, got " +
                           std::to_string(request.shared_prefix_hint));
  }
  const size_t adapters = loop_->model().lora_adapters().size();
  if (request.lora_scales.size() > adapters) {
    return InvalidArgument("lora: " + std::to_string(request.lora_scales.size()) + " adapter scales given; " +
                           std::to_string(adapters) + " adapters are loaded");
  }
  for (float scale : request.lora_scales) {
    if (!std::isfinite(scale)) return InvalidArgument("lora: an adapter scale is not finite");
  }
  LOCKSTEP_RETURN_IF_ERROR(request.sampling.Validate());
  if (request.sampling.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("top_logprobs must be at most " + std::to_string(kMaxTopLogprobs) + ", got " +
                           std::to_string(request.sampling.top_logprobs));
  }
  if (request.sampling.top_logprobs > 0) request.sampling.logprobs = true;
  if (request.prompt_logprobs < -1 || request.prompt_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("prompt_logprobs must be in -1.." + std::to_string(kMaxTopLogprobs) + ", got " +
                           std::to_string(request.prompt_logprobs));
  }
  for (const std::string& stop : request.stop) {
    if (stop.empty()) return InvalidArgument("a stop string is empty");
  }
  if (!request.stop.empty() && loop_->tokenizer() == nullptr) {
    return InvalidArgument("stop strings need a tokenizer, and this engine has none");
  }
  if (request.min_tokens < 0 || request.min_tokens > request.max_tokens) {
    return InvalidArgument("min_tokens must be between 0 and max_tokens (" +
                           std::to_string(request.max_tokens) + "), got " +
                           std::to_string(request.min_tokens));
  }
  const int64_t total = prompt + request.max_tokens;
  if (total > options_.max_context) {
    return OutOfRange("the prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" +
                      std::to_string(request.max_tokens) + ") is " + std::to_string(total) +
                      " tokens, beyond the context of " + std::to_string(options_.max_context) + " tokens");
  }
  if (total > options_.kv_tokens) {
    return OutOfRange("the prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" +
                      std::to_string(request.max_tokens) + ") is " + std::to_string(total) +
                      " tokens, beyond the whole KV cache of " + std::to_string(options_.kv_tokens) +
                      " tokens");
  }
  return Status::Ok();
}

Result<std::shared_ptr<RequestHandle>> Engine::Submit(Request request, EventCallback on_event) {
  std::vector<Request> one;
  one.push_back(std::move(request));
  std::vector<EventCallback> callbacks;
  callbacks.push_back(std::move(on_event));
  LOCKSTEP_ASSIGN_OR_RETURN(auto handles, SubmitGroup(std::move(one), std::move(callbacks)));
  return std::move(handles[0]);
}

Result<std::vector<std::shared_ptr<RequestHandle>>> Engine::SubmitGroup(std::vector<Request> requests,
                                                                        std::vector<EventCallback> on_event) {
  if (requests.empty()) return InvalidArgument("an empty group of requests");
  if (!on_event.empty() && on_event.size() != requests.size()) {
    return InvalidArgument("a group needs one event callback per request (or none)");
  }
  for (Request& request : requests) {
    if (Status valid = Validate(request); !valid.ok()) {
      for (size_t i = 0; i < requests.size(); ++i) loop_->CountSubmit(false);
      return valid;
    }
  }
  std::vector<PendingRequest> group;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  const auto now = std::chrono::steady_clock::now();
  const RequestId first = next_request_id.fetch_add(RequestId(requests.size()));
  for (size_t i = 0; i < requests.size(); ++i) {
    PendingRequest pending;
    pending.id = first + RequestId(i);
    pending.request = std::move(requests[i]);
    if (i > 0) pending.request.fork_of = first;  // the group's prompts share their prefix with the first
    pending.channel = std::make_shared<EventChannel>(on_event.empty() ? nullptr : std::move(on_event[i]));
    pending.submit_time = now;
    handles.push_back(std::make_shared<RequestHandle>(pending.id, pending.channel, inbox_));
    group.push_back(std::move(pending));
  }
  Status pushed = inbox_->PushGroup(std::move(group));
  for (size_t i = 0; i < handles.size(); ++i) loop_->CountSubmit(pushed.ok());
  if (!pushed.ok()) return pushed;
  return handles;
}

}  // namespace lockstep
