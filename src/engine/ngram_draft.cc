#include "engine/ngram_draft.h"

#include <algorithm>

namespace lockstep {

std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> tokens, int32_t max_tokens) {
  const int64_t size = int64_t(tokens.size());
  if (max_tokens <= 0) return {};
  for (int64_t n = std::min<int64_t>(kNgramMax, size - 1); n >= kNgramMin; --n) {
    const std::span<const int32_t> suffix = tokens.subspan(size_t(size - n));
    // Occurrences that end before the suffix itself does, most recent first; something must follow them.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      // Copied as LZ77 copies: a source that reaches the end goes on into the draft itself, so a loop of
      // period p (the occurrence p tokens back) drafts max_tokens tokens, not p.
      const int64_t from = start + n;
      std::vector<int32_t> draft;
      draft.reserve(size_t(max_tokens));
      for (int64_t source = from; source < from + max_tokens; ++source) {
        draft.push_back(source < size ? tokens[size_t(source)] : draft[size_t(source - size)]);
      }
      return draft;
    }
  }
  return {};
}

}  // namespace lockstep
