// Perplexity of a model over a text, measured the way llama.cpp's `llama-perplexity` measures it, so that
// the figures of the two compare (for a quantized file against its full-precision original, or lockstep
// against llama.cpp on one file): the tokens are cut into chunks of `context` tokens (a remainder shorter
// than a chunk is dropped), each chunk's first token becomes BOS when the vocabulary adds one, and the second
// half of each chunk is scored — each token at chunk positions context / 2 + 1 .. context - 1 by its
// log-probability given the chunk's tokens before it. PPL = exp(mean negative log-likelihood); its error is
// llama-perplexity's (the standard error of the mean NLL, times PPL).
//
// Every chunk is one engine request (Request::prompt_logprobs with max_tokens 0), all submitted at once, so
// they run as parallel sequences. MeasurePerplexity blocks until all are scored; the engine may be shared
// with other callers. Errors: InvalidArgument (context < 4, fewer tokens than one chunk, a token outside the
// vocabulary) or the engine's (a chunk longer than its context, queue full, a failed forward pass).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"

namespace lockstep {

struct PerplexityOptions {
  int32_t context = 512;   // tokens per chunk (llama-perplexity's -c)
  int32_t max_chunks = 0;  // 0: every whole chunk
  int32_t bos = -1;        // the token that replaces each chunk's first one; -1: none (keep the text's)
};

struct PerplexityResult {
  std::vector<double> running;  // PPL over chunks 1..i, after each chunk i (llama-perplexity's [i] values)
  double ppl = 0;
  double ppl_error = 0;  // 0 when fewer than two tokens were scored
  int64_t scored = 0;    // tokens scored
  int32_t chunks = 0;
  double seconds = 0;  // wall time of the scoring (submit to last result)
};

// The chunks MeasurePerplexity scores in `tokens` tokens (0 when fewer than one chunk, or context < 1).
int64_t PerplexityChunks(size_t tokens, const PerplexityOptions& options);

Result<PerplexityResult> MeasurePerplexity(Engine& engine, std::span<const int32_t> tokens,
                                           const PerplexityOptions& options);

}  // namespace lockstep
