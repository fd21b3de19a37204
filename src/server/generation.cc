#include "server/generation.h"

#include <algorithm>
#include <random>

namespace lockstep::server {

Parsed<std::shared_ptr<GenerationJob>> GenerationJob::Start(Engine& engine, GenerationSpec spec,
                                                            std::shared_ptr<ResponseWriter> writer,
                                                            ServerMetrics* metrics, SlotView* slots,
                                                            double timeout_s, TokenFn on_token,
                                                            DoneFn on_done) {
  std::shared_ptr<GenerationJob> job(new GenerationJob(std::move(spec), writer, metrics));
  if (slots) {
    slots->Register(job->spec_.label, job->spec_.base, job->spec_.preferred_seat);
    job->slots_ = slots;
  }
  job->on_token_ = std::move(on_token);
  job->on_done_ = std::move(on_done);
  job->engine_ = &engine;
  const GenerationSpec& s = job->spec_;
  const int total = static_cast<int>(s.prompts.size()) * s.n;
  job->choices_.resize(static_cast<size_t>(total));
  job->last_token_at_.resize(static_cast<size_t>(total));
  job->remaining_ = total;
  std::random_device rd;
  for (int c = 0; c < total; ++c) {
    ChoiceState& choice = job->choices_[static_cast<size_t>(c)];
    choice.index = c;
    choice.prompt_index = c / s.n;
    if (s.split_reasoning && s.harmony) {
      choice.harmony_tokens.emplace();
    } else if (s.split_reasoning) {
      choice.reasoning_tokens.emplace(s.reasoning_tags, s.reasoning_opened);
    }
    // A drawn seed is below 2^53: responses report it (TGI's details.seed) and a client, JavaScript's too,
    // can read it exactly and send it back as a request's seed.
    choice.seed = s.seed_given ? s.base.sampling.seed + static_cast<uint64_t>(c % s.n)
                               : (static_cast<uint64_t>(rd()) << 32 | rd()) & ((uint64_t{1} << 53) - 1);
    Request request = s.base;
    request.prompt_ids = s.prompts[static_cast<size_t>(choice.prompt_index)];
    request.sampling.seed = choice.seed;
    request.label = s.label + "#" + std::to_string(c);
    job->requests_.push_back(std::move(request));
    std::weak_ptr<GenerationJob> weak = job;
    job->callbacks_.push_back([weak, writer, c](TokenEvent event) {
      const auto at = std::chrono::steady_clock::now();
      writer->Post([weak, c, at, event = std::move(event)]() mutable {
        if (auto j = weak.lock()) j->OnEvent(c, std::move(event), at);
      });
    });
  }
  // One engine group per prompt (its n choices fork from the first, so the prompt is prefilled once), or
  // one group of every prompt with fork_prompts (server-side fan-out: the shared part is prefilled once).
  job->group_size_ = s.fork_prompts ? total : s.n;
  if (Status error; !job->SubmitMore(&error)) {
    job->remaining_ = -1;  // no on_done
    for (ChoiceState& c : job->choices_) {
      if (c.handle) c.handle->Cancel();
    }
    return ApiError{error, s.prompts.size() > 1 ? "prompt" : "", false};
  }
  if (timeout_s > 0) {
    std::weak_ptr<GenerationJob> weak = job;
    job->cancel_timer_ = writer->PostAfter(timeout_s, [weak] {
      if (auto j = weak.lock(); j && j->remaining_ > 0) {
        j->timed_out_ = true;
        j->CancelAll();
      }
    });
  }
  // Keep the job alive until every sequence finished; cancel on disconnect.
  writer->OnClose([job] {
    job->client_gone_ = true;
    job->CancelAll();
  });
  return job;
}

bool GenerationJob::SubmitMore(Status* error) {
  const int total = static_cast<int>(choices_.size());
  const int limit = spec_.max_in_flight > 0 ? std::max(spec_.max_in_flight, group_size_) : total;
  while (next_ < total && in_flight_ + group_size_ <= limit) {
    const int first = next_;
    std::vector<Request> group(std::make_move_iterator(requests_.begin() + first),
                               std::make_move_iterator(requests_.begin() + first + group_size_));
    std::vector<EventCallback> group_callbacks(callbacks_.begin() + first,
                                               callbacks_.begin() + first + group_size_);
    auto handles = engine_->SubmitGroup(std::move(group), std::move(group_callbacks));
    if (!handles.ok()) {
      *error = handles.status();
      return false;
    }
    for (int i = 0; i < group_size_; ++i) {
      choices_[static_cast<size_t>(first + i)].handle = (*handles)[static_cast<size_t>(i)];
    }
    next_ += group_size_;
    in_flight_ += group_size_;
  }
  return true;
}

void GenerationJob::AbandonUnsubmitted() {
  const int total = static_cast<int>(choices_.size());
  for (; next_ < total; ++next_) {
    ChoiceState& choice = choices_[static_cast<size_t>(next_)];
    choice.done = true;
    choice.end = ChoiceEnd::kError;
    --remaining_;
  }
}

void GenerationJob::CancelAll() {
  const bool abandoning = next_ < static_cast<int>(choices_.size());
  AbandonUnsubmitted();  // a submitted choice stays in flight until its cancelled event
  for (ChoiceState& c : choices_) {
    if (c.handle && !c.done) c.handle->Cancel();
  }
  if (abandoning) ChoiceEnded();  // nothing in flight: no event would end the job
}

GenerationJob::~GenerationJob() {
  if (slots_) slots_->Unregister(spec_.label);
}

void GenerationJob::Cut(ChoiceState& choice) {
  if (choice.done || choice.cut) return;
  choice.cut = true;
  if (choice.handle) choice.handle->Cancel();
}

void GenerationJob::OnEvent(int c, TokenEvent event, std::chrono::steady_clock::time_point at) {
  ChoiceState& choice = choices_[static_cast<size_t>(c)];
  if (choice.done) return;
  if (choice.cut) {  // only its last event still counts, without what was generated after the cut
    if (!event.last()) return;
    event.token = kNoToken;
    event.text_delta.clear();
    event.top_logprobs.clear();
  }
  if (event.token != kNoToken) {
    if (choice.generated > 0 && metrics_) {
      metrics_->itl->Observe(
          std::chrono::duration<double>(at - last_token_at_[static_cast<size_t>(c)]).count());
    }
    last_token_at_[static_cast<size_t>(c)] = at;
    choice.generated++;
    choice.tokens.push_back(event.token);
  }
  choice.text += event.text_delta;
  if (event.token != kNoToken && choice.reasoning_tokens) choice.reasoning_tokens->AddToken(choice.text);
  if (event.token != kNoToken && choice.harmony_tokens) choice.harmony_tokens->AddToken(choice.text);
  if (spec_.keep_events) choice.events.push_back(event);
  if (event.last()) {
    choice.done = true;
    choice.last = event;
    switch (event.finish_reason) {
      case FinishReason::kStop:
        choice.end = ChoiceEnd::kStop;
        break;
      case FinishReason::kLength:
        choice.end = ChoiceEnd::kLength;
        break;
      case FinishReason::kCancelled:
        choice.end = timed_out_ ? ChoiceEnd::kTimeout : ChoiceEnd::kAbort;
        break;
      default:
        choice.end = ChoiceEnd::kError;
        break;
    }
    if (choice.cut && event.finish_reason != FinishReason::kError) choice.end = ChoiceEnd::kLength;
    if (metrics_) metrics_->ObserveRequest(event.timing);
    if (slots_ != nullptr && choice.handle != nullptr) {
      std::vector<int32_t> tokens;  // only a server that saves slots keeps them (O(prompt) a request)
      if (slots_->keeps_tokens()) {
        tokens = spec_.prompts[static_cast<size_t>(choice.prompt_index)];
        tokens.insert(tokens.end(), choice.tokens.begin(), choice.tokens.end());
      }
      slots_->RecordTokens(choice.handle->id(), std::move(tokens), spec_.preferred_seat);
    }
  }
  if (on_token_ && !client_gone_) on_token_(*this, choice, event);
  if (!event.last()) return;
  --in_flight_;
  if (remaining_ > 0 && next_ < static_cast<int>(choices_.size()) && !timed_out_ && !client_gone_ &&
      !submit_error_) {
    if (Status error; !SubmitMore(&error)) {
      submit_error_ = ApiError{error, "", false};
      CancelAll();
    }
  }
  --remaining_;
  ChoiceEnded();
}

void GenerationJob::ChoiceEnded() {
  if (remaining_ != 0) return;
  auto self = shared_from_this();  // on_done may drop the last other reference
  if (cancel_timer_) cancel_timer_();
  if (on_done_ && !client_gone_) on_done_(*this);
  writer_->OnClose([] {});  // releases the job held by the close callback
}

const std::vector<PromptLogprob>* PromptScores(const GenerationSpec& spec, const ChoiceState& choice) {
  if (choice.events.empty()) return nullptr;
  const std::vector<PromptLogprob>& scores = choice.events.front().prompt_logprobs;
  const size_t prompt = spec.prompts[static_cast<size_t>(choice.prompt_index)].size();
  return scores.size() + 1 == prompt ? &scores : nullptr;
}

int GenerationJob::SeatOf(const ChoiceState& choice) const {
  if (slots_ == nullptr || choice.handle == nullptr) return -1;
  return choice.generated > 0 ? slots_->SeatOfRunning(choice.handle->id(), spec_.label)
                              : slots_->SeatOf(choice.handle->id());
}

int GenerationJob::prompt_tokens() const {
  int n = 0;
  for (const auto& p : spec_.prompts) n += static_cast<int>(p.size());
  return n;
}

int GenerationJob::cached_tokens() const {
  int n = 0;
  for (size_t p = 0; p < spec_.prompts.size(); ++p) {
    n += choices_[p * static_cast<size_t>(spec_.n)].last.timing.cached_tokens;
  }
  return n;
}

int GenerationJob::completion_tokens() const {
  int n = 0;
  for (const auto& c : choices_) n += c.generated;
  return n;
}

int GenerationJob::reasoning_tokens() const {
  int n = 0;
  for (const auto& c : choices_) {
    n += c.reasoning_tokens ? c.reasoning_tokens->tokens() : 0;
    n += c.harmony_tokens ? c.harmony_tokens->tokens() : 0;
  }
  return n;
}

double GenerationJob::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace lockstep::server
