// GrammarConstraint: one request's constrained-decoding state in the engine loop (Request::grammar): its own
// GrammarMatcher over the shared TokenMasker. Before each sample it yields the allowed-token mask; after,
// it advances by the sampled token. End-of-generation tokens and the request's stop token ids are allowed
// only where the text is a complete match (end-of-generation never with ignore_eos). Engine thread only.
//
// Total work bound: each mask and each token advance has its own bound (the masker's, the matcher's), but a
// request could spend them at every step of its whole length. What the masks and advances of this request
// spend is summed (the same deterministic units, grammar/token_masker.h) and capped at the masker's
// max_request_work(): once the sum passes it, the next FillMask returns 0 and error() names the limit, so
// the engine ends the request with FinishReason::kError. Masks answered from the masker's caches cost
// nothing, so the sum (like the per-mask work) depends on what earlier requests already built.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/token_masker.h"

namespace lockstep {

class GrammarConstraint {
 public:
  GrammarConstraint(std::shared_ptr<grammar::TokenMasker> masker, bool allow_end,
                    std::vector<int32_t> stop_token_ids);

  // Writes the mask of allowed tokens (`words` = (n_vocab + 63) / 64 of the model's logits row) into
  // *mask; returns the number allowed (0: nothing may follow, or the vocabulary cannot spell what must).
  size_t FillMask(size_t words, std::vector<uint64_t>* mask);
  // Advances past a sampled token that FillMask allowed; end and stop tokens change nothing. Following the
  // token may pass the matcher's work bound (grammar/grammar_matcher.h): then error() says why and the
  // request must end.
  void Accept(int32_t token);
  // The text so far is a complete match.
  bool accepting() const { return matcher_.accepting(); }
  // Following the last token passed the matcher's work bound (error() says so): end the request.
  bool over_budget() const { return matcher_.over_budget(); }
  // The text is a complete match and nothing may follow.
  bool complete() const { return matcher_.accepting() && !matcher_.CanContinue(); }
  // Why the grammar cannot be enforced ("" normally): its masker went over its work bound, so FillMask
  // returned 0 (grammar/token_masker.h), following a token went over the matcher's, or the request went
  // over its total.
  std::string error() const;
  // Mask and advance work this request has spent so far (the sum the total bound caps).
  uint64_t work() const { return work_; }
  // The sum passed the masker's max_request_work() (sticky; error() says so).
  bool over_total() const { return over_total_; }

 private:
  std::shared_ptr<grammar::TokenMasker> masker_;
  grammar::GrammarMatcher matcher_;
  bool allow_end_;
  std::vector<int32_t> stop_token_ids_;
  uint64_t work_ = 0;
  bool over_total_ = false;
};

}  // namespace lockstep
