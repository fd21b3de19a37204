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

bool SplitsReasoning(ReasoningFormat format, std::string_view template_source) {
  switch (format) {
    case ReasoningFormat::kNone:
      return false;
    case ReasoningFormat::kDeepSeek:
      return true;
    case ReasoningFormat::kAuto:
      return template_source.find(kReasoningOpen) != std::string_view::npos;
  }
  return false;
}

bool PromptOpensReasoning(std::string_view prompt) {
  std::string_view s = prompt;
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s.size() >= kReasoningOpen.size() && s.substr(s.size() - kReasoningOpen.size()) == kReasoningOpen;
}

ReasoningSplit SplitReasoning(std::string_view text, bool opened, bool final) {
  ReasoningSplit out;
  std::string_view inner = text;
  if (!opened) {
    const std::string_view rest = TrimLeft(text);
    if (rest.substr(0, kReasoningOpen.size()) == kReasoningOpen) {
      inner = rest.substr(kReasoningOpen.size());
    } else if (!final && kReasoningOpen.substr(0, rest.size()) == rest) {
      return out;  // only whitespace so far, or the opening tag still arriving
    } else {
      out.content = std::string(text);
      return out;
    }
  }
  const size_t close = inner.find(kReasoningClose);
  if (close == std::string_view::npos) {
    if (!final) inner.remove_suffix(PartialTag(inner, kReasoningClose));
    out.reasoning = std::string(Trim(inner));
    return out;
  }
  out.reasoning = std::string(Trim(inner.substr(0, close)));
  out.content = std::string(TrimLeft(inner.substr(close + kReasoningClose.size())));
  return out;
}

ReasoningTokenCounter::ReasoningTokenCounter(bool opened)
    : state_(opened ? State::kInside : State::kUndecided) {}

void ReasoningTokenCounter::AddToken(std::string_view text) {
  if (state_ == State::kDone) return;
  ++tokens_;
  if (state_ == State::kUndecided) {
    const std::string_view rest = TrimLeft(text);
    if (rest.size() < kReasoningOpen.size() && kReasoningOpen.starts_with(rest)) return;  // "" too
    if (!rest.starts_with(kReasoningOpen)) {
      state_ = State::kDone;
      tokens_ = 0;
      return;
    }
    state_ = State::kInside;
    scanned_ = text.size() - rest.size() + kReasoningOpen.size();
  }
  if (text.find(kReasoningClose, scanned_) != std::string_view::npos) {
    state_ = State::kDone;
    return;
  }
  // A tag arriving in pieces: keep its possible start for the next token.
  const size_t keep = kReasoningClose.size() - 1;
  if (text.size() > scanned_ + keep) scanned_ = text.size() - keep;
}

}  // namespace lockstep::chat
