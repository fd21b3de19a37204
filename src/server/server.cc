#include "server/server.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "base/file_util.h"
#include "base/flag_range.h"
#include "chat/template_selection.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "server/dashboard_feed.h"
#include "server/harmony_reply.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/routes.h"
#include "server/server_metrics.h"
#include "server/slot_files.h"
#include "server/slot_view.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"
#include "tensor/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

// Not in an anonymous namespace: Server::Impl (external linkage) holds one.
class MetricsObserver : public EngineObserver {
 public:
  MetricsObserver(ServerMetrics* metrics, DashboardFeed* feed, SlotView* slots)
      : metrics_(metrics), feed_(feed), slots_(slots) {}
  void OnStep(const EngineStats& stats) override { metrics_->UpdateFromStats(stats); }
  void OnStepRecord(const StepRecord& record, const EngineStats& stats) override {
    feed_->OnStepRecord(record, stats);
    slots_->OnStepRecord(record);
  }
  void OnRequestFinished(RequestId id, FinishReason reason, const RequestTiming& timing) override {
    feed_->OnRequestFinished(id, reason, timing);
    slots_->OnRequestFinished(id);
  }

 private:
  ServerMetrics* metrics_;
  DashboardFeed* feed_;
  SlotView* slots_;
};

class Server::Impl {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        log_(std::make_shared<spdlog::logger>("lockstep-server",
                                              std::make_shared<spdlog::sinks::stderr_color_sink_mt>())),
        metrics_(registry_),
        feed_(&step_model_),
        slots_(options_.max_seqs, /*keep_tokens=*/!options_.slot_save_path.empty()),
        observer_(&metrics_, &feed_, &slots_) {
    log_->set_level(options_.quiet ? spdlog::level::warn : spdlog::level::info);
    state_.registry = &registry_;
    state_.metrics = &metrics_;
    GuardOptions guard;
    guard.api_key = options_.api_key;
    guard.allowed_origins = options_.allowed_origins;
    guard.loopback_only = IsLoopbackHost(options_.host);
    state_.guard = std::make_shared<RequestGuard>(std::move(guard));
    state_.request_timeout_s = options_.request_timeout_s;
    state_.id_salt = std::random_device{}();
    state_.feed = &feed_;
    state_.slots = &slots_;
    state_.step_model = &step_model_;
    state_.split_questions = options_.split_questions;
  }

  Result<int> Start() {
    HttpServerOptions http;
    http.host = options_.host;
    http.port = options_.port;
    http.io_threads = options_.io_threads;
    http.header_timeout_s = options_.header_timeout_s;
    http.body_timeout_s = options_.body_timeout_s;
    http.idle_timeout_s = options_.idle_timeout_s;
    http.write_timeout_s = options_.write_timeout_s;
    http.max_body_bytes = options_.max_body_bytes;
    http.max_connections = options_.max_connections;
    http.protocol_error_body = ProtocolErrorBody;
    http_ = std::make_unique<HttpServer>(http,
                                         [this](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
                                           HandleRequest(state_, std::move(request), std::move(writer));
                                         });
    LOCKSTEP_ASSIGN_OR_RETURN(port_, http_->Start());
    log_->info("listening on {} (loading {}; at most {} connections)", HttpUrl(options_.host, port_),
               options_.model_path,
               options_.max_connections > 0 ? options_.max_connections : DefaultMaxConnections());
    if (options_.on_listening) options_.on_listening(port_);
    Status loaded = Load();
    if (!loaded.ok()) {
      http_->Stop();
      return loaded;
    }
    state_.ready.store(true);
    log_->info("ready: model '{}' ({} context tokens, chat template: {})", state_.ctx.model_id,
               state_.ctx.max_context, state_.ctx.chat_template->family());
    return port_;
  }

  Status Load() {
    auto file = GgufFile::Open(options_.model_path);
    if (!file.ok()) return file.status();
    std::shared_ptr<const GgufFile> shared_file = std::move(file).value();
    std::vector<std::string> lora_paths;
    std::vector<float> lora_scales;
    for (const LoraAdapterOption& adapter : options_.lora) {
      lora_paths.push_back(adapter.path);
      lora_scales.push_back(adapter.scale);
    }
    auto tokenizer = Tokenizer::FromGguf(*shared_file);
    if (!tokenizer.ok()) {
      return tokenizer.status().WithContext(options_.model_path + ": the server needs the model's tokenizer");
    }
    std::shared_ptr<const Tokenizer> shared_tokenizer = std::move(tokenizer).value();
    auto classifier_tokens = RerankTokens(*shared_file, *shared_tokenizer);
    if (!classifier_tokens.ok()) return classifier_tokens.status();
    auto model = Model::Load(
        shared_file,
        {.kernels = options_.kernels, .lora_paths = lora_paths, .classifier_tokens = *classifier_tokens});
    if (!model.ok()) return model.status().WithContext(options_.model_path);
    std::shared_ptr<Model> shared_model = std::move(model).value();

    EngineOptions eo;
    eo.threads = ThreadsOrHardware(options_.compute_threads);
    eo.max_seqs = options_.max_seqs;
    eo.max_batch_tokens = options_.max_batch_tokens;
    eo.kv_memory_bytes = options_.kv_memory_bytes;
    eo.kv_tokens = options_.kv_tokens;
    eo.kv_dtype = options_.kv_dtype;
    eo.max_queue = options_.max_queue;
    eo.prefix_caching = options_.prefix_caching;
    eo.draft_tokens = options_.draft_tokens;
    eo.draft_max_seqs = options_.draft_max_seqs;
    eo.recurrent_slots = options_.recurrent_slots;
    eo.recurrent_cache_slots = options_.recurrent_cache_slots;
    auto engine = Engine::Create(shared_model, shared_tokenizer, eo, &observer_);
    if (!engine.ok()) return engine.status();
    engine_ = std::move(engine).value();
    if (const int32_t slots = engine_->Stats().recurrent_slots_total; slots > 0) {
      const double mib = double(engine_->model_config().RecurrentStateFloats()) * sizeof(float) / (1 << 20);
      log_->info("recurrent state: {} slots of {:.1f} MiB, one per running request (--recurrent-slots)",
                 slots, mib);
      const int32_t cached = engine_->Stats().recurrent_cache_slots_total;
      if (cached == 0) {
        log_->info("recurrent state prefix cache: off, no prefix caching for this model");
      } else {
        log_->info(
            "recurrent state prefix cache: {} snapshot slots of {:.1f} MiB, {:.0f} MiB when all are used "
            "(--recurrent-cache-slots{})",
            cached, mib, cached * mib,
            options_.recurrent_cache_slots == EngineOptions::kAutomaticCacheSlots
                ? " auto: as much memory as the KV cache, committed as used"
                : "");
      }
    }

    auto selected = chat::SelectChatTemplate(*shared_file, *shared_tokenizer, options_.chat_template);
    if (!selected.ok()) return selected.status();
    std::shared_ptr<const chat::ChatTemplate> chat_template = selected->chat_template;
    if (!chat_template->is_default()) log_->info("{}", chat_template->note());
    for (const std::string& warning : selected->warnings) log_->warn("{}", warning);
    ApiContext& ctx = state_.ctx;
    ctx.tokenizer = shared_tokenizer;
    ctx.chat_template = chat_template;
    ctx.model_ids = options_.model_alias;
    if (ctx.model_ids.empty())
      ctx.model_ids.push_back(std::filesystem::path(options_.model_path).stem().string());
    ctx.model_id = ctx.model_ids.front();
    ctx.model_path = options_.model_path;
    if (!options_.slot_save_path.empty()) {
      std::error_code created;
      std::filesystem::create_directories(options_.slot_save_path, created);
      if (created) {
        return InvalidArgument("--slot-save-path: cannot create '" + options_.slot_save_path +
                               "': " + created.message());
      }
      LOCKSTEP_ASSIGN_OR_RETURN(state_.model_fingerprint, ModelFileFingerprint(options_.model_path));
      state_.slot_save_path = options_.slot_save_path;
    }
    ctx.architecture = engine_->model_config().file_architecture;
    ctx.dtype = "gguf";
    ctx.max_context = engine_->max_context();
    if (engine_->kv_capacity_tokens() < ctx.max_context) {
      log_->warn(
          "the KV cache holds {} tokens, fewer than the context of {}: a request's prompt and output are "
          "limited to {} tokens (--kv-tokens / --kv-memory)",
          engine_->kv_capacity_tokens(), ctx.max_context, engine_->kv_capacity_tokens());
      ctx.max_context = static_cast<int32_t>(engine_->kv_capacity_tokens());
      ctx.kv_limited = true;
    }
    ctx.vocab_size = shared_tokenizer->vocab_size();
    ctx.embedding_length = engine_->model_config().n_embd;
    const Pooling file_pooling = engine_->model_config().pooling;
    const char* pooling_source = " (--pooling)";
    ctx.pooling = options_.pooling;
    if (ctx.pooling == Pooling::kNone && file_pooling != Pooling::kNone && file_pooling != Pooling::kRank) {
      ctx.pooling = file_pooling;
      pooling_source = " (the file's pooling_type)";
    } else if (ctx.pooling == Pooling::kNone) {
      ctx.pooling = Pooling::kLast;
      pooling_source = " (the file names none; --pooling changes it)";
    }
    log_->info("embeddings (/v1/embeddings, /embed): {} pooling{}", PoolingName(ctx.pooling), pooling_source);
    SetUpReranking(*shared_file, ctx);
    ctx.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    ctx.max_queue = options_.max_queue;
    ctx.max_seqs = options_.max_seqs;
    ctx.draft_tokens = options_.draft_tokens;
    ctx.prefix_caching = engine_->Stats().prefix_caching;  // off for bert, qwen35 without snapshots
    ctx.prefix_hints = ctx.prefix_caching && engine_->Stats().recurrent_cache_slots_total > 0;
    ctx.tool_marker_tokens = ToolMarkerTokens(*shared_tokenizer);
    ctx.harmony_tokens = HarmonyTokens(*shared_tokenizer);
    ctx.reasoning_tag_tokens = shared_tokenizer->ControlTokens(chat::kReasoningTagPieces);
    // Forced tool calls in the template's syntax (gpt-oss's: a Harmony message to functions.NAME). Their
    // grammars may produce the markers such requests keep in their text: the tool markers (Harmony's tokens
    // among them), and the reasoning tags where the template writes them.
    ctx.tool_syntax = DetectToolSyntax(ctx.chat_template->source());
    GrammarCacheOptions grammar_options;
    grammar_options.marker_tokens = ctx.tool_marker_tokens;
    if (ctx.chat_template->reasoning_tags()) {
      grammar_options.marker_tokens.insert(grammar_options.marker_tokens.end(),
                                           ctx.reasoning_tag_tokens.begin(), ctx.reasoning_tag_tokens.end());
    }
    ctx.grammars = std::make_shared<GrammarCache>(shared_tokenizer, grammar_options);
    ctx.chat_template_kwargs = options_.chat_template_kwargs;
    ctx.reasoning_format = options_.reasoning_format;
    ctx.sampling_defaults = options_.sampling_defaults;
    ctx.sampling_defaults.Prepare(*shared_tokenizer);
    if (ctx.chat_template->harmony()) {
      if (ctx.reasoning_format != chat::ReasoningFormat::kNone)
        log_->info(
            "chat: the template writes Harmony (gpt-oss): analysis messages are returned as "
            "reasoning_content, calls to functions.* as tool_calls (--reasoning-format none keeps the raw "
            "reply)");
    } else if (const auto tags =
                   chat::ReplyReasoningTags(ctx.reasoning_format, ctx.chat_template->reasoning_tags())) {
      log_->info(
          "chat: {}...{} blocks of replies are returned as reasoning_content (--reasoning-format none "
          "keeps them in content)",
          tags->open, tags->close);
    }
    ctx.lora = std::make_shared<LoraScales>(std::move(lora_paths), std::move(lora_scales));
    for (const LoraAdapterOption& adapter : options_.lora) {
      log_->info("LoRA adapter {} (global scale {})", adapter.path, adapter.scale);
    }
    state_.engine = engine_.get();
    return Status::Ok();
  }

  // The ids of --rerank-tokens (default "yes", "no") when --reranking asks a file without a classifier head
  // to rank; none otherwise. A text that is not one token of the vocabulary is refused.
  Result<std::vector<int32_t>> RerankTokens(const GgufFile& file, const Tokenizer& tokenizer) const {
    if (!options_.reranking || file.FindTensor("cls.output.weight") != nullptr) return std::vector<int32_t>{};
    std::vector<std::string> texts = options_.rerank_tokens;
    if (texts.empty()) texts = {"yes", "no"};
    std::vector<int32_t> ids;
    for (const std::string& text : texts) {
      int32_t id = tokenizer.FindToken(text);
      if (id < 0) {
        auto encoded = tokenizer.Encode(text, /*add_bos=*/false, /*parse_special=*/true);
        if (encoded.ok() && encoded->size() == 1) id = (*encoded)[0];
      }
      if (id < 0) {
        return InvalidArgument(
            "--rerank-tokens: '" + text + "' is not one token of " + options_.model_path +
            "'s vocabulary (name tokens the model answers with, e.g. --rerank-tokens yes,no)");
      }
      ids.push_back(id);
    }
    return ids;
  }

  void SetUpReranking(const GgufFile& file, ApiContext& ctx) {
    const Classifier* head = engine_->classifier();
    ctx.can_rank = head != nullptr;
    ctx.rerank_template = options_.rerank_template;
    auto file_template = file.GetStringOr("tokenizer.chat_template.rerank", "");
    if (ctx.rerank_template.empty() && file_template.ok()) ctx.rerank_template = *file_template;
    auto sep_key = file.GetIntOr("tokenizer.ggml.seperator_token_id", -1);  // llama.cpp's spelling
    const int64_t sep = sep_key.ok() ? *sep_key : -1;
    ctx.sep_id = sep >= 0 && sep < ctx.vocab_size ? int32_t(sep) : -1;
    if (head == nullptr) return;
    std::string labels;
    for (const std::string& l : head->labels) labels += (labels.empty() ? "" : ", ") + l;
    log_->info(
        "reranking (/rerank, /v1/rerank, /score): {} ({} outputs{}{}), prompt: {}",
        head->from_tokens ? "the logits of --rerank-tokens" : "the file's classifier head", head->n_cls,
        labels.empty() ? "" : ": ", labels,
        ctx.rerank_template.empty() ? "[BOS] query [EOS] [SEP] document [EOS]" : "the rerank template");
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
      stopping_ = true;
    }
    state_.drain_started.store(true);  // GET /ready answers 503 from now on
    if (http_ && state_.ready.load() && options_.drain_grace_s > 0) {
      // Keep serving (new connections and requests included) so that balancers polling /ready, or endpoint
      // lists being updated, stop sending traffic here before connections are refused.
      log_->info("drain: not ready; still serving for the {}s grace", options_.drain_grace_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(options_.drain_grace_s));
    }
    state_.draining.store(true);
    if (http_) {
      log_->info("drain: refusing new requests; {} in flight (up to {}s to finish)", http_->active_requests(),
                 options_.drain_timeout_s);
      http_->StopAccepting();
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(static_cast<int64_t>(options_.drain_timeout_s * 1000));
      while (http_->active_requests() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (http_->active_requests() > 0) {
        log_->warn("drain: {} request(s) still running after {}s; cancelling", http_->active_requests(),
                   options_.drain_timeout_s);
      }
    }
    if (engine_) engine_->Shutdown(/*drain=*/false);
    if (http_) {
      // Give cancelled streams a moment to send their last event.
      for (int i = 0; i < 50 && http_->active_requests() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      http_->Stop();
    }
    std::lock_guard lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopped_; });
  }

  ServerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  MetricsRegistry registry_;
  ServerMetrics metrics_;
  StepTimeModel step_model_;
  DashboardFeed feed_;
  SlotView slots_;
  MetricsObserver observer_;
  RouteState state_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
};

std::string HttpUrl(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  if (options.model_path.empty()) return InvalidArgument("no model file given (-m MODEL)");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.model_path, ec)) {
    return NotFound("model file '" + options.model_path + "' does not exist or is not a file");
  }
  LOCKSTEP_RETURN_IF_ERROR(CheckFlagRange(options.port, "--port", 0, 65535, "between 0 and 65535"));
  if (options.max_queue < 0) return InvalidArgument("--max-queue must be >= 0");
  for (const std::string& id : options.model_alias) {
    if (id.empty()) return InvalidArgument("--model-alias holds an empty model id");
  }
  for (const std::string& origin : options.allowed_origins) {
    if (origin != "*" && origin.find("://") == std::string::npos) {
      return InvalidArgument("--allowed-origins takes scheme://host[:port] entries or *, got '" + origin +
                             "'");
    }
  }
  if (options.max_seqs < 1) return InvalidArgument("--max-seqs must be >= 1");
  if (options.max_batch_tokens < 1) return InvalidArgument("--max-batch-tokens must be >= 1");
  LOCKSTEP_RETURN_IF_ERROR(CheckFlagRange(options.io_threads, "--io-threads", 1, kMaxIoThreads,
                                          "between 1 and " + std::to_string(kMaxIoThreads)));
  for (const char c : options.api_key) {  // a header value's token: a CR or LF could never be sent
    if (c < 0x21 || c > 0x7e) {
      return InvalidArgument("--api-key must be printable ASCII without spaces or control characters");
    }
  }
  if (options.max_connections < 0)
    return InvalidArgument("--max-connections must be >= 1 (or 0: from ulimit -n)");
  const std::pair<const char*, double> timeouts[] = {{"--header-timeout", options.header_timeout_s},
                                                     {"--body-timeout", options.body_timeout_s},
                                                     {"idle timeout", options.idle_timeout_s},
                                                     {"--write-timeout", options.write_timeout_s}};
  for (const auto& [name, seconds] : timeouts) {
    if (!(seconds > 0))
      return InvalidArgument(std::string(name) + " must be > 0 seconds, got " + std::to_string(seconds));
  }
  if (!options.slot_save_path.empty()) {
    LOCKSTEP_RETURN_IF_ERROR(CheckOutputDirectory(options.slot_save_path, "--slot-save-path"));
  }
  if (!(options.drain_timeout_s >= 0)) return InvalidArgument("--drain-timeout must be >= 0 seconds");
  if (!(options.drain_grace_s >= 0)) return InvalidArgument("--drain-grace must be >= 0 seconds");
  return std::unique_ptr<Server>(new Server(std::make_unique<Impl>(options)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }
Result<int> Server::Start() { return impl_->Start(); }
void Server::Stop() { impl_->Stop(); }
void Server::Wait() { impl_->Wait(); }
int Server::port() const { return impl_->port_; }
const std::string& Server::model_id() const { return impl_->state_.ctx.model_id; }

}  // namespace lockstep::server
