#include "engine/grammar_constraint.h"

#include <algorithm>

namespace lockstep {

GrammarConstraint::GrammarConstraint(std::shared_ptr<grammar::TokenMasker> masker, bool allow_end,
                                     std::vector<int32_t> stop_token_ids)
    : masker_(std::move(masker)),
      matcher_(masker_->grammar()),
      allow_end_(allow_end),
      stop_token_ids_(std::move(stop_token_ids)),
      work_(matcher_.work()) {}  // the initial expansion

std::string GrammarConstraint::error() const {
  if (matcher_.over_budget()) return matcher_.over_budget_message();
  if (over_total_) {
    return "the grammar is too costly for one request: masking and following its tokens needed more than " +
           std::to_string(masker_->max_request_work()) +
           " parse-stack steps in all (the per-request grammar work bound; simplify the grammar or ask for "
           "fewer tokens)";
  }
  return masker_->over_budget_message();
}

size_t GrammarConstraint::FillMask(size_t words, std::vector<uint64_t>* mask) {
  mask->assign(words, 0);
  if (matcher_.over_budget() || over_total_) return 0;
  // Checked before the mask, so that a request whose last token completes the grammar still stops normally.
  if (work_ > masker_->max_request_work()) {
    over_total_ = true;
    return 0;
  }
  const size_t own = masker_->vocab().mask_words();
  LOCKSTEP_CHECK(own <= words);
  uint64_t spent = 0;
  size_t count = masker_->FillMask(matcher_, std::span<uint64_t>(mask->data(), own), &spent);
  work_ += spent;
  if (work_ > masker_->max_request_work()) {  // this mask was the one too many
    over_total_ = true;
    std::fill(mask->begin(), mask->end(), 0);
    return 0;
  }
  auto set = [&](int32_t id, bool on) {
    if (id < 0 || size_t(id) >= words * 64) return;
    uint64_t& w = (*mask)[size_t(id) >> 6];
    const uint64_t bit = uint64_t(1) << (id & 63);
    if (((w & bit) != 0) == on) return;
    w ^= bit;
    count += on ? 1 : size_t(-1);
  };
  if (!allow_end_) {
    for (int32_t id : masker_->vocab().eog()) set(id, false);
  }
  if (matcher_.accepting()) {
    for (int32_t id : stop_token_ids_) set(id, true);
  }
  return count;
}

void GrammarConstraint::Accept(int32_t token) {
  if (token < 0 || token >= masker_->vocab().size()) return;
  if (std::find(stop_token_ids_.begin(), stop_token_ids_.end(), token) != stop_token_ids_.end()) return;
  const std::string_view bytes = masker_->vocab().bytes(token);
  if (bytes.empty()) return;  // an end token
  const uint64_t before = matcher_.work();
  const bool accepted = matcher_.AcceptBytes(bytes);
  work_ += matcher_.work() - before;  // FillMask compares the sum with the bound
  LOCKSTEP_CHECK_MSG(accepted || matcher_.over_budget(), "a sampled token the grammar mask did not allow");
}

}  // namespace lockstep
