#include "engine/dry_penalty.h"

#include <algorithm>
#include <cmath>

namespace lockstep {

void DrySequenceBreakers::Add(int32_t head, std::vector<int32_t> tail) {
  std::vector<std::vector<int32_t>>& tails = tails_by_head_[head];
  if (std::find(tails.begin(), tails.end(), tail) != tails.end()) return;
  tails.push_back(std::move(tail));
  ++size_;
}

const std::vector<std::vector<int32_t>>* DrySequenceBreakers::TailsOf(int32_t head) const {
  const auto it = tails_by_head_.find(head);
  return it == tails_by_head_.end() ? nullptr : &it->second;
}

bool DrySequenceBreakers::IsSingleToken(int32_t token) const {
  const std::vector<std::vector<int32_t>>* tails = TailsOf(token);
  return tails != nullptr &&
         std::any_of(tails->begin(), tails->end(), [](const std::vector<int32_t>& t) { return t.empty(); });
}

float DryPenaltyFor(const DryParams& params, int32_t repeat_length) {
  const double penalty = double(params.multiplier) *
                         std::pow(double(params.base), double(repeat_length) - double(params.allowed_length));
  return penalty < double(kMaxDryPenalty) ? float(penalty) : kMaxDryPenalty;
}

int32_t DryPenalty::RepeatLimit(const DrySequenceBreakers* breakers, std::span<const int32_t> window) {
  const int32_t n = int32_t(window.size());
  if (breakers == nullptr || breakers->size() == 0) return n;
  // From the end: the first token that heads a restart sequence whose tail follows it in full (the longest
  // such tail when several do). The tokens after that sequence are the most a repeat may span.
  for (int32_t back = 0; back < n; ++back) {  // window[n - 1 - back], `back` tokens after it
    const int32_t at = n - 1 - back;
    const std::vector<std::vector<int32_t>>* tails = breakers->TailsOf(window[size_t(at)]);
    if (tails == nullptr) continue;
    int32_t longest = -1;
    for (const std::vector<int32_t>& tail : *tails) {
      const int32_t length = int32_t(tail.size());
      if (length <= longest || length > back) continue;
      if (std::equal(tail.begin(), tail.end(), window.begin() + at + 1)) longest = length;
    }
    if (longest >= 0) return back - longest;
  }
  return n;
}

int32_t DryPenalty::Apply(const DryParams& params, std::span<const int32_t> history,
                          std::span<float> logits) {
  if (!params.enabled()) return 0;
  const size_t last_n =
      params.penalty_last_n < 0 ? history.size() : std::min(history.size(), size_t(params.penalty_last_n));
  const std::span<const int32_t> window = history.last(last_n);
  const int32_t n = int32_t(window.size());
  if (n <= params.allowed_length) return 0;
  const int32_t limit = RepeatLimit(params.breakers.get(), window);
  if (limit < params.allowed_length) return 0;

  // z_[k]: how many tokens the window's suffix shares with the tokens ending at window[n - 1 - k] (the
  // Z-array of the reversed window; [box_begin, box_end) is the rightmost match found so far).
  const auto reversed = [&](int32_t i) { return window[size_t(n - 1 - i)]; };
  z_.assign(size_t(n), 0);
  int32_t box_begin = 0, box_end = 0;
  for (int32_t k = 1; k < n; ++k) {
    int32_t length = k < box_end ? std::min(box_end - k, z_[size_t(k - box_begin)]) : 0;
    while (k + length < n && reversed(length) == reversed(k + length)) ++length;
    z_[size_t(k)] = length;
    if (k + length > box_end) {
      box_begin = k;
      box_end = k + length;
    }
  }

  // The token after each copy of the suffix would extend it: keep each token's longest repeat.
  if (longest_.size() < logits.size()) longest_.assign(logits.size(), -1);
  penalised_.clear();
  for (int32_t k = 1; k < n; ++k) {
    const int32_t repeat = std::min(z_[size_t(k)], limit);
    if (repeat < params.allowed_length) continue;
    const int32_t next = window[size_t(n - k)];  // follows window[n - 1 - k], where the copy ends
    if (next < 0 || size_t(next) >= logits.size()) continue;
    if (longest_[size_t(next)] < 0) penalised_.push_back(next);
    longest_[size_t(next)] = std::max(longest_[size_t(next)], repeat);
  }

  int32_t changed = 0;
  const DrySequenceBreakers* breakers = params.breakers.get();
  for (int32_t token : penalised_) {
    if (breakers == nullptr || !breakers->IsSingleToken(token)) {
      logits[size_t(token)] -= DryPenaltyFor(params, longest_[size_t(token)]);
      ++changed;
    }
    longest_[size_t(token)] = -1;
  }
  return changed;
}

}  // namespace lockstep
