// DRY's sequence breakers as strings (llama.cpp's dry_sequence_breakers) and the token-level restart
// sequences the sampler uses (engine/dry_penalty.h), built with the tokenizer; and the checks of DRY's
// command-line flags, shared by `serve` (its server-wide defaults) and the local commands (generate, chat,
// batch). Pure functions over immutable inputs: safe from any thread. Errors name the flag.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/dry_penalty.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {

// Limits on breaker strings: at most kMaxDryBreakers (more is refused); each is cut to kMaxDryBreakerBytes
// bytes (at a character boundary; llama.cpp cuts at 40 bytes too), and a restart sequence's tail to
// kMaxDryTailTokens tokens (as llama.cpp's).
inline constexpr size_t kMaxDryBreakers = 32;
inline constexpr size_t kMaxDryBreakerBytes = 40;
inline constexpr size_t kMaxDryTailTokens = 20;

// llama.cpp's default dry_sequence_breakers: "\n", ":", "\"", "*".
const std::vector<std::string>& DefaultDryBreakers();

// A breaker string cut to at most kMaxDryBreakerBytes bytes, not inside a UTF-8 character.
std::string CutDryBreaker(std::string text);

// The restart sequences of breaker strings (llama.cpp's get_overlapping_token_sequences): for each breaker,
// every token whose text holds it (no tail), and every token whose text ends with a proper prefix of it, with
// the rest of the breaker tokenized (no BOS, no special tokens; at most kMaxDryTailTokens) as the tail. One
// pass over the vocabulary. Empty breakers and rests the vocabulary cannot represent add nothing.
std::shared_ptr<const DrySequenceBreakers> DryRestartSequences(const Tokenizer& tokenizer,
                                                               const std::vector<std::string>& breakers);

// The values of --dry-multiplier, --dry-base, --dry-allowed-length and --dry-penalty-last-n in `dry` within
// what the request fields accept (llama.cpp's /completion ranges): "--dry-base must be from 1 to 1e6, got
// 0.5".
Status CheckDryFlags(const DryParams& dry);

// The breakers of --dry-sequence-breaker given `values` times: none given, llama.cpp's defaults; "none"
// alone, no breakers (as llama-server's); otherwise the non-empty values, each cut as above. More than
// kMaxDryBreakers values are refused, naming the flag.
Result<std::vector<std::string>> DryBreakersFromFlags(const std::vector<std::string>& values);

}  // namespace lockstep
