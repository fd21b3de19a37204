#include "eval/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>

namespace lockstep {

int64_t PerplexityChunks(size_t tokens, const PerplexityOptions& options) {
  if (options.context < 1) return 0;
  const int64_t chunks = int64_t(tokens) / options.context;
  return options.max_chunks > 0 ? std::min<int64_t>(chunks, options.max_chunks) : chunks;
}

Result<PerplexityResult> MeasurePerplexity(Engine& engine, std::span<const int32_t> tokens,
                                           const PerplexityOptions& options) {
  const int32_t context = options.context;
  if (context < 4)
    return InvalidArgument("the chunk context must be at least 4 tokens, got " + std::to_string(context));
  const int64_t chunks = PerplexityChunks(tokens.size(), options);
  if (chunks == 0) {
    return InvalidArgument("the text has " + std::to_string(tokens.size()) +
                           " tokens, fewer than one chunk of " + std::to_string(context));
  }
  const int32_t first = context / 2;  // logits of positions first .. context - 2 are scored
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int64_t c = 0; c < chunks; ++c) {
    Request request;
    request.prompt_ids.assign(tokens.begin() + c * context, tokens.begin() + (c + 1) * context);
    if (options.bos >= 0) request.prompt_ids[0] = options.bos;
    request.prompt_logprobs = 0;
    request.max_tokens = 0;
    request.label = "perplexity chunk " + std::to_string(c + 1);
    auto handle = engine.Submit(std::move(request));
    if (!handle.ok()) {
      for (auto& h : handles) h->Cancel();
      return handle.status().WithContext("chunk " + std::to_string(c + 1));
    }
    handles.push_back(std::move(handle).value());
  }
  PerplexityResult result;
  double nll = 0, nll2 = 0;
  for (size_t c = 0; c < handles.size(); ++c) {
    std::vector<PromptLogprob> scores;
    std::string error;
    while (std::optional<TokenEvent> event = handles[c]->Next()) {
      if (!event->prompt_logprobs.empty()) scores = std::move(event->prompt_logprobs);
      if (event->finish_reason == FinishReason::kError) error = event->error;
      if (event->finish_reason == FinishReason::kCancelled) error = "cancelled";
    }
    if (scores.size() + 1 != size_t(context)) {
      for (size_t k = c + 1; k < handles.size(); ++k) handles[k]->Cancel();
      return Internal("chunk " + std::to_string(c + 1) + " was not scored" +
                      (error.empty() ? std::string() : ": " + error));
    }
    // scores[p - 1] is the token at chunk position p.
    for (int32_t p = first + 1; p < context; ++p) {
      const double v = -double(scores[size_t(p - 1)].logprob);
      nll += v;
      nll2 += v * v;
      ++result.scored;
    }
    result.running.push_back(std::exp(nll / double(result.scored)));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.chunks = int32_t(chunks);
  const double mean = nll / double(result.scored);
  result.ppl = std::exp(mean);
  const double variance = nll2 / double(result.scored) - mean * mean;
  if (result.scored > 1 && variance > 0) {
    result.ppl_error = result.ppl * std::sqrt(variance / double(result.scored - 1));
  }
  return result;
}

}  // namespace lockstep
