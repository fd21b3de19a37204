// Server: the OpenAI- and TGI-compatible HTTP front end of lockstep, startable in-process.
//
// Create() checks the options; Start() binds the listening socket (port 0 picks a free port), starts the I/O
// threads (GET /health answers 503 "loading" from then on), loads the model, tokenizer and chat template,
// starts the engine thread, and returns the bound port once the server is ready (/health and /ready 200).
// Stop() drains: GET /ready turns 503 at once while requests are still accepted and served for
// `drain_grace_s` (time for a balancer to notice), then the listener closes and new requests get 503,
// in-flight requests finish for up to `drain_timeout_s`, what is left is cancelled, and every thread is
// joined; the destructor calls it. Requests are parsed, validated, templated and tokenized on the I/O
// threads; the engine thread owns all model state and never sees HTTP or JSON. All public methods are
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/reasoning.h"
#include "model/model_config.h"
#include "server/dashboard_routes.h"
#include "server/sampling_defaults.h"
#include "tensor/kv_storage.h"

namespace lockstep {
struct Kernels;
}

namespace lockstep::server {

// A LoRA adapter loaded at start-up and its initial global scale (GET/POST /lora-adapters).
struct LoraAdapterOption {
  std::string path;
  float scale = 1;
};

struct ServerOptions {
  std::string model_path;          // GGUF file (required)
  std::string host = "127.0.0.1";  // loopback by default
  int port = 8080;                 // 0 = pick a free port
  std::string api_key;             // empty = no authentication
  // Model ids requests may name (others get 404 model_not_found); the first is the one reported. Default:
  // the file's stem.
  std::vector<std::string> model_alias;
  // Browser origins ("scheme://host[:port]", or "*") allowed besides the server's own: they get CORS
  // headers; requests from other origins are refused (request_guard.h). On a loopback bind, their hosts are
  // accepted in the Host header too.
  std::vector<std::string> allowed_origins;
  std::string chat_template;    // --chat-template FILE|NAME; "" = the model's own (chat/template_selection.h)
  int io_threads = 2;           // Asio I/O threads (separate from the engine thread), 1..kMaxIoThreads
  int compute_threads = 0;      // engine forward-pass threads; 0 = hardware concurrency
  int max_seqs = 64;            // engine: running sequences at most
  int max_batch_tokens = 512;   // engine: rows per forward pass at most
  int64_t kv_memory_bytes = 0;  // engine: KV pool size; 0 = the engine's default
  int64_t kv_tokens = 0;        // engine: KV pool size in tokens (overrides kv_memory_bytes when > 0)
  KvDtype kv_dtype = KvDtype::kF16;  // engine: the KV cache's element type (--kv-type)
  bool prefix_caching = true;        // engine: reuse the KV of shared prompt prefixes (--no-prefix-cache)
  int draft_tokens = 0;              // engine: speculative decoding by n-gram lookup (--draft-max)
  int draft_max_seqs = 4;            // engine: ... while at most this many requests run (--draft-max-seqs)
  int recurrent_slots = 0;  // engine: recurrent state slots (qwen35; --recurrent-slots); 0 = max_seqs
  // engine: their prefix-cache snapshots (--recurrent-cache-slots); 0 = none, -1 = automatic (sized by the
  // KV pool's memory: EngineOptions::kAutomaticCacheSlots)
  int recurrent_cache_slots = -1;
  // How /v1/embeddings and /embed pool a prompt (--pooling); kNone: the file's pooling_type, else last.
  Pooling pooling = Pooling::kNone;
  // Reranking (/rerank, /v1/rerank, /score; server/rerank_api.h): a file with a classifier head
  // (cls.output.weight) ranks as it is; `reranking` (--reranking) makes a plain causal LM rank with the
  // logits of `rerank_tokens` at the prompt's last position (--rerank-tokens; empty: "yes", "no": the score
  // is sigmoid(logit_yes - logit_no)). `rerank_template` (--rerank-template: {query}, {document}) replaces
  // the file's tokenizer.chat_template.rerank.
  bool reranking = false;
  std::vector<std::string> rerank_tokens;
  std::string rerank_template;
  // Variables every chat template rendering sees (--chat-template-kwargs, a JSON object; a request's
  // chat_template_kwargs override them).
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  // Whether chat replies' <think> blocks become reasoning_content (--reasoning-format; chat/reasoning.h).
  chat::ReasoningFormat reasoning_format = chat::ReasoningFormat::kAuto;
  // What requests get for the sampling fields they leave out (server/sampling_defaults.h).
  SamplingDefaults sampling_defaults;
  // LoRA adapters (--lora, --lora-scaled), ids in this order. A request's `lora` field sets its own scales;
  // without it a request takes the global scales (these, until POST /lora-adapters changes them).
  std::vector<LoraAdapterOption> lora;
  // Directory of llama.cpp's slot files (--slot-save-path; POST /slots/{id}?action=save|restore|erase,
  // server/slot_files.h), created at start when missing; "": those actions are refused (501).
  std::string slot_save_path;
  int max_queue = 256;             // waiting requests at most; past it 429 (TGI) / 503 + Retry-After (OpenAI)
  double request_timeout_s = 600;  // whole-request limit (generation included); <= 0 = none
  double header_timeout_s = 10;    // time to receive a request's headers
  double body_timeout_s = 30;      // time to receive a request's body
  double idle_timeout_s = 60;      // keep-alive connection idle time before it is closed
  double write_timeout_s =
      30;  // a response write taking longer closes the connection (client stopped reading)
  double drain_timeout_s = 30;       // Stop(): grace period for in-flight requests
  double drain_grace_s = 0;          // Stop(): /ready is 503 but requests are still served this long first
  size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  int max_connections = 0;           // open connections at most; 0 = from `ulimit -n` (http_server.h)
  // Called once on Start()'s thread when the socket is bound, before the model loads (GET /health answers 503
  // "loading" until Start() returns).
  std::function<void(int port)> on_listening;
  bool quiet = false;  // log warnings only (for in-process use, e.g. `bench -m`); logs go to stderr
  // Splits combined prompts for the playground's POST /split (the program passes the client's splitter);
  // empty: /split is unavailable.
  SplitQuestionsFn split_questions;
  const Kernels* kernels = nullptr;  // borrowed; null: Model::Load's choice (tensor/kernels.h)
};

inline constexpr int kMaxIoThreads = 256;

// "http://HOST:PORT", an IPv6 address in brackets ("http://[::1]:8080").
std::string HttpUrl(const std::string& host, int port);

class Server {
 public:
  // Validates the options (the model file must exist). Nothing is loaded or bound yet.
  static Result<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, loads the model and starts serving; returns the bound port (useful with port 0) once ready. Errors
  // name the address or the model file and what was wrong. Call once.
  Result<int> Start();
  // Drains (see above: drain_grace_s, then drain_timeout_s), cancels the rest, joins all threads. Blocks for
  // up to drain_grace_s + drain_timeout_s. Idempotent.
  void Stop();
  // Blocks until Stop() has completed (from another thread or a signal handler thread).
  void Wait();

  int port() const;
  const std::string& model_id() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::server
