#include "chat/harmony.h"

#include <algorithm>

#include "chat/whitespace.h"

namespace lockstep::chat {
namespace {

constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kCall = "<|call|>";
constexpr std::string_view kReturn = "<|return|>";
constexpr std::string_view kFunctions = "functions.";

// A header longer than this is not one (a reply that is not Harmony, or a broken one).
constexpr size_t kMaxHeader = 256;

// The length of the longest end of `text` that begins one of Harmony's special tokens without being all of
// it: a token that may still be arriving as text.
size_t PartialToken(std::string_view text) {
  size_t best = 0;
  for (std::string_view token : kHarmonyTokens) {
    for (size_t n = std::min(text.size(), token.size() - 1); n > best; --n) {
      if (text.substr(text.size() - n) == token.substr(0, n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

struct Header {
  std::string_view channel;
  std::string_view recipient;
};

// A word of a header: up to a space or a special token.
std::string_view Word(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && !IsSpace(s[n]) && s.substr(n, 2) != "<|") ++n;
  return s.substr(0, n);
}

// Parses a header (the text before <|message|>): [<|start|>ROLE] then <|channel|>NAME, ` to=NAME`,
// `<|constrain|>TYPE` and, after the channel, a bare ` TYPE`, in any order. `partial`: `h` may stop anywhere
// inside one of these (a header still arriving). False when `h` is not (the start of) a header.
bool ParseHeader(std::string_view h, bool partial, Header* out) {
  // A header still arriving may end in the first bytes of its <|message|>: not the header's.
  if (h.size() > kMaxHeader + (partial ? kMessage.size() - 1 : 0)) return false;
  const auto arriving = [&](std::string_view rest) {  // all of `rest` may begin an element
    if (!partial) return false;
    for (std::string_view opener : {kChannel, kConstrain, kStart, kMessage, std::string_view("to=")}) {
      if (rest.size() < opener.size() && opener.substr(0, rest.size()) == rest) return true;
    }
    return false;
  };
  bool any = false, type = false;
  if (h.starts_with(kStart)) {
    h.remove_prefix(kStart.size());
    h.remove_prefix(Word(h).size());  // the role
    any = true;
  }
  while (!h.empty()) {
    if (IsSpace(h.front())) {
      h.remove_prefix(1);
    } else if (h.starts_with(kChannel)) {
      h.remove_prefix(kChannel.size());
      out->channel = Word(h);
      h.remove_prefix(out->channel.size());
      any = true;
    } else if (h.starts_with(kConstrain)) {
      h.remove_prefix(kConstrain.size());
      h.remove_prefix(Word(h).size());
      type = any = true;
    } else if (h.starts_with("to=")) {
      h.remove_prefix(3);
      out->recipient = Word(h);
      h.remove_prefix(out->recipient.size());
      any = true;
    } else if (arriving(h)) {
      return true;
    } else if (any && !out->channel.empty() && !type && h.substr(0, 2) != "<|") {
      h.remove_prefix(Word(h).size());  // ` json`
      type = true;
    } else {
      return false;
    }
  }
  return true;
}

// Where the message that starts at `from` ends: the first <|end|>, <|call|>, <|return|> or <|start|> (a next
// message whose end was left out); npos when none. `*skip`: the length of the end to skip (0 for <|start|>,
// which begins the next header).
size_t MessageEnd(std::string_view text, size_t from, size_t* skip) {
  for (size_t at = text.find("<|", from); at != std::string_view::npos; at = text.find("<|", at + 2)) {
    const std::string_view rest = text.substr(at);
    for (std::string_view token : {kEnd, kCall, kReturn}) {
      if (rest.starts_with(token)) {
        *skip = token.size();
        return at;
      }
    }
    if (rest.starts_with(kStart)) {
      *skip = 0;
      return at;
    }
  }
  return std::string_view::npos;
}

// Appends one message's text to reasoning or content; messages are separated by a blank line.
void Append(std::string& to, std::string_view text) {
  if (text.empty()) return;
  if (!to.empty()) to += "\n\n";
  to.append(text);
}

bool Declared(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool IsHarmonyTemplate(std::string_view template_source) {
  return template_source.find(kChannel) != std::string_view::npos &&
         template_source.find("<|start|>assistant") != std::string_view::npos;
}

HarmonySplit SplitHarmony(std::string_view text, const std::vector<std::string>& tool_names, bool final) {
  HarmonySplit out;
  size_t pos = 0;
  while (pos < text.size()) {
    const std::string_view rest = text.substr(pos);
    const size_t message = rest.find(kMessage);
    Header header;
    if (message == std::string_view::npos) {
      // A header still arriving waits; what cannot be one, or a reply that stopped inside one, is content.
      if (!final && ParseHeader(rest, /*partial=*/true, &header)) break;
      out.content.append(rest);
      break;
    }
    if (!ParseHeader(rest.substr(0, message), /*partial=*/false, &header)) {
      out.content.append(rest);  // not Harmony from here on
      break;
    }
    const size_t body = pos + message + kMessage.size();
    size_t skip = 0;
    const size_t end = MessageEnd(text, body, &skip);
    std::string_view text_of =
        text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
    const bool complete = end != std::string_view::npos || final;
    if (!complete) text_of.remove_suffix(PartialToken(text_of));
    const std::string_view recipient = header.recipient == "assistant" ? "" : header.recipient;
    if (recipient.starts_with(kFunctions) && Declared(tool_names, recipient.substr(kFunctions.size()))) {
      if (complete) {
        out.calls.push_back({std::string(recipient.substr(kFunctions.size())), std::string(Trim(text_of))});
      }
    } else if (header.channel == "analysis" && recipient.empty()) {
      if (!out.reasoning) out.reasoning.emplace();
      Append(*out.reasoning, text_of);
    } else {
      Append(out.content, text_of);
    }
    if (end == std::string_view::npos) break;
    pos = end + skip;
  }
  return out;
}

void HarmonyTokenCounter::AddToken(std::string_view text) {
  ++message_tokens_;
  while (true) {
    if (in_header_) {
      const size_t at = text.find(kMessage, scanned_);
      if (at == std::string_view::npos) break;
      Header header;
      const std::string_view h = text.substr(header_start_, at - header_start_);
      analysis_ = ParseHeader(h, /*partial=*/false, &header) && header.channel == "analysis" &&
                  (header.recipient.empty() || header.recipient == "assistant");
      in_header_ = false;
      scanned_ = at + kMessage.size();
      continue;
    }
    size_t skip = 0;
    const size_t end = MessageEnd(text, scanned_, &skip);
    if (end == std::string_view::npos) break;
    if (analysis_) tokens_ += message_tokens_;
    message_tokens_ = 0;
    in_header_ = true;
    analysis_ = false;
    header_start_ = scanned_ = end + skip;
  }
  // A special token arriving in pieces: keep its possible start for the next token.
  const size_t keep = kConstrain.size() - 1;  // the longest
  if (text.size() > scanned_ + keep) scanned_ = text.size() - keep;
}

}  // namespace lockstep::chat
