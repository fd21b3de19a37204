#include "engine/dry_breakers.h"

#include <cstdint>
#include <string_view>

#include "base/flag_range.h"

namespace lockstep {

const std::vector<std::string>& DefaultDryBreakers() {
  static const std::vector<std::string> breakers = {"\n", ":", "\"", "*"};
  return breakers;
}

std::string CutDryBreaker(std::string text) {
  if (text.size() <= kMaxDryBreakerBytes) return text;
  size_t cut = kMaxDryBreakerBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

namespace {

// The restart sequences of one breaker that token `id` (whose text is `word`) heads.
void AddRestartSequences(const Tokenizer& tokenizer, int32_t id, const std::string& word,
                         const std::string& breaker, DrySequenceBreakers& out) {
  if (word.find(breaker) != std::string::npos) return out.Add(id, {});
  // Every place where the word's end is a proper prefix of the breaker: the rest of it must follow.
  for (size_t pos = word.find(breaker[0]); pos != std::string::npos; pos = word.find(breaker[0], pos + 1)) {
    const size_t overlap = word.size() - pos;  // < breaker.size(), or the word would hold the breaker
    if (word.compare(pos, overlap, breaker, 0, overlap) != 0) continue;
    auto tail = tokenizer.Encode(std::string_view(breaker).substr(overlap), /*add_bos=*/false,
                                 /*parse_special=*/false);
    if (!tail.ok()) continue;  // the vocabulary cannot spell the rest
    if (tail->size() > kMaxDryTailTokens) tail->resize(kMaxDryTailTokens);
    out.Add(id, std::move(*tail));
  }
}

}  // namespace

std::shared_ptr<const DrySequenceBreakers> DryRestartSequences(const Tokenizer& tokenizer,
                                                               const std::vector<std::string>& breakers) {
  auto out = std::make_shared<DrySequenceBreakers>();
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string word = tokenizer.TokenBytes(id);
    if (word.empty()) continue;
    for (const std::string& breaker : breakers) {
      if (!breaker.empty()) AddRestartSequences(tokenizer, id, word, breaker, *out);
    }
  }
  return out;
}

Status CheckDryFlags(const DryParams& dry) {
  for (Status s : {CheckFlagRange(dry.multiplier, "--dry-multiplier", 0, 1e6, "from 0 (off) to 1e6"),
                   CheckFlagRange(dry.base, "--dry-base", 1, 1e6, "from 1 to 1e6"),
                   CheckFlagRange(dry.allowed_length, "--dry-allowed-length", 0, INT32_MAX, "0 or more"),
                   CheckFlagRange(dry.penalty_last_n, "--dry-penalty-last-n", -1, INT32_MAX,
                                  "-1 (the whole context) or more")}) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::vector<std::string>> DryBreakersFromFlags(const std::vector<std::string>& values) {
  if (values.empty()) return DefaultDryBreakers();
  if (values.size() > kMaxDryBreakers) {
    return InvalidArgument("--dry-sequence-breaker may be given at most " + std::to_string(kMaxDryBreakers) +
                           " times, got " + std::to_string(values.size()));
  }
  std::vector<std::string> breakers;
  if (values.size() == 1 && values[0] == "none") return breakers;
  for (const std::string& value : values) {
    if (!value.empty()) breakers.push_back(CutDryBreaker(value));
  }
  return breakers;
}

}  // namespace lockstep
