// DRY ("don't repeat yourself", llama.cpp's dry_* sampler after Koboldcpp's): a penalty on each token that
// would extend a repeat of the text's current suffix. Over the last penalty_last_n tokens of the history:
//
//   history window:  ... a b c x y ... a b c   (the suffix "a b c" appeared before, followed by x)
//   candidate x would make the repeat 4 long: its logit -= multiplier * base^(3 - allowed_length)
//
// For every earlier position whose tokens end with a copy of the current suffix of length L >=
// allowed_length, the token that followed that copy gets L; a token that followed several copies gets its
// longest L; each such token's logit is lowered once by multiplier * base^(L - allowed_length) (the product
// computed in double, as llama.cpp's, then capped at kMaxDryPenalty so a logit stays finite). Matches are
// found with the Z-algorithm over the reversed window (linear in the window).
//
// Sequence breakers (llama.cpp's dry_sequence_breakers: "\n", ":", "\"", "*" by default) end a match: the
// suffix that counts never reaches back past the restart sequence that starts last in the window (of those
// whose tail follows in full; its longest form there), and a candidate that is on its own a single-token
// restart sequence is never penalised. Breakers are strings that may span tokens; the sampler sees them as
// restart sequences, a head token and the tail tokens that must follow it (engine/dry_breakers.h builds
// them from the strings with the tokenizer, as llama.cpp's get_overlapping_token_sequences does: every token
// whose text holds the breaker, with no tail, and every token whose text ends with the breaker's start, with
// the rest of the breaker tokenized as its tail).
//
// Thread-safety: DrySequenceBreakers is immutable once built and shared between requests; DryPenalty holds
// per-sampler scratch, one thread at a time (the engine thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace lockstep {

// Token-level sequence breakers: a set of restart sequences.
class DrySequenceBreakers {
 public:
  // Adds the restart sequence head + tail (once: an equal one already there is not added again).
  void Add(int32_t head, std::vector<int32_t> tail);
  // The tails of the restart sequences that begin with `head` (nullptr when none does).
  const std::vector<std::vector<int32_t>>* TailsOf(int32_t head) const;
  // Whether `token` alone is a restart sequence (some sequence with this head has an empty tail).
  bool IsSingleToken(int32_t token) const;
  size_t size() const { return size_; }  // restart sequences

 private:
  std::unordered_map<int32_t, std::vector<std::vector<int32_t>>> tails_by_head_;
  size_t size_ = 0;
};

// The DRY settings of a request (SamplingParams::dry), llama.cpp's defaults; off unless multiplier != 0.
struct DryParams {
  float multiplier = 0.0f;      // 0 = off
  float base = 1.75f;           // < 1 = off, as llama.cpp's sampler (its server reads < 1 as 1.75)
  int32_t allowed_length = 2;   // repeats of this many tokens or fewer are free
  int32_t penalty_last_n = -1;  // tokens of history scanned: -1 = all of it (the context), 0 = off
  std::shared_ptr<const DrySequenceBreakers> breakers;  // null: none

  bool enabled() const { return multiplier != 0.0f && base >= 1.0f && penalty_last_n != 0; }
};

// A penalty larger than this is applied as this (the token is out of reach either way; logits stay finite).
inline constexpr float kMaxDryPenalty = 1e30f;

// The penalty of a token that would extend a repeat of `repeat_length` tokens (>= allowed_length): the float
// of multiplier * base^(repeat_length - allowed_length), computed in double, capped at kMaxDryPenalty.
float DryPenaltyFor(const DryParams& params, int32_t repeat_length);

class DryPenalty {
 public:
  // Lowers logits (one row, n_vocab floats) by the DRY penalty of each token that would extend a repeat of
  // history's suffix (see above); ids of history outside the row are ignored. Returns how many logits it
  // changed. Does nothing when !params.enabled().
  int32_t Apply(const DryParams& params, std::span<const int32_t> history, std::span<float> logits);

 private:
  // The length of the longest repeat that a candidate may extend: the tokens after the last complete
  // restart sequence in `window` (all of them when there is none).
  static int32_t RepeatLimit(const DrySequenceBreakers* breakers, std::span<const int32_t> window);

  std::vector<int32_t> z_;          // Z-array of the reversed window
  std::vector<int32_t> longest_;    // per token id: its longest repeat, -1 = none (reset sparsely)
  std::vector<int32_t> penalised_;  // the ids set in longest_
};

}  // namespace lockstep
