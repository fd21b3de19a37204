#include "client/svg_check.h"

#include <vector>

namespace lockstep::testing {

std::string CheckSvg(const std::string& svg) {
  if (svg.find("<svg") == std::string::npos) return "no <svg> element";
  std::vector<std::string> stack;
  size_t pos = 0;
  bool root_seen = false;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (stack.empty()) {
      if (root_seen || name != "svg") return "root element is not a single <svg>";
      root_seen = true;
    }
    if (tag.back() != '/') stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  for (size_t i = 0; (i = svg.find('&', i)) != std::string::npos; ++i) {
    const size_t semi = svg.find(';', i);
    if (semi == std::string::npos || semi - i > 6) return "raw '&' at " + std::to_string(i);
  }
  return "";
}

}  // namespace lockstep::testing
