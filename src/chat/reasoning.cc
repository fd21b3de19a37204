#include "chat/reasoning.h"

#include <algorithm>

#include "chat/whitespace.h"

namespace lockstep::chat {
namespace {

// The length of the longest end of `text` that begins `tag` without being all of it: a tag still arriving.
size_t PartialTag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

std::optional<ReasoningFormat> ParseReasoningFormat(std::string_view name) {
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "deepseek") return ReasoningFormat::kDeepSeek;
  if (name == "auto") return ReasoningFormat::kAuto;
  return std::nullopt;
}

std::optional<ReasoningTags> TemplateReasoningTags(std::string_view template_source) {
  for (const ReasoningTags& tags : {kMistralThinkTags, kGemma4ThoughtTags, kThinkTags}) {
    if (template_source.find(tags.open) != std::string_view::npos) return tags;
  }
  return std::nullopt;
}

std::optional<ReasoningTags> ReplyReasoningTags(ReasoningFormat format,
                                                std::optional<ReasoningTags> template_tags) {
  switch (format) {
    case ReasoningFormat::kNone:
      return std::nullopt;
    case ReasoningFormat::kDeepSeek:
      return template_tags.value_or(kThinkTags);
    case ReasoningFormat::kAuto:
      return template_tags;
  }
  return std::nullopt;
}

bool PromptOpensReasoning(std::string_view prompt, const ReasoningTags& tags) {
  std::string_view s = prompt;
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s.ends_with(tags.open);
}

ReasoningSplit SplitReasoning(std::string_view text, const ReasoningTags& tags, bool opened, bool final) {
  ReasoningSplit out;
  std::string_view inner = text;
  if (!opened) {
    const std::string_view rest = TrimLeft(text);
    if (rest.starts_with(tags.open)) {
      inner = rest.substr(tags.open.size());
    } else if (!final && tags.open.starts_with(rest)) {
      return out;  // only whitespace so far, or the opening tag still arriving
    } else {
      out.content = std::string(text);
      return out;
    }
  }
  const size_t close = inner.find(tags.close);
  if (close == std::string_view::npos) {
    if (!final) inner.remove_suffix(PartialTag(inner, tags.close));
    out.reasoning = std::string(Trim(inner));
    return out;
  }
  out.reasoning = std::string(Trim(inner.substr(0, close)));
  out.content = std::string(TrimLeft(inner.substr(close + tags.close.size())));
  return out;
}

ReasoningTokenCounter::ReasoningTokenCounter(const ReasoningTags& tags, bool opened)
    : tags_(tags), state_(opened ? State::kInside : State::kUndecided) {}

void ReasoningTokenCounter::AddToken(std::string_view text) {
  if (state_ == State::kDone) return;
  ++tokens_;
  if (state_ == State::kUndecided) {
    const std::string_view rest = TrimLeft(text);
    if (rest.size() < tags_.open.size() && tags_.open.starts_with(rest)) return;  // "" too
    if (!rest.starts_with(tags_.open)) {
      state_ = State::kDone;
      tokens_ = 0;
      return;
    }
    state_ = State::kInside;
    scanned_ = text.size() - rest.size() + tags_.open.size();
  }
  if (text.find(tags_.close, scanned_) != std::string_view::npos) {
    state_ = State::kDone;
    return;
  }
  // A tag arriving in pieces: keep its possible start for the next token.
  const size_t keep = tags_.close.size() - 1;
  if (text.size() > scanned_ + keep) scanned_ = text.size() - keep;
}

}  // namespace lockstep::chat
