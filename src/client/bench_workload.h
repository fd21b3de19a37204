// Workloads for `lockstep bench serve`: requests from a JSONL dataset or random prompts of a given length,
// and arrival times (Poisson, or gamma with a burstiness factor, as vLLM's serving benchmark).
//
// Dataset format (JSONL, one request per line; blank lines and lines starting with '#' are skipped):
//   {"prompt": "text", "output_len": 128}
//   {"messages": [{"role": "user", "content": "text"}], "output_len": 64}
// "output_len" (alias "max_tokens") is optional: --output-len applies where it is missing.
// Random prompts are built from common English words, about one token per word; the server's usage reports
// the real prompt length. Pure functions given the rng; thread-safe.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/chat_client.h"

namespace lockstep::client {

struct WorkItem {
  std::vector<ChatMessage> messages;
  int max_tokens = 0;
};

// "L" or "L:SPREAD" (non-negative, SPREAD <= L). `flag` names the option in errors.
struct LengthSpec {
  int length = 0;
  int spread = 0;
};
Result<LengthSpec> ParseLengthSpec(const std::string& text, const std::string& flag);
int SampleLength(const LengthSpec& spec, std::mt19937_64& rng);  // uniform in [L-S, L+S], at least 1

// A prompt of about `tokens` tokens of random words (one word taken as one token).
std::string RandomPrompt(int tokens, std::mt19937_64& rng);

// How many tokens a text has (e.g. the server's POST /tokenize).
using TokenCounter = std::function<Result<int>(const std::string& text)>;
// A prompt of random words with at most `tokens` tokens as `count` measures them: the longest run of the
// same random words that fits (so within one word of `tokens`). Binary search: about log2(tokens) counts.
// Errors are count's.
Result<std::string> RandomPromptOfTokens(int tokens, std::mt19937_64& rng, const TokenCounter& count);

// Reads a dataset; errors name the file and line.
Result<std::vector<WorkItem>> LoadDataset(const std::string& path, const LengthSpec& default_output,
                                          std::mt19937_64& rng);

// Send offsets (seconds from the start) of n requests at `rate` req/s; rate <= 0 = all at once. Gaps are
// gamma distributed with shape `burstiness` and mean 1/rate (burstiness 1 = Poisson; < 1 burstier; > 1 more
// uniform).
std::vector<double> ArrivalOffsets(int n, double rate, double burstiness, std::mt19937_64& rng);

}  // namespace lockstep::client
