#include "server/tool_call_gemma4.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/request_fields.h"
#include "server/tool_call_parts.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;
using tool_parts::SkipSpace;
using tool_parts::StartsWith;

// Reads one Gemma value at s[*p] (after whitespace) into *out, *p set past it; false when none is there
// (malformed, cut short, or nested deeper than kMaxJsonDepth).
bool ReadValue(std::string_view s, size_t* p, int depth, Ordered* out);

// A key: <|"|>text<|"|> or bare text up to ':'; *p set past the ':'.
bool ReadKey(std::string_view s, size_t* p, std::string* key) {
  size_t at = SkipSpace(s, *p);
  if (StartsWith(s.substr(at), kGemma4Quote)) {
    const size_t close = s.find(kGemma4Quote, at + kGemma4Quote.size());
    if (close == std::string_view::npos) return false;
    *key = std::string(s.substr(at + kGemma4Quote.size(), close - at - kGemma4Quote.size()));
    at = SkipSpace(s, close + kGemma4Quote.size());
  } else {
    const size_t colon = s.find_first_of(":,{}[]", at);
    if (colon == std::string_view::npos || s[colon] != ':') return false;
    *key = std::string(tool_parts::TrimSpace(s.substr(at, colon - at)));
    if (key->empty()) return false;
    at = colon;
  }
  if (at >= s.size() || s[at] != ':') return false;
  *p = at + 1;
  return true;
}

// {KEY:VALUE,...} or [VALUE,...] at s[*p] (its opening bracket).
bool ReadContainer(std::string_view s, size_t* p, int depth, Ordered* out) {
  const bool object = s[*p] == '{';
  const char close = object ? '}' : ']';
  *out = object ? Ordered::object() : Ordered::array();
  size_t at = SkipSpace(s, *p + 1);
  if (at < s.size() && s[at] == close) {
    *p = at + 1;
    return true;
  }
  while (true) {
    std::string key;
    if (object && !ReadKey(s, &at, &key)) return false;
    Ordered value;
    if (!ReadValue(s, &at, depth + 1, &value)) return false;
    if (object) {
      (*out)[key] = std::move(value);
    } else {
      out->push_back(std::move(value));
    }
    at = SkipSpace(s, at);
    if (at >= s.size()) return false;
    if (s[at] == close) {
      *p = at + 1;
      return true;
    }
    if (s[at] != ',') return false;
    ++at;
  }
}

bool ReadValue(std::string_view s, size_t* p, int depth, Ordered* out) {
  if (depth > kMaxJsonDepth) return false;
  const size_t at = SkipSpace(s, *p);
  if (at >= s.size()) return false;
  if (StartsWith(s.substr(at), kGemma4Quote)) {
    const size_t close = s.find(kGemma4Quote, at + kGemma4Quote.size());
    if (close == std::string_view::npos) return false;
    *out = std::string(s.substr(at + kGemma4Quote.size(), close - at - kGemma4Quote.size()));
    *p = close + kGemma4Quote.size();
    return true;
  }
  if (s[at] == '{' || s[at] == '[') {
    *p = at;
    return ReadContainer(s, p, depth, out);
  }
  // A scalar: up to the next separator or marker.
  size_t end = s.find_first_of(",}]<", at);
  if (end == std::string_view::npos) return false;  // cut short: the value may go on
  const std::string_view word = tool_parts::TrimSpace(s.substr(at, end - at));
  // Not a word: a missing comma ("1 b:2") or nothing.
  if (word.empty() || word.find_first_of(": \t\n\r") != std::string_view::npos) return false;
  if (word == "null" || word == "None") {
    *out = nullptr;
  } else if (word == "true" || word == "True" || word == "false" || word == "False") {
    *out = word == "true" || word == "True";
  } else {
    const Ordered number = Ordered::parse(word, nullptr, /*allow_exceptions=*/false);
    *out = !number.is_discarded() && number.is_number() ? number : Ordered(std::string(word));
  }
  *p = end;
  return true;
}

}  // namespace

bool Gemma4ToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                         std::string_view* after) {
  constexpr std::string_view kCall = "call:";
  if (!StartsWith(text, kGemma4CallBegin)) return false;
  std::vector<ToolCall> found;
  size_t p = 0;
  while (StartsWith(text.substr(p), kGemma4CallBegin)) {
    const size_t head = SkipSpace(text, p + kGemma4CallBegin.size());
    const size_t brace = text.find('{', head);
    if (brace == std::string_view::npos) {  // cut inside the call's head
      p = text.size();
      break;
    }
    std::string_view name = tool_parts::TrimSpace(text.substr(head, brace - head));
    if (StartsWith(name, kCall)) name = tool_parts::TrimSpace(name.substr(kCall.size()));
    if (tool_parts::ToolIndex(spec, name) == std::string_view::npos) return false;
    size_t end = brace;
    Ordered arguments;
    if (!ReadContainer(text, &end, 0, &arguments)) {
      if (text.find(kGemma4CallEnd, brace) != std::string_view::npos) return false;  // malformed
      p = text.size();  // cut inside the arguments
      break;
    }
    p = tool_parts::PastEndMarker(text, SkipSpace(text, end), kGemma4CallEnd);
    if (p == std::string_view::npos) return false;  // something else follows the arguments
    found.push_back({"", std::string(name), tool_parts::ArgumentsText(arguments)});
  }
  if (found.empty()) return false;
  *after = text.substr(p);
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
