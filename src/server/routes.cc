#include "server/routes.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <optional>

#include "server/embeddings_api.h"
#include "server/llamacpp_api.h"
#include "server/llamacpp_infill.h"
#include "server/openai_api.h"
#include "server/request_fields.h"
#include "server/request_guard.h"
#include "server/rerank_api.h"
#include "server/responses_api.h"
#include "server/slot_files.h"
#include "server/slot_view.h"
#include "server/sse.h"
#include "server/tgi_api.h"
#include "server/tokenize_api.h"

namespace lockstep::server {
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kEventStream = "text/event-stream";

void Reply(RouteState& state, ResponseWriter& writer, int status, const std::string& type, std::string body,
           HeaderList headers = {}) {
  state.metrics->CountResponse(status);
  writer.Send(status, type, std::move(body), std::move(headers));
}

void ReplyError(RouteState& state, ResponseWriter& writer, const ApiError& error, ApiFlavor flavor) {
  state.metrics->CountResponse(HttpStatusFor(error, flavor));
  SendApiError(writer, error, flavor);
}

void ReplyTimeout(RouteState& state, ResponseWriter& writer, ApiFlavor flavor) {
  ReplyError(state, writer,
             ApiError{Status(StatusCode::kDeadlineExceeded, "the request timed out after " +
                                                                fmt::format("{}", state.request_timeout_s) +
                                                                " s before any token was generated"),
                      "", false},
             flavor);
}

// A parsed JSON answer or its error (OpenAI flavour).
void ReplyJson(RouteState& state, ResponseWriter& writer, const Parsed<nlohmann::json>& parsed) {
  if (!parsed.ok()) return ReplyError(state, writer, parsed.error, ApiFlavor::kOpenAI);
  Reply(state, writer, 200, kJson, DumpJson(*parsed.value));
}

std::string NewId(RouteState& state, const char* prefix, char separator = '-') {
  return fmt::format("{}{}{:08x}{:08x}", prefix, separator, static_cast<uint32_t>(state.id_salt),
                     static_cast<uint32_t>(state.next_id.fetch_add(1)));
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A refused submission; a full queue's Retry-After says how long the queue ahead takes to drain.
ApiError SubmitError(RouteState& state, ApiError error) {
  if (error.status.code() == StatusCode::kResourceExhausted) {
    const EngineStats stats = state.engine->Stats();
    error.retry_after_s = RetryAfterSeconds(stats.waiting, stats.running, state.metrics->mean_run_s());
  }
  return error;
}

// The first error among a job's choices (engine generation failure), if any.
const TokenEvent* FailedChoice(GenerationJob& job) {
  for (const ChoiceState& c : job.choices()) {
    if (c.last.finish_reason == FinishReason::kError) return &c.last;
  }
  return nullptr;
}

// A whole (not streamed) answer that cannot be given: a 500 when a choice failed, a 504 when --timeout cut
// the request before any token (`timeout_applies`: the route generates tokens at all). True when it replied.
bool RepliedFailure(RouteState& st, ResponseWriter& writer, GenerationJob& job, ApiFlavor flavor,
                    bool timeout_applies = true) {
  if (const TokenEvent* failed = FailedChoice(job)) {
    ReplyError(st, writer, ApiError{Internal("generation failed: " + failed->error), "", false}, flavor);
    return true;
  }
  if (timeout_applies && job.timed_out() && job.completion_tokens() == 0) {
    ReplyTimeout(st, writer, flavor);
    return true;
  }
  return false;
}

void HandleOpenAi(RouteState& state, bool chat, const HttpRequest& request,
                  std::shared_ptr<ResponseWriter> writer) {
  auto parsed =
      chat ? ParseChatRequest(request.body, state.ctx) : ParseCompletionRequest(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, ApiFlavor::kOpenAI);
  auto req = std::make_shared<OpenAiRequest>(std::move(*parsed.value));
  const std::string id = NewId(state, chat ? "chatcmpl" : "cmpl");
  const int64_t created = UnixNow();
  auto first =
      std::make_shared<std::vector<bool>>(req->spec.prompts.size() * static_cast<size_t>(req->spec.n), true);
  RouteState* st = &state;
  GenerationJob::TokenFn on_token;
  // "fan_out": "message" streams the answers as one choice, in question order (server/fan_out.h).
  auto stitched =
      req->fan_out.stitched() ? std::make_shared<StitchedStream>(req->fan_out.questions) : nullptr;
  if (req->stream) {
    on_token = [st, req, id, created, first, writer, stitched](GenerationJob&, ChoiceState& choice,
                                                               const TokenEvent& event) {
      if (event.finish_reason == FinishReason::kError) {
        const ApiError error{Internal("generation failed: " + event.error), "", false};
        writer->Write(SseEvent(ErrorBody(error, ApiFlavor::kOpenAI)));
        return;
      }
      if (stitched) {
        if (auto chunk = stitched->Chunk(*req, choice, event, st->ctx, id, created)) {
          writer->Write(SseEvent(DumpJson(*chunk)));
        }
        return;
      }
      auto chunk =
          OpenAiChunk(*req, choice, event, (*first)[static_cast<size_t>(choice.index)], st->ctx, id, created);
      if (!chunk) return;
      (*first)[static_cast<size_t>(choice.index)] = false;
      for (const nlohmann::json& piece : SplitToolChunk(*req, std::move(*chunk))) {
        writer->Write(SseEvent(DumpJson(piece)));
      }
    };
  }
  GenerationJob::DoneFn on_done = [st, req, id, created, writer](GenerationJob& job) {
    if (req->stream) {
      if (req->include_usage)
        writer->Write(SseEvent(DumpJson(OpenAiUsageChunk(*req, job, st->ctx, id, created))));
      writer->Write(SseDone());
      writer->End();
      return;
    }
    if (RepliedFailure(*st, *writer, job, ApiFlavor::kOpenAI)) return;
    nlohmann::json response = OpenAiResponse(*req, job, st->ctx, id, created);
    if (req->fan_out.stitched()) response = StitchResponse(std::move(response), *req);
    Reply(*st, *writer, 200, kJson, DumpJson(response));
  };
  req->spec.label = id;
  UseGlobalLoraScales(state.ctx.lora.get(), req->spec);
  auto job = GenerationJob::Start(*state.engine, req->spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, std::move(on_token), std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), ApiFlavor::kOpenAI);
  if (req->stream) {
    state.metrics->CountResponse(200);
    writer->StartStream(200, kEventStream);
  }
}

// OpenAI's Responses API (server/responses_api.h): one chat choice, answered as a Response object or streamed
// as typed events.
void HandleResponses(RouteState& state, const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
  auto parsed = ParseResponsesRequest(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, ApiFlavor::kOpenAI);
  auto req = std::make_shared<ResponsesRequest>(std::move(*parsed.value));
  const std::string id = NewId(state, "resp", '_');
  const int64_t created = UnixNow();
  RouteState* st = &state;
  auto stream = req->chat.stream ? std::make_shared<ResponsesStream>(req, state.ctx, id, created) : nullptr;
  GenerationJob::TokenFn on_token;
  if (stream) {
    on_token = [stream, writer](GenerationJob&, ChoiceState& choice, const TokenEvent& event) {
      if (std::string events = stream->OnEvent(choice, event); !events.empty())
        writer->Write(std::move(events));
    };
  }
  GenerationJob::DoneFn on_done = [st, req, stream, id, created, writer](GenerationJob& job) {
    if (stream) {
      if (std::string events = stream->Finish(job); !events.empty()) writer->Write(std::move(events));
      writer->End();
      return;
    }
    if (RepliedFailure(*st, *writer, job, ApiFlavor::kOpenAI)) return;
    Reply(*st, *writer, 200, kJson, DumpJson(ResponsesResponse(*req, job, st->ctx, id, created)));
  };
  req->chat.spec.label = id;
  UseGlobalLoraScales(state.ctx.lora.get(), req->chat.spec);
  auto job = GenerationJob::Start(*state.engine, req->chat.spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, std::move(on_token), std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), ApiFlavor::kOpenAI);
  if (stream) {
    state.metrics->CountResponse(200);
    writer->StartStream(200, kEventStream);
    writer->Write(stream->Begin());
  }
}

void HandleTgi(RouteState& state, const HttpRequest& request, std::shared_ptr<ResponseWriter> writer,
               int force_stream /* -1: body decides (POST /), 0: no, 1: yes */, bool wrap_in_array) {
  auto parsed = ParseTgiRequest(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, ApiFlavor::kTgi);
  auto req = std::make_shared<TgiRequest>(std::move(*parsed.value));
  if (force_stream >= 0) req->stream = force_stream == 1;
  if (req->stream && req->decoder_input_details) {  // as TGI
    return ReplyError(state, *writer,
                      ApiError::Field("parameters.decoder_input_details",
                                      "parameters.decoder_input_details is not supported when streaming"),
                      ApiFlavor::kTgi);
  }
  if (req->stream && req->spec.n > 1) {  // as TGI: the best sequence is only known at the end
    return ReplyError(
        state, *writer,
        ApiError::Field("parameters.best_of", "parameters.best_of > 1 is not supported when streaming"),
        ApiFlavor::kTgi);
  }
  RouteState* st = &state;
  GenerationJob::TokenFn on_token;
  if (req->stream) {
    on_token = [st, req, writer](GenerationJob&, ChoiceState& choice, const TokenEvent& event) {
      if (event.finish_reason == FinishReason::kError) {
        const ApiError error{Internal("generation failed: " + event.error), "", false};
        writer->Write(SseEvent(ErrorBody(error, ApiFlavor::kTgi)));
        return;
      }
      if (auto e = TgiStreamEvent(*req, choice, event, st->ctx)) writer->Write(SseEvent(DumpJson(*e)));
    };
  }
  GenerationJob::DoneFn on_done = [st, req, writer, wrap_in_array](GenerationJob& job) {
    if (req->stream) {
      writer->End();
      return;
    }
    if (RepliedFailure(*st, *writer, job, ApiFlavor::kTgi)) return;
    nlohmann::json body = TgiResponse(*req, job, st->ctx);
    if (wrap_in_array) body = nlohmann::json::array({std::move(body)});
    const ChoiceState& c = TgiBestChoice(job);
    const double elapsed = job.elapsed_s();
    HeaderList headers = {{"x-compute-type", "cpu"},
                          {"x-compute-time", fmt::format("{:.6f}", elapsed)},
                          {"x-prompt-tokens", std::to_string(job.prompt_tokens())},
                          {"x-generated-tokens", std::to_string(c.generated)},
                          {"x-time-per-token", fmt::format("{:.6f}", c.last.timing.tpot_s)},
                          {"x-queue-time", fmt::format("{:.6f}", c.last.timing.queue_s)}};
    Reply(*st, *writer, 200, kJson, DumpJson(body), std::move(headers));
  };
  req->spec.label = NewId(state, "tgi");
  UseGlobalLoraScales(state.ctx.lora.get(), req->spec);
  auto job = GenerationJob::Start(*state.engine, req->spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, std::move(on_token), std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), ApiFlavor::kTgi);
  if (req->stream) {
    state.metrics->CountResponse(200);
    writer->StartStream(200, kEventStream);
  }
}

// llama.cpp's n_indent / t_max_predict_ms after an event of `choice` (sent already when streaming, as
// llama.cpp sends a token's text before it checks them): the choice ends as `limit`, its text cut where
// n_indent says. `first_at`: when each choice's first token came.
void LlamaCppCodeStops(const LlamaCppRequest& req, GenerationJob& job, ChoiceState& choice,
                       std::vector<std::chrono::steady_clock::time_point>& first_at) {
  using Clock = std::chrono::steady_clock;
  if (choice.done || choice.cut || choice.generated == 0) return;
  Clock::time_point& first = first_at[static_cast<size_t>(choice.index)];
  if (first == Clock::time_point{}) first = Clock::now();
  if (const size_t cut = LlamaCppIndentCut(choice.text, req.n_indent); cut != std::string::npos) {
    choice.text.resize(cut);
    return job.Cut(choice);
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - first).count();
  if (LlamaCppPredictTimeUp(choice.text, ms, req.t_max_predict_ms)) job.Cut(choice);
}

// llama.cpp's POST /completion (and /completions) and /infill (its prompt laid out around FIM tokens): one
// result per prompt × n_cmpl (an array when more than one); a stream of `data:` events per token and a
// summary per choice, without [DONE].
void HandleLlamaCpp(RouteState& state, const HttpRequest& request, std::shared_ptr<ResponseWriter> writer,
                    bool infill = false) {
  constexpr ApiFlavor kFlavor = ApiFlavor::kLlamaCpp;
  auto parsed = infill ? ParseLlamaCppInfill(request.body, state.ctx)
                       : ParseLlamaCppCompletion(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, kFlavor);
  auto req = std::make_shared<LlamaCppRequest>(std::move(*parsed.value));
  RouteState* st = &state;
  GenerationJob::TokenFn on_token;
  if (req->stream || req->n_indent > 0 || req->t_max_predict_ms > 0) {
    auto first_at = std::make_shared<std::vector<std::chrono::steady_clock::time_point>>(
        req->spec.prompts.size() * static_cast<size_t>(req->spec.n));
    on_token = [st, req, writer, first_at](GenerationJob& job, ChoiceState& choice, const TokenEvent& event) {
      if (event.finish_reason == FinishReason::kError) {
        const ApiError error{Internal("generation failed: " + event.error), "", false};
        if (req->stream) writer->Write(SseEvent(ErrorBody(error, kFlavor)));
        return;
      }
      if (req->stream) {
        for (const nlohmann::json& e : LlamaCppStreamEvents(*req, job, choice, event, st->ctx)) {
          writer->Write(SseEvent(DumpJson(e)));
        }
      }
      LlamaCppCodeStops(*req, job, choice, *first_at);
    };
  }
  GenerationJob::DoneFn on_done = [st, req, writer](GenerationJob& job) {
    if (req->stream) return writer->End();
    if (RepliedFailure(*st, *writer, job, kFlavor, /*timeout_applies=*/job.spec().base.max_tokens > 0))
      return;
    nlohmann::json results = nlohmann::json::array();
    for (const ChoiceState& c : job.choices()) results.push_back(LlamaCppResult(*req, job, c, st->ctx));
    Reply(*st, *writer, 200, kJson, DumpJson(req->several ? results : results[0]));
  };
  req->spec.label = NewId(state, "llcmpl");
  UseGlobalLoraScales(state.ctx.lora.get(), req->spec);
  auto job = GenerationJob::Start(*state.engine, req->spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, std::move(on_token), std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), kFlavor);
  if (req->stream) {
    state.metrics->CountResponse(200);
    writer->StartStream(200, kEventStream);
  }
}

enum class EmbeddingApi { kOpenAi, kTei, kLlamaCpp };

// OpenAI's /v1/embeddings, TEI's /embed or llama.cpp's /embedding: every input a parallel sequence in the
// engine.
void HandleEmbeddings(RouteState& state, const HttpRequest& request, std::shared_ptr<ResponseWriter> writer,
                      EmbeddingApi api) {
  const bool tei = api == EmbeddingApi::kTei;
  const ApiFlavor flavor = tei ? ApiFlavor::kTgi : ApiFlavor::kOpenAI;
  auto parsed = tei                            ? ParseTeiEmbedRequest(request.body, state.ctx)
                : api == EmbeddingApi::kOpenAi ? ParseOpenAiEmbeddingRequest(request.body, state.ctx)
                                               : ParseLlamaCppEmbeddingRequest(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, flavor);
  auto req = std::make_shared<EmbeddingRequest>(std::move(*parsed.value));
  RouteState* st = &state;
  GenerationJob::DoneFn on_done = [st, req, writer, api, flavor](GenerationJob& job) {
    if (job.submit_error()) return ReplyError(*st, *writer, SubmitError(*st, *job.submit_error()), flavor);
    if (const TokenEvent* failed = FailedChoice(job)) {
      return ReplyError(*st, *writer, ApiError{Internal("embedding failed: " + failed->error), "", false},
                        flavor);
    }
    const std::vector<std::vector<float>> embeddings = FinishedEmbeddings(*req, job);
    for (const std::vector<float>& values : embeddings) {
      if (values.empty()) return ReplyTimeout(*st, *writer, flavor);  // cut short (--timeout)
    }
    Reply(*st, *writer, 200, kJson,
          DumpJson(api == EmbeddingApi::kTei ? TeiEmbedResponse(embeddings)
                   : api == EmbeddingApi::kLlamaCpp
                       ? LlamaCppEmbeddingResponse(embeddings)
                       : OpenAiEmbeddingResponse(*req, embeddings, job.prompt_tokens(), st->ctx)));
  };
  req->spec.label = NewId(state, "embd");
  UseGlobalLoraScales(state.ctx.lora.get(), req->spec);
  auto job = GenerationJob::Start(*state.engine, req->spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, nullptr, std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), flavor);
}

// Reranking (/rerank and its aliases) or vLLM's /score: every (query, document) pair a parallel rank
// sequence in the engine (server/rerank_api.h).
void HandleRerank(RouteState& state, const HttpRequest& request, std::shared_ptr<ResponseWriter> writer,
                  bool score) {
  constexpr ApiFlavor kFlavor = ApiFlavor::kOpenAI;
  auto parsed =
      score ? ParseScoreRequest(request.body, state.ctx) : ParseRerankRequest(request.body, state.ctx);
  if (!parsed.ok()) return ReplyError(state, *writer, parsed.error, kFlavor);
  auto req = std::make_shared<RerankRequest>(std::move(*parsed.value));
  const std::string id = NewId(state, score ? "score" : "rerank");
  const int64_t created = UnixNow();
  RouteState* st = &state;
  GenerationJob::DoneFn on_done = [st, req, writer, score, id, created](GenerationJob& job) {
    if (job.submit_error()) return ReplyError(*st, *writer, SubmitError(*st, *job.submit_error()), kFlavor);
    if (const TokenEvent* failed = FailedChoice(job)) {
      return ReplyError(*st, *writer, ApiError{Internal("scoring failed: " + failed->error), "", false},
                        kFlavor);
    }
    std::vector<double> scores;
    for (const std::optional<double>& s : FinishedScores(job)) {
      if (!s) return ReplyTimeout(*st, *writer, kFlavor);  // cut short (--timeout)
      scores.push_back(*s);
    }
    Reply(*st, *writer, 200, kJson,
          DumpJson(
              score ? ScoreResponse(scores, job.prompt_tokens(), job.cached_tokens(), id, created, st->ctx)
                    : RerankResponse(*req, scores, job.prompt_tokens(), job.cached_tokens(), id, st->ctx)));
  };
  req->spec.label = id;
  UseGlobalLoraScales(state.ctx.lora.get(), req->spec);
  auto job = GenerationJob::Start(*state.engine, req->spec, writer, state.metrics, state.slots,
                                  state.request_timeout_s, nullptr, std::move(on_done));
  if (!job.ok()) return ReplyError(state, *writer, SubmitError(state, job.error), kFlavor);
}

bool IsTgiPath(const std::string& path) {
  return path == "/generate" || path == "/generate_stream" || path == "/" || path == "/info" ||
         path == "/embed";
}

ApiFlavor FlavorFor(const std::string& path) {
  if (IsTgiPath(path)) return ApiFlavor::kTgi;
  const bool llama_cpp = path == "/completion" || path == "/completions" || path == "/props" ||
                         path == "/infill" || path == "/slots" || path.starts_with("/slots/");
  return llama_cpp ? ApiFlavor::kLlamaCpp : ApiFlavor::kOpenAI;
}

// GET /slots (llama.cpp's): ?fail_on_no_slot (any value) answers 503 while every seat is taken.
void Slots(RouteState& state, const HttpRequest& request, ResponseWriter& writer) {
  if (state.slots == nullptr) {
    return ReplyError(state, writer, ApiError{NotFound("no route GET /slots"), ""}, ApiFlavor::kLlamaCpp);
  }
  if (!QueryParam(request.target, "fail_on_no_slot").empty() && state.slots->idle() == 0) {
    return ReplyError(state, writer, ApiError{Unavailable("no slot available"), ""}, ApiFlavor::kLlamaCpp);
  }
  Reply(state, writer, 200, kJson, DumpJson(LlamaCppSlots(state.ctx, *state.slots)));
}

// POST /slots/{id}?action=save|restore|erase (llama.cpp's; server/slot_files.h): refused as llama.cpp
// refuses it (501) without --slot-save-path.
void SlotAction(RouteState& state, const HttpRequest& request, ResponseWriter& writer) {
  const auto fail = [&](ApiError error) { ReplyError(state, writer, error, ApiFlavor::kLlamaCpp); };
  if (state.slot_save_path.empty() || state.slots == nullptr) {
    ApiError error{
        Unimplemented("This server does not support slots action. Start it with `--slot-save-path`"), "",
        false};
    error.http_status = 501;
    return fail(error);
  }
  const std::string id = request.path.substr(std::string_view("/slots/").size());
  int seat = -1;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), seat);
  if (ec != std::errc() || end != id.data() + id.size() || seat < 0 || seat >= state.slots->seats()) {
    return fail(ApiError{InvalidArgument("Invalid slot ID: '" + id + "' (slots are 0 to " +
                                         std::to_string(state.slots->seats() - 1) + ")"),
                         "id_slot"});
  }
  const std::string action = QueryParam(request.target, "action");
  if (action != "save" && action != "restore" && action != "erase") {
    return fail(
        ApiError{InvalidArgument("Invalid action: '" + action + "' (save, restore or erase)"), "action"});
  }
  const SlotFileContext ctx{state.engine, state.slots, state.slot_save_path, state.model_fingerprint};
  Parsed<nlohmann::json> answer = nlohmann::json();
  if (action == "erase") {
    answer = EraseSlot(ctx, seat);
  } else {
    Parsed<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body.ok()) return fail(body.error);
    FieldReader fields(*body.value);
    const std::optional<std::string> filename = fields.String("filename");
    if (fields.failed()) return fail(fields.error());
    if (!filename) return fail(ApiError{InvalidArgument("\"filename\" is required"), "filename"});
    answer = action == "save" ? SaveSlot(ctx, seat, *filename) : RestoreSlot(ctx, seat, *filename);
  }
  if (!answer.ok()) return fail(answer.error);
  Reply(state, writer, 200, kJson, DumpJson(*answer.value));
}

// Liveness: alive once loaded, draining included.
void Health(RouteState& state, ResponseWriter& writer) {
  const bool ok = state.ready.load();
  const char* status = !ok ? "loading" : state.drain_started.load() ? "draining" : "ok";
  nlohmann::json body = {{"status", status}};
  if (ok) body["prefix_caching"] = state.ctx.prefix_caching;  // ctx is complete once ready
  writer.Send(ok ? 200 : 503, kJson, DumpJson(body), ok ? HeaderList{} : HeaderList{{"Retry-After", "1"}});
}

// Readiness: send me traffic.
void Ready(RouteState& state, ResponseWriter& writer) {
  const bool loaded = state.ready.load();
  const bool draining = state.drain_started.load();
  const char* status = draining ? "draining" : loaded ? "ready" : "loading";
  const bool ok = loaded && !draining;
  writer.Send(ok ? 200 : 503, kJson, DumpJson({{"status", status}}),
              ok ? HeaderList{} : HeaderList{{"Retry-After", "1"}});
}

}  // namespace

std::string ProtocolErrorBody(const ProtocolError& error, const std::string& path) {
  const Status status = error.status == 503 ? Unavailable(error.message) : InvalidArgument(error.message);
  return ErrorBody(ApiError{status, "", false, error.code}, FlavorFor(path));
}

void HandleRequest(RouteState& state, HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  const std::string& path = request.path;
  const std::string& method = request.method;
  const ApiFlavor flavor = FlavorFor(path);
  const bool probe = path == "/health" || path == "/v1/health" || path == "/ready" || path == "/v1/ready";
  // Host and Origin first (the dashboard's pages need no key), then the key.
  RequestGuard::Verdict verdict = state.guard->Check(request, /*needs_key=*/false);
  if (!verdict.cors_headers.empty()) writer = WithHeaders(std::move(writer), verdict.cors_headers);
  if (!verdict.error && !verdict.preflight) {
    if (ServeWebPage(state, request, *writer)) return;
    if (!probe) verdict.error = state.guard->Check(request, /*needs_key=*/true).error;
  }
  // Only the API routes count in lockstep_requests_total (not probes, scrapes or unknown paths).
  struct Route {
    const char* method;  // GET routes answer HEAD too (without a body)
    const char* path;    // a trailing '*' matches any rest
    bool api;
    std::function<void()> run;
  };
  const auto models = [&] {
    const std::string id = path.size() > 11 ? path.substr(11) : "";
    const nlohmann::json listed = OpenAiModels(state.ctx);
    for (const nlohmann::json& model : listed["data"]) {
      if (model["id"] == id) return Reply(state, *writer, 200, kJson, DumpJson(model));
    }
    ReplyError(state, *writer, ModelNotFound(state.ctx, id), flavor);
  };
  const Route routes[] = {
      {"GET", "/health", false, [&] { Health(state, *writer); }},
      {"GET", "/v1/health", false, [&] { Health(state, *writer); }},
      {"GET", "/ready", false, [&] { Ready(state, *writer); }},
      {"GET", "/v1/ready", false, [&] { Ready(state, *writer); }},
      {"GET", "/metrics", false,
       [&] {
         if (state.ready.load()) state.metrics->UpdateFromStats(state.engine->Stats());
         writer->Send(200, MetricsRegistry::kContentType, state.registry->Render());
       }},
      {"POST", "/v1/completions", true, [&] { HandleOpenAi(state, false, request, writer); }},
      {"POST", "/v1/chat/completions", true, [&] { HandleOpenAi(state, true, request, writer); }},
      {"POST", "/v1/responses", true, [&] { HandleResponses(state, request, writer); }},
      {"GET", "/v1/models", true,
       [&] { Reply(state, *writer, 200, kJson, DumpJson(OpenAiModels(state.ctx))); }},
      {"GET", "/v1/models/*", true, models},
      {"POST", "/generate", true, [&] { HandleTgi(state, request, writer, 0, false); }},
      {"POST", "/generate_stream", true, [&] { HandleTgi(state, request, writer, 1, false); }},
      {"POST", "/", true, [&] { HandleTgi(state, request, writer, -1, true); }},
      {"GET", "/info", true, [&] { Reply(state, *writer, 200, kJson, DumpJson(TgiInfo(state.ctx))); }},
      {"POST", "/v1/embeddings", true,
       [&] { HandleEmbeddings(state, request, writer, EmbeddingApi::kOpenAi); }},
      {"POST", "/embed", true, [&] { HandleEmbeddings(state, request, writer, EmbeddingApi::kTei); }},
      {"POST", "/embedding", true,
       [&] { HandleEmbeddings(state, request, writer, EmbeddingApi::kLlamaCpp); }},
      {"POST", "/embeddings", true,
       [&] { HandleEmbeddings(state, request, writer, EmbeddingApi::kLlamaCpp); }},
      {"POST", "/rerank", true, [&] { HandleRerank(state, request, writer, false); }},
      {"POST", "/v1/rerank", true, [&] { HandleRerank(state, request, writer, false); }},
      {"POST", "/reranking", true, [&] { HandleRerank(state, request, writer, false); }},
      {"POST", "/v1/reranking", true, [&] { HandleRerank(state, request, writer, false); }},
      {"POST", "/score", true, [&] { HandleRerank(state, request, writer, true); }},
      {"POST", "/v1/score", true, [&] { HandleRerank(state, request, writer, true); }},
      {"GET", "/dashboard/events", true, [&] { StreamDashboardEvents(state, request, writer); }},
      {"GET", "/advisor", true, [&] { HandleAdvisor(state, request, *writer); }},
      {"POST", "/split", true, [&] { HandleSplit(state, request, *writer); }},
      {"POST", "/completion", true, [&] { HandleLlamaCpp(state, request, writer); }},
      {"POST", "/completions", true, [&] { HandleLlamaCpp(state, request, writer); }},
      {"POST", "/infill", true, [&] { HandleLlamaCpp(state, request, writer, /*infill=*/true); }},
      {"GET", "/props", true, [&] { Reply(state, *writer, 200, kJson, DumpJson(LlamaCppProps(state.ctx))); }},
      {"GET", "/slots", true, [&] { Slots(state, request, *writer); }},
      {"POST", "/slots/*", true, [&] { SlotAction(state, request, *writer); }},
      {"POST", "/tokenize", true,
       [&] { ReplyJson(state, *writer, TokenizeResponse(request.body, state.ctx)); }},
      {"POST", "/detokenize", true,
       [&] { ReplyJson(state, *writer, DetokenizeResponse(request.body, state.ctx)); }},
      {"GET", "/lora-adapters", true,
       [&] {
         Reply(state, *writer, 200, kJson,
               DumpJson(state.ctx.lora ? state.ctx.lora->List() : nlohmann::json::array()));
       }},
      {"POST", "/lora-adapters", true,
       [&] {
         if (!state.ctx.lora) return ReplyError(state, *writer, ApiError{Unavailable("loading"), ""}, flavor);
         ReplyJson(state, *writer, state.ctx.lora->Set(request.body));
       }},
      {"POST", "/apply-template", true,
       [&] { ReplyJson(state, *writer, ApplyTemplateResponse(request.body, state.ctx)); }},
  };
  const Route* route = nullptr;
  for (const Route& r : routes) {
    const std::string_view pattern = r.path;
    const bool match = pattern.back() == '*'
                           ? path.compare(0, pattern.size() - 1, pattern.substr(0, pattern.size() - 1)) == 0
                           : path == pattern;
    if (match && (route == nullptr || method == r.method)) route = &r;  // a path may have GET and POST
    if (match && method == r.method) break;
  }
  if (route == nullptr) {
    if (verdict.error) return SendApiError(*writer, *verdict.error, flavor);
    return SendApiError(*writer, ApiError{NotFound("no route " + method + " " + path), ""}, flavor);
  }
  const bool counted = route->api;
  if (verdict.error) {
    if (counted) state.metrics->CountResponse(HttpStatusFor(*verdict.error, flavor));
    return SendApiError(*writer, *verdict.error, flavor);
  }
  const std::string allow = std::string(route->method) == "GET" ? "GET, HEAD, OPTIONS" : "POST, OPTIONS";
  if (method == "OPTIONS") {  // a CORS preflight (headers from the guard) or a plain OPTIONS
    return writer->Send(204, "", "", {{"Allow", allow}});
  }
  const bool method_ok = method == route->method || (method == "HEAD" && std::string(route->method) == "GET");
  if (!method_ok) {
    if (counted) state.metrics->CountResponse(405);
    const ApiError error{
        InvalidArgument("method " + method + " not allowed on " + path + " (allowed: " + allow + ")"), ""};
    return writer->Send(405, kJson, ErrorBody(error, flavor), {{"Allow", allow}});
  }
  if (!route->api) return route->run();
  if (!state.ready.load())
    return ReplyError(state, *writer, ApiError{Unavailable("the model is still loading"), ""}, flavor);
  if (state.draining.load()) {
    return ReplyError(state, *writer, ApiError{Unavailable("the server is shutting down"), ""}, flavor);
  }
  route->run();
}

}  // namespace lockstep::server
