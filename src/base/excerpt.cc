#include "base/excerpt.h"

namespace lockstep {

std::string Excerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // inside a character
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace lockstep
