#include "grammar/json_stops.h"

#include "base/status.h"
#include "grammar/grammar.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {

std::set<uint32_t> StopFirsts(const std::vector<std::string>& stops) {
  std::set<uint32_t> firsts;
  for (const std::string& stop : stops) {
    LOCKSTEP_CHECK(!stop.empty());
    size_t p = 0;
    const uint32_t first = utf8::DecodeAt(stop, &p);
    const bool ascii_ok =
        first >= 0x80 || (first > 0x20 && first != 0x7F &&
                          !((first >= '0' && first <= '9') || (first >= 'a' && first <= 'z') ||
                            (first >= 'A' && first <= 'Z')) &&
                          std::string_view("{}[]:,\"\\+-./").find(char(first)) == std::string::npos);
    LOCKSTEP_CHECK(ascii_ok && first <= 0xFFFF);
    for (p = 0; p < stop.size();) {
      const uint32_t c = utf8::DecodeAt(stop, &p);
      LOCKSTEP_CHECK(c >= 0x20 && c != '"' && c != '\\' && c != 0x7F);
    }
    firsts.insert(first);
  }
  return firsts;
}

std::string EscapeCodepoints(std::string_view json, const std::set<uint32_t>& escaped) {
  if (escaped.empty()) return std::string(json);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t p = 0; p < json.size();) {
    const size_t at = p;
    const uint32_t c = utf8::DecodeAt(json, &p);
    if (escaped.count(c) != 0) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += hex[(c >> shift) & 15];
    } else {
      out.append(json.substr(at, p - at));
    }
  }
  return out;
}

std::string ClassBody(const std::set<uint32_t>& codepoints) {
  std::string out;
  for (uint32_t c : codepoints) out += GbnfClassChar(c);
  return out;
}

}  // namespace lockstep::grammar
