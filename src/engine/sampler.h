// Token sampling for one request. A Sampler owns its SamplingParams, its own seeded RNG (never shared between
// requests, so a request's choices do not depend on its batch neighbours) and reusable scratch; it picks the
// next token from one row of logits. One thread at a time (the engine thread).
//
// Pipeline (each stage skipped at its neutral value):
//   penalties over the last penalty_last_n tokens of `history` (repetition: positive logits divided,
//   negative multiplied; frequency: minus count * f; presence: minus p once) ->
//   logit_bias (added to the named tokens' logits; OpenAI's, -100 in effect bans a token) ->
//   DRY over the last dry.penalty_last_n tokens (engine/dry_penalty.h: minus multiplier * base^(L - allowed)
//   for each token that would extend a repeat of the history's suffix of L tokens) ->
//   the allowed-token mask, when given (a grammar's, grammar/token_masker.h): other tokens are never
//   candidates, so every later stage sees only allowed tokens ->
//   temperature <= 0: argmax (lowest id on ties) ->
//   else logits / temperature (or the dynamic temperature, dynatemp_range) -> top_k -> softmax -> top_n_sigma
//   (logit >= max - n * stddev) -> typical_p (nearest the entropy first, up to that mass; may drop the most
//   likely token) -> top_p (smallest set with mass >= top_p) -> min_p (prob >= min_p * max prob) -> XTC (with
//   probability xtc_probability, one RNG draw: drop the tokens at or above xtc_threshold but the least likely
//   of them)
//   -> renormalise -> draw with the RNG. Each filter leaves at least min_keep (and one) tokens. With
//   mirostat 1 or 2, its truncation replaces top_k and those filters (as in llama.cpp's chain).
// Candidates are ordered by (logit descending, id ascending), so the same seed gives the same token.
//
// StopMatcher: finds stop strings in streamed text, holding back any tail that might be the start of one.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/dry_penalty.h"

namespace lockstep {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  // llama.cpp's further filters, each off by default (Sampler::Sample gives the order): top-nσ keeps the
  // logits within top_n_sigma standard deviations of the largest; locally typical sampling keeps the tokens
  // whose surprise is closest to the distribution's entropy, up to typical_p of the mass; XTC ("exclude top
  // choices"), with probability xtc_probability, drops every token at or above xtc_threshold but the least
  // likely of them. min_keep: the fewest tokens top_p, min_p, typical_p, top-nσ and XTC leave (0 and 1: one).
  float top_n_sigma = 0.0f;      // <= 0 = off
  float typical_p = 1.0f;        // 1 = off
  float xtc_probability = 0.0f;  // 0 = off
  float xtc_threshold = 0.1f;    // > 0.5 = off
  int32_t min_keep = 0;
  // Mirostat (llama.cpp's `mirostat` 1 or 2, 0 = off): in place of top_k and every filter after it, a
  // feedback loop keeps each token's surprise (-log2 p) near mirostat_tau: v2 keeps the tokens whose surprise
  // is at most mu, v1 a top-k estimated from the distribution's Zipf exponent and mu; after each draw mu -=
  // mirostat_eta * (the drawn token's surprise - tau), starting from 2 * tau.
  // Dynamic temperature (llama.cpp's dynatemp_range > 0): the temperature becomes
  // max(0, T - range) + 2 range · (H / H_max)^dynatemp_exponent, H the entropy of the candidates at
  // temperature 1 and H_max that of as many equally likely ones: confident rows are sampled cooler.
  float dynatemp_range = 0.0f;  // 0 = off
  float dynatemp_exponent = 1.0f;
  int32_t mirostat = 0;
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;
  float repetition_penalty = 1.0f;  // 1 = off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t penalty_last_n = 64;  // tokens of history the penalties look at; -1 = all, 0 = none
  // DRY, llama.cpp's "don't repeat yourself" (engine/dry_penalty.h); off unless dry.multiplier != 0. As the
  // penalties above, it applies with mirostat too (llama.cpp's mirostat chain has neither).
  DryParams dry;
  // (token, bias) pairs added to those tokens' logits, each token once; ids past the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0;
  bool logprobs = false;     // compute the chosen token's logprob (log-softmax of the raw logits)
  int32_t top_logprobs = 0;  // also the N most likely tokens (requires logprobs)

  // InvalidArgument naming the field for out-of-range values (negative temperature, top_p outside (0, 1],
  // ...).
  Status Validate() const;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// Log-softmax of one row of raw logits: `token`'s log-probability and, when top_n > 0, the top_n most likely
// tokens (most likely first, lowest id on ties) into *top. The same arithmetic as Sampler's logprobs.
float TokenLogprobOf(std::span<const float> logits, int32_t token, int32_t top_n,
                     std::vector<TokenLogprob>* top);

struct SampleResult {
  int32_t token = 0;
  float logprob = 0;              // only when params.logprobs (else 0)
  std::vector<TokenLogprob> top;  // params.top_logprobs entries, most likely first
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  const SamplingParams& params() const { return params_; }
  // logits: one row (n_vocab floats). history: prompt and generated tokens so far (for penalties).
  // allowed: empty (every token), or a bit mask of (n_vocab + 63) / 64 words, bit t of word t / 64 set for
  // each allowed token; at least one must be set. Logprobs stay those of the raw logits.
  SampleResult Sample(std::span<const float> logits, std::span<const int32_t> history,
                      std::span<const uint64_t> allowed = {});

 private:
  struct Candidate {
    float logit;
    int32_t token;
  };
  // Whether any penalty, bias or DRY may change a logit given this history.
  bool Penalised(std::span<const int32_t> history) const;
  void ApplyPenalties(std::span<const int32_t> history);  // on work_ (a copy of the logits)
  int32_t Draw();
  // One draw in [0, 1) from the request's RNG.
  double Uniform();
  // The dynamic temperature (dynatemp_range > 0) for the candidates_ (raw logits).
  float Temperature() const;
  // Mirostat's truncation, draw and update of mu_ over candidates_ (tempered logits).
  int32_t Mirostat(int32_t vocab);
  // The filters beyond top_k, top_p and min_p (SamplingParams), on the first n of candidates_ / probs_,
  // sorted in full. TopNSigma and Typical return how many stay at the front (Typical moves its kept ones
  // there, in order); ExcludeTopChoices how many stay at the end (it drops a prefix). Each leaves min_keep at
  // least.
  size_t TopNSigma(size_t n, size_t min_keep) const;
  size_t Typical(size_t n, size_t min_keep);
  size_t ExcludeTopChoices(size_t n, size_t min_keep);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> work_;            // penalised logits (only when Penalised)
  std::vector<Candidate> candidates_;  // scratch
  std::vector<float> probs_;           // scratch
  std::vector<int32_t> counts_;        // per-token counts for penalties (sparse reset)
  DryPenalty dry_;                     // DRY's scratch
  float mu_ = 0;                       // mirostat's target surprise bound (2 * tau before the first draw)
};

// Finds the first occurrence of any stop string in streamed text. Push() returns the text that is safe to
// emit now: everything before a found stop string, or everything except a held-back tail that could still
// become one. Flush() returns the held tail at the end of a stream with no stop. Empty stop strings are
// ignored.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Output {
    std::string text;      // to emit
    bool stopped = false;  // a stop string was found (text ends right before it)
    std::string matched;   // which one
    std::string tail;      // the text withheld from `text`: the stop string and whatever followed it
  };
  Output Push(std::string_view delta);
  std::string Flush();
  bool stopped() const { return stopped_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace lockstep
