#include "tokenizer/utf8.h"

namespace lockstep::utf8 {
namespace {

// For a lead byte: the sequence length (0 when the byte can never start a sequence) and the allowed range of
// the second byte (which excludes overlongs, surrogates and code points above U+10FFFF).
struct LeadInfo {
  int length;
  unsigned char second_lo;
  unsigned char second_hi;
};

LeadInfo Lead(unsigned char c) {
  if (c < 0x80) return {1, 0, 0};
  if (c < 0xC2) return {0, 0, 0};
  if (c < 0xE0) return {2, 0x80, 0xBF};
  if (c == 0xE0) return {3, 0xA0, 0xBF};
  if (c == 0xED) return {3, 0x80, 0x9F};
  if (c < 0xF0) return {3, 0x80, 0xBF};
  if (c == 0xF0) return {4, 0x90, 0xBF};
  if (c < 0xF4) return {4, 0x80, 0xBF};
  if (c == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

enum class Scan { kValid, kInvalid, kIncomplete };

// Examines the sequence at bytes[pos]. kValid: *len is its length. kInvalid: *len is the maximal invalid
// subpart (>= 1) to replace by one U+FFFD. kIncomplete: a valid prefix running into the end of `bytes`.
Scan ScanAt(std::string_view bytes, size_t pos, size_t* len) {
  const auto c = static_cast<unsigned char>(bytes[pos]);
  const LeadInfo info = Lead(c);
  if (info.length == 1) {
    *len = 1;
    return Scan::kValid;
  }
  if (info.length == 0) {
    *len = 1;
    return Scan::kInvalid;
  }
  for (int k = 1; k < info.length; ++k) {
    if (pos + k >= bytes.size()) {
      *len = bytes.size() - pos;
      return Scan::kIncomplete;
    }
    const auto b = static_cast<unsigned char>(bytes[pos + k]);
    const unsigned char lo = k == 1 ? info.second_lo : 0x80;
    const unsigned char hi = k == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) {
      *len = k;
      return Scan::kInvalid;
    }
  }
  *len = info.length;
  return Scan::kValid;
}

}  // namespace

size_t FindInvalid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t len = 0;
    if (ScanAt(text, pos, &len) != Scan::kValid) return pos;
    pos += len;
  }
  return std::string_view::npos;
}

uint32_t DecodeAt(std::string_view text, size_t* pos) {
  const auto c = static_cast<unsigned char>(text[*pos]);
  size_t len = SequenceLength(c);
  if (*pos + len > text.size()) len = 1;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[*pos + k]) & 0x3F);
  *pos += len;
  return cp;
}

void Append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t ConsumeValid(std::string_view bytes, bool final, std::string* out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t len = 0;
    switch (ScanAt(bytes, pos, &len)) {
      case Scan::kValid:
        out->append(bytes.substr(pos, len));
        break;
      case Scan::kInvalid:
        out->append(kReplacement);
        break;
      case Scan::kIncomplete:
        if (!final) return pos;
        out->append(kReplacement);
        break;
    }
    pos += len;
  }
  return pos;
}

std::string Sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  ConsumeValid(bytes, /*final=*/true, &out);
  return out;
}

}  // namespace lockstep::utf8
