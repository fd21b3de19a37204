// GenerationJob: runs one API request's sequences in the engine (prompts × n choices, submitted at once so
// they run as parallel sequences; the n choices of a prompt fork from its first, so the prompt is prefilled
// once, and with fork_prompts every prompt forks from the first one's common prefix) and delivers their
// events on the connection's strand (ResponseWriter::Post), so a job's state is only ever touched by one
// thread at a time. A client disconnect (ResponseWriter::OnClose) or a deadline cancels every unfinished
// sequence in the engine, which frees their KV before its next step.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/harmony.h"
#include "chat/reasoning.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/server_metrics.h"
#include "server/slot_view.h"

namespace lockstep::server {

struct GenerationSpec {
  std::vector<std::vector<int32_t>> prompts;  // one engine request per prompt × n
  int n = 1;
  Request base;               // sampling, max_tokens, stop, ignore_eos (prompt_ids unused)
  bool seed_given = false;    // choice i of a prompt then uses seed + i; else a random seed
  bool keep_events = false;   // keep every TokenEvent (logprobs / details)
  bool fork_prompts = false;  // prompts after the first fork from it (server-side fan-out, server/fan_out.h)
  // Sequences in the engine at once at most (0: every one submitted at the start). The others are submitted
  // one group at a time as earlier ones finish, so a request with more inputs than the queue holds (an
  // embeddings batch of 1000) neither fills the queue nor is refused for it.
  int max_in_flight = 0;
  std::string label;
  // llama.cpp's id_slot: the seat (server/slot_view.h) its sequences take when it is free as they start
  // running (-1: the lowest free one).
  int preferred_seat = -1;
  // base.lora_scales came from the request's `lora` field; else the server's global scales apply
  // (server/lora_adapters.h).
  bool lora_given = false;
  // The replies are split into reasoning and content at reasoning_tags (chat/reasoning.h): each choice counts
  // its reasoning tokens (ChoiceState::reasoning_tokens); `reasoning_opened`: the prompt opened the block.
  bool split_reasoning = false;
  chat::ReasoningTags reasoning_tags = chat::kThinkTags;
  bool reasoning_opened = false;
  // With split_reasoning: the replies are Harmony (chat/harmony.h); their analysis messages are counted.
  bool harmony = false;
};

// How a choice ended, as the APIs report it: the engine's finish reason, with a cancellation told apart by
// what cut the request short — its deadline (--timeout: kTimeout) or the server shutting down (the drain
// grace period ran out: kAbort).
enum class ChoiceEnd { kNone, kStop, kLength, kTimeout, kAbort, kError };

struct ChoiceState {
  int index = 0;  // prompt_index * n + i
  int prompt_index = 0;
  uint64_t seed = 0;
  std::string text;                // concatenated text deltas
  std::vector<TokenEvent> events;  // every event when GenerationSpec::keep_events
  int32_t generated = 0;           // tokens generated (events with a token)
  std::vector<int32_t> tokens;     // their ids (for SlotView::RecordTokens)
  // Counts the reasoning among them (set when GenerationSpec::split_reasoning).
  std::optional<chat::ReasoningTokenCounter> reasoning_tokens;
  std::optional<chat::HarmonyTokenCounter> harmony_tokens;  // instead, for Harmony replies
  bool done = false;
  TokenEvent last;                   // the final event (finish reason, timing)
  ChoiceEnd end = ChoiceEnd::kNone;  // set with `last`
  bool cut = false;                  // ended early by the route (GenerationJob::Cut): ends as kLength
  std::shared_ptr<RequestHandle> handle;
};

// A job's sequences are submitted in groups: the n choices of one prompt (they fork from its first), or every
// sequence when GenerationSpec::fork_prompts.

// The scores of every prompt token after the first (Request::prompt_logprobs) that the choice's first event
// carried (its events must be kept: GenerationSpec::keep_events); null when the choice ended before its
// prompt was scored (cancelled, an error) or none were asked for.
const std::vector<PromptLogprob>* PromptScores(const GenerationSpec& spec, const ChoiceState& choice);

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  using TokenFn = std::function<void(GenerationJob& job, ChoiceState& choice, const TokenEvent& event)>;
  using DoneFn = std::function<void(GenerationJob& job)>;

  // Submits every sequence (or the first max_in_flight). On a submit error the sequences already submitted
  // are cancelled and the error is returned (ResourceExhausted = queue full, OutOfRange = too long,
  // InvalidArgument, Unavailable). on_token runs for every event (the last included); on_done once, after
  // every choice's last event. A later submission that fails (max_in_flight) cancels the job: submit_error()
  // says why, and the choices never submitted end without an event (ChoiceEnd::kError).
  // `slots` (may be null) lists the job's settings for GET /slots while it lives.
  static Parsed<std::shared_ptr<GenerationJob>> Start(Engine& engine, GenerationSpec spec,
                                                      std::shared_ptr<ResponseWriter> writer,
                                                      ServerMetrics* metrics, SlotView* slots,
                                                      double timeout_s, TokenFn on_token, DoneFn on_done);
  ~GenerationJob();
  void CancelAll();
  // Ends one choice now, as if it had reached its token limit (ChoiceEnd::kLength): llama.cpp's n_indent and
  // t_max_predict_ms stops. Tokens the engine generates before its cancellation takes effect are dropped; the
  // choice's last event follows (without a token). Call on the connection's strand (from a TokenFn).
  void Cut(ChoiceState& choice);

  std::vector<ChoiceState>& choices() { return choices_; }
  const GenerationSpec& spec() const { return spec_; }
  int prompt_tokens() const;  // sum of the prompts' lengths (each prompt counted once)
  // The seat `choice` runs or ran in (SlotView::SeatOf); -1 when none is known.
  int SeatOf(const ChoiceState& choice) const;
  // Of those, the tokens whose KV was reused rather than computed (each prompt's first choice; final once
  // that choice has finished).
  int cached_tokens() const;
  int completion_tokens() const;  // sum of generated tokens over choices
  int reasoning_tokens() const;   // of those, the reasoning (GenerationSpec::split_reasoning; else 0)
  bool timed_out() const { return timed_out_; }
  // A later submission's error (max_in_flight), if one failed.
  const std::optional<ApiError>& submit_error() const { return submit_error_; }
  bool client_gone() const { return client_gone_; }
  double elapsed_s() const;

 private:
  GenerationJob(GenerationSpec spec, std::shared_ptr<ResponseWriter> writer, ServerMetrics* metrics)
      : spec_(std::move(spec)), writer_(std::move(writer)), metrics_(metrics) {}
  void OnEvent(int choice, TokenEvent event, std::chrono::steady_clock::time_point at);
  // Submits the next groups while max_in_flight allows; false (and the error) when the engine refused one.
  bool SubmitMore(Status* error);
  // Ends the choices never submitted (after a cancellation or a failed submission).
  void AbandonUnsubmitted();
  // After a choice ended: on_done once every choice has.
  void ChoiceEnded();

  GenerationSpec spec_;
  std::shared_ptr<ResponseWriter> writer_;
  ServerMetrics* metrics_;
  SlotView* slots_ = nullptr;
  std::vector<ChoiceState> choices_;
  std::vector<std::chrono::steady_clock::time_point> last_token_at_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::function<void()> cancel_timer_;
  TokenFn on_token_;
  DoneFn on_done_;
  Engine* engine_ = nullptr;
  std::vector<Request> requests_;  // per choice, moved out when submitted
  std::vector<EventCallback> callbacks_;
  int group_size_ = 1;
  int next_ = 0;  // the first choice not submitted yet
  int in_flight_ = 0;
  std::optional<ApiError> submit_error_;
  int remaining_ = 0;
  bool timed_out_ = false;
  bool client_gone_ = false;
};

}  // namespace lockstep::server
