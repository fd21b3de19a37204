// The ASCII whitespace (space, tab, CR, LF) that reply parsing trims around reasoning and messages: the
// Python str.strip() set that templates and llama.cpp's parsers use, without Unicode spaces. Pure functions.
#pragma once

#include <string_view>

namespace lockstep::chat {

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

inline std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

inline std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace lockstep::chat
