// SlotView: llama.cpp's GET /slots over lockstep's engine. llama.cpp runs a fixed set of slots (--parallel),
// each holding one request; lockstep's engine holds up to --max-seqs requests at once, in no fixed place. The
// view numbers those seats 0..max_seqs-1: a request the engine is prefilling or decoding takes the lowest
// free seat (its job's preferred seat, llama.cpp's id_slot, when that one is free) the first step it runs and
// keeps it until it finishes or is preempted (then it waits without one, as a request deferred by llama.cpp).
// Each seat reports llama.cpp's fields: id, id_task (the engine's request id; -1 when idle), n_ctx,
// speculative, is_processing, params (the running request's generation settings, as /completion reports them;
// the server's defaults when idle), prompt ("": prompts are not shown), next_token
// ({has_next_token, has_new_line, n_remain, n_decoded, stopping_word}) and lockstep's n_prompt_tokens.
//
// Each seat also keeps the tokens of the last request it held (prompt and generated tokens), what llama.cpp
// calls the slot's cache: POST /slots/{id}?action=save|restore|erase act on them (server/slot_files.h).
//
// OnStepRecord / OnRequestFinished run on the engine thread; Register / Unregister on connection strands;
// Json on any thread. All copy under one mutex (no I/O). Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace lockstep::server {

class SlotView {
 public:
  // `seats`: --max-seqs (>= 1). keep_tokens: RecordTokens keeps the tokens it is given (a server with
  // --slot-save-path, whose slot actions read them); otherwise seats remember no tokens.
  explicit SlotView(int seats, bool keep_tokens = false);

  void OnStepRecord(const StepRecord& record);
  void OnRequestFinished(RequestId id);

  // A job's requests (Request::label `label` + "#" + choice) run with `base`'s settings and take seat
  // `preferred_seat` when it is free (-1, or outside the seats: the lowest free); registered until
  // Unregister(label). A label registered twice needs two Unregister calls.
  void Register(const std::string& label, const Request& base, int preferred_seat = -1);
  void Unregister(const std::string& label);

  // The seats as llama.cpp's /slots lists them. `settings(base)` renders a request's generation settings
  // (null base: the server's defaults); `n_ctx`, `speculative` as the server runs.
  template <typename SettingsFn>
  nlohmann::json Json(int32_t n_ctx, bool speculative, const SettingsFn& settings) const;
  int idle() const;  // seats without a request
  int seats() const { return static_cast<int>(seats_.size()); }
  // The seat request `id` holds, or held last (until another request takes it); -1 when none.
  int SeatOf(RequestId id) const;
  // SeatOf for request `id` of job `job` that has run (it reported a token): the engine hands tokens out
  // before its step record, so one that no record has seated yet takes its seat now (the job's preferred
  // one if free, else the lowest free; -1 when none is), and its stream's first chunk names the seat it
  // keeps.
  int SeatOfRunning(RequestId id, const std::string& job);

  // A finished request's tokens (its prompt and what it generated; GenerationJob), kept by the seat it ran
  // in (a request that ended before a step reported it running takes `preferred_seat` if idle, else the
  // lowest idle seat).
  void RecordTokens(RequestId id, std::vector<int32_t> tokens, int preferred_seat = -1);
  bool keeps_tokens() const { return keep_tokens_; }
  // Seat `seat`'s tokens (0 <= seat < seats()): its last request's, or what SetSeatTokens put there.
  std::vector<int32_t> SeatTokens(int seat) const;
  void SetSeatTokens(int seat, std::vector<int32_t> tokens);

 private:
  struct Seat {
    bool busy = false;
    RequestId id = 0;
    std::string job;  // the request's job label (its Request::label without "#choice")
    int32_t prompt_tokens = 0, generated = 0, max_tokens = 0;
    RequestId last_id = 0;        // the last request that held it (0: none yet)
    std::vector<int32_t> tokens;  // that request's (RecordTokens) or SetSeatTokens's
  };
  // Frees a seat, keeping what it remembers of its request.
  static void Vacate(Seat& seat);
  // The seat request `id` holds, else the one it held last; -1 when none (mu_ held).
  int FindSeat(RequestId id) const;
  // Seat `preferred` when it is free (and exists), else the lowest free one; null when every seat is busy
  // (mu_ held).
  Seat* FreeSeat(int preferred);
  // Seats request `id` of `job` in the job's preferred seat when free, else the lowest free one; null when
  // every seat is busy (mu_ held).
  Seat* TakeSeat(RequestId id, const std::string& job);
  struct Job {
    Request base;
    int registrations = 0;
    int preferred_seat = -1;
  };

  mutable std::mutex mu_;
  std::vector<Seat> seats_;
  const bool keep_tokens_;
  std::unordered_map<std::string, Job> jobs_;
};

template <typename SettingsFn>
nlohmann::json SlotView::Json(int32_t n_ctx, bool speculative, const SettingsFn& settings) const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < seats_.size(); ++i) {
    const Seat& s = seats_[i];
    const auto job = s.busy ? jobs_.find(s.job) : jobs_.end();
    out.push_back({{"id", i},
                   {"id_task", s.busy ? static_cast<int64_t>(s.id) : -1},
                   {"n_ctx", n_ctx},
                   {"speculative", speculative},
                   {"is_processing", s.busy},
                   {"params", settings(job != jobs_.end() ? &job->second.base : nullptr)},
                   {"prompt", ""},
                   {"n_prompt_tokens", s.busy ? s.prompt_tokens : 0},
                   {"next_token",
                    {{"has_next_token", s.busy},
                     {"has_new_line", false},
                     {"n_remain", s.busy ? s.max_tokens - s.generated : -1},
                     {"n_decoded", s.busy ? s.generated : 0},
                     {"stopping_word", ""}}}});
  }
  return out;
}

}  // namespace lockstep::server
