// `lockstep serve`: the OpenAI- and TGI-compatible HTTP server (server/server.h). Binds loopback by default.
// SIGINT / SIGTERM: GET /ready turns 503 while requests are still served for --drain-grace, then stop
// accepting, let in-flight requests finish within --drain-timeout, then exit 0.
#include <pthread.h>
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "chat/reasoning.h"
#include "chat/template_selection.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/engine_setup.h"
#include "cli/flag_checks.h"
#include "cli/server_setup.h"
#include "server/server.h"
#include "tensor/kernels.h"

namespace lockstep::cli {
namespace {

struct ServeFlags {
  server::ServerOptions options;
  EngineFlags engine;
  double timeout_s = 600;
  std::string pooling;  // --pooling: "" (the file's) | mean | cls | last
  std::string reasoning_format = "auto";
  std::string chat_template_kwargs;  // JSON object text; "" = none
  int reasoning_budget = -1;         // llama.cpp's: -1 unrestricted, 0 no thinking (enable_thinking false)
  std::vector<LoraFlag> lora;
  std::vector<std::string> dry_sequence_breakers;  // --dry-sequence-breaker (repeated); empty = llama.cpp's
};

// Sampling defaults for the fields requests leave out, under llama-server's flag names (server/
// sampling_defaults.h checks the values).
void AddSamplingDefaultFlags(CLI::App& cmd, ServeFlags& flags) {
  server::SamplingDefaults& d = flags.options.sampling_defaults;
  // One group heading says what every flag of it does: a default for requests that leave the field out.
  const std::string group =
      "Sampling defaults (for requests that leave the field out; default: the route's own)";
  cmd.add_option("--temperature,--temp", d.temperature, "Sampling temperature")->group(group);
  cmd.add_option("--top-k", d.top_k, "Top-k (0 = off)")->group(group);
  cmd.add_option("--top-p", d.top_p, "Top-p (1 = off)")->group(group);
  cmd.add_option("--min-p", d.min_p, "Min-p (0 = off)")->group(group);
  cmd.add_option("--repeat-penalty", d.repetition_penalty, "Repetition penalty (1 = off)")->group(group);
  cmd.add_option("--repeat-last-n", d.penalty_last_n, "Tokens the penalties look back (-1 = all)")
      ->group(group);
  cmd.add_option("--presence-penalty", d.presence_penalty, "Presence penalty")->group(group);
  cmd.add_option("--frequency-penalty", d.frequency_penalty, "Frequency penalty")->group(group);
  cmd.add_option("--dry-multiplier", d.dry_multiplier, "DRY multiplier (0 = off)")->group(group);
  cmd.add_option("--dry-base", d.dry_base, "DRY base (1.75)")->group(group);
  cmd.add_option("--dry-allowed-length", d.dry_allowed_length, "DRY: repeats this long are free (2)")
      ->group(group);
  cmd.add_option("--dry-penalty-last-n", d.dry_penalty_last_n,
                 "DRY: tokens scanned (-1 = the context, 0 = off)")
      ->group(group);
  cmd.add_option("--dry-sequence-breaker", flags.dry_sequence_breakers,
                 "DRY sequence breaker for requests that name none, repeated for several; replaces the "
                 "defaults (\\n : \" *); 'none' for none")
      ->group(group);
}

// --chat-template-kwargs and --reasoning-budget: the variables every chat template rendering sees.
nlohmann::ordered_json TemplateKwargsOrDie(const ServeFlags& flags) {
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (!flags.chat_template_kwargs.empty()) {
    kwargs = nlohmann::ordered_json::parse(flags.chat_template_kwargs, nullptr, /*allow_exceptions=*/false);
    if (!kwargs.is_object()) {
      Fail("--chat-template-kwargs must be a JSON object such as '{\"enable_thinking\": false}', got '" +
           flags.chat_template_kwargs + "'");
    }
  }
  if (flags.reasoning_budget == 0) kwargs["enable_thinking"] = false;
  return kwargs;
}

void RunServe(ServeFlags& flags) {
  server::ServerOptions options = flags.options;
  options.compute_threads = flags.engine.threads;
  options.max_seqs = flags.engine.max_seqs;
  options.max_batch_tokens = flags.engine.max_batch_tokens;
  options.kv_tokens = flags.engine.kv_tokens;
  if (!flags.engine.kv_memory.empty()) {
    options.kv_memory_bytes = ValueOrDie(ParseByteSize(flags.engine.kv_memory, "--kv-memory"));
  }
  options.kv_dtype = ParseKvTypeOrDie(flags.engine.kv_type);
  options.prefix_caching = !flags.engine.no_prefix_cache;
  options.draft_tokens = flags.engine.draft_max;
  options.draft_max_seqs = flags.engine.draft_max_seqs;
  CheckRecurrentSlotsOrDie(flags.engine);
  options.recurrent_slots = flags.engine.recurrent_slots;
  options.recurrent_cache_slots = flags.engine.recurrent_cache_slots;
  if (!(flags.timeout_s >= 0) || !std::isfinite(flags.timeout_s)) {
    Fail("--timeout must be a number of seconds >= 0 (0 = none), got " + std::to_string(flags.timeout_s));
  }
  options.request_timeout_s = flags.timeout_s;
  options.pooling = flags.pooling == "mean"   ? Pooling::kMean
                    : flags.pooling == "cls"  ? Pooling::kCls
                    : flags.pooling == "last" ? Pooling::kLast
                                              : Pooling::kNone;
  options.chat_template_kwargs = TemplateKwargsOrDie(flags);
  options.reasoning_format = *chat::ParseReasoningFormat(flags.reasoning_format);
  options.sampling_defaults =
      ValueOrDie(server::SamplingDefaults::FromFlags(options.sampling_defaults, flags.dry_sequence_breakers));
  options.split_questions = QuestionSplitterForServer();
  for (const LoraFlag& adapter : flags.lora) options.lora.push_back({adapter.path, adapter.scale});
  // The server listens first and loads the model after (so /health answers meanwhile): a --chat-template that
  // cannot be used is refused now, before "listening on ...".
  if (Status s = chat::CheckChatTemplateSpec(options.chat_template); !s.ok()) Fail(s);

  // Block the stop signals in every thread; this thread waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const Kernels kernels = ValueOrDie(ChooseKernelsForThisCpu());
  options.kernels = &kernels;
  auto server = ValueOrDie(server::Server::Create(options));
  const int port = ValueOrDie(server->Start());
  const std::string drafts = options.draft_tokens == 0
                                 ? ""
                                 : "; n-gram drafts of up to " + std::to_string(options.draft_tokens) +
                                       " tokens while at most " + std::to_string(options.draft_max_seqs) +
                                       " requests run";
  std::fprintf(stderr, "lockstep: serving '%s' on %s (kernels %s, KV %s%s; Ctrl-C to stop)\n",
               server->model_id().c_str(), server::HttpUrl(options.host, port).c_str(),
               std::string(kernels.name()).c_str(), KvDtypeName(options.kv_dtype), drafts.c_str());
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "lockstep: received %s; draining (grace %gs, then up to %gs; again to exit now)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", options.drain_grace_s, options.drain_timeout_s);
  // A second signal during the drain exits at once (128 + the signal, as a shell reports a killed process),
  // as uvicorn and other servers do: the drain may take --drain-timeout.
  std::thread([signals] {
    int again = 0;
    sigwait(&signals, &again);
    std::fprintf(stderr, "lockstep: received %s again; exiting without waiting for the drain\n",
                 again == SIGINT ? "SIGINT" : "SIGTERM");
    std::_Exit(128 + again);
  }).detach();
  server->Stop();
  std::fprintf(stderr, "lockstep: stopped\n");
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (OpenAI and TGI compatible APIs)");
  server::ServerOptions& o = flags->options;
  AddModelFileFlag(*cmd, o.model_path);
  AddChatTemplateFlag(*cmd, o.chat_template);
  cmd->add_option("--host", o.host, "Address to bind (loopback by default)")->capture_default_str();
  cmd->add_option("--port", o.port, "TCP port (0 = any free port)")
      ->check(IntegerIn(0, 65535))
      ->capture_default_str();
  CLI::Option* api_key = cmd->add_option(
      "--api-key", o.api_key, "Require Authorization: Bearer KEY (all routes but /health); printable ASCII");
  cmd->add_option(
         "--model-name,--model-alias", o.model_alias,
         "Model ids requests may name, comma-separated; the first is reported (default: the file name "
         "without .gguf)")
      ->delimiter(',');
  cmd->add_option("--allowed-origins", o.allowed_origins,
                  "Browser origins (scheme://host[:port], comma-separated, or *) allowed CORS access; other "
                  "origins are refused")
      ->delimiter(',');
  cmd->add_option("--slot-save-path", o.slot_save_path,
                  "Directory for llama.cpp's slot files: POST /slots/{id}?action=save|restore writes / reads "
                  "the cached KV of a slot's last prompt and reply there (created if missing; without it "
                  "those actions answer 501)")
      ->check(NotEmpty());
  cmd->add_option("--max-queue", o.max_queue, "Waiting requests at most (then 429 / 503)")
      ->check(IntegerIn(0, kMaxInt))
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s, "Per-request time limit in seconds (0 = none)")
      ->capture_default_str();
  cmd->add_option("--io-threads", o.io_threads, "HTTP I/O threads")
      ->check(IntegerIn(1, server::kMaxIoThreads))
      ->capture_default_str();
  cmd->add_option("--max-body", o.max_body_bytes, "Largest request body in bytes (then 413)")
      ->check(IntegerIn(0, std::numeric_limits<size_t>::max()))
      ->capture_default_str();
  cmd->add_option("--max-connections", o.max_connections,
                  "Open connections at most (0 = ulimit -n less 64); past it idle ones are closed, else 503")
      ->check(IntegerIn(0, kMaxInt))
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_s,
                  "Grace period for in-flight requests on SIGINT/SIGTERM (s)")
      ->capture_default_str();
  cmd->add_option("--drain-grace", o.drain_grace_s,
                  "On SIGINT/SIGTERM, seconds /ready answers 503 while requests are still served, before new "
                  "ones are refused (time for a balancer to notice)")
      ->capture_default_str();
  cmd->add_option("--header-timeout", o.header_timeout_s, "Seconds to receive a request's headers")
      ->capture_default_str();
  cmd->add_option("--body-timeout", o.body_timeout_s, "Seconds to receive a request's body")
      ->capture_default_str();
  cmd->add_option("--write-timeout", o.write_timeout_s,
                  "Seconds one response write may take before the client counts as gone")
      ->capture_default_str();
  cmd->add_option("--pooling", flags->pooling,
                  "How /v1/embeddings and /embed pool a prompt's final hidden states: mean, cls (the first "
                  "token's) or last (default: the model file's pooling_type, else last)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  // llama-server's --embedding: lockstep serves /v1/embeddings with every model, so the flag changes nothing;
  // accepted so that llama-server command lines run as they are.
  cmd->add_flag("--embedding,--embeddings")
      ->description("Accepted for llama-server's command lines (/v1/embeddings is always served)");
  cmd->add_flag("--reranking,--rerank", o.reranking,
                "Serve /rerank, /v1/rerank and /score with a plain causal LM, scored by the logits of "
                "--rerank-tokens at the prompt's last position (a file with a classifier head, "
                "cls.output.weight, ranks without it)");
  cmd->add_option(
         "--rerank-tokens", o.rerank_tokens,
         "With --reranking: the tokens whose logits score a pair, the relevant answer first (default: "
         "yes,no; score = sigmoid(logit_yes - logit_no))")
      ->delimiter(',')
      ->expected(2, 2);
  cmd->add_option(
         "--rerank-template", o.rerank_template,
         "The prompt of a (query, document) pair, {query} and {document} replaced (default: the file's "
         "tokenizer.chat_template.rerank, else [BOS] query [EOS] [SEP] document [EOS])")
      ->check(NotEmpty());
  cmd->add_option(
         "--reasoning-format", flags->reasoning_format,
         "Chat replies' <think> blocks: auto (returned as reasoning_content when the chat template "
         "writes them; under a Harmony template, gpt-oss's, its analysis messages), deepseek (always "
         "split), none (kept in content)")
      ->check(CLI::IsMember({"auto", "deepseek", "none"}))
      ->capture_default_str();
  cmd->add_option("--chat-template-kwargs", flags->chat_template_kwargs,
                  "Variables for every chat template rendering, a JSON object (e.g. '{\"enable_thinking\": "
                  "false}'); a request's chat_template_kwargs override them");
  cmd->add_option("--reasoning-budget", flags->reasoning_budget,
                  "-1: the model may think; 0: no thinking (enable_thinking false for the template)")
      ->check(CLI::IsMember({-1, 0}))
      ->capture_default_str();
  AddSamplingDefaultFlags(*cmd, *flags);
  AddEngineFlags(*cmd, flags->engine);
  AddDraftFlags(*cmd, flags->engine.draft_max, &flags->engine.draft_max_seqs);
  AddLoraFlags(*cmd, flags->lora);
  cmd->callback([flags, api_key] {
    // `--api-key "$UNSET"` would otherwise serve every route without a key.
    if (api_key->count() > 0 && flags->options.api_key.empty()) {
      Fail("--api-key is empty (leave the flag out to serve without a key)");
    }
    RunServe(*flags);
  });
}

}  // namespace lockstep::cli
