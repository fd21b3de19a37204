// Draft tokens for speculative decoding by n-gram lookup in a request's own tokens ("prompt lookup"): text
// that repeats (code being edited, a document being quoted or summarised, a list) is likely to go on as it
// went on the last time its latest few tokens occurred. No draft model: the proposal is a copy of what
// followed the most recent earlier occurrence of the sequence's last n tokens (n from kNgramMax down to
// kNgramMin; the longest match wins), continued as a loop when the copy reaches the end. The engine verifies
// every drafted token with the model in the next step (engine/engine_loop.h), so a wrong draft costs a few
// rows of compute, never a wrong token. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lockstep {

inline constexpr int32_t kNgramMin = 2;
inline constexpr int32_t kNgramMax = 4;

// `max_tokens` tokens: those that followed the most recent earlier occurrence of the last n tokens of
// `tokens` (n = kNgramMax down to kNgramMin), and where they run out, the draft's own from its start at the
// same distance (tokens[i] = all[i - period], all = tokens + draft). None when no such occurrence exists or
// max_tokens <= 0.
// Work: O(tokens.size() × kNgramMax) at most.
std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> tokens, int32_t max_tokens);

}  // namespace lockstep
