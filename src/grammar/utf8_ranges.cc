#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace lockstep::grammar {
namespace {

int Encode(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = uint8_t(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = uint8_t(0xC0 | (cp >> 6));
    out[1] = uint8_t(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = uint8_t(0xE0 | (cp >> 12));
    out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[2] = uint8_t(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = uint8_t(0xF0 | (cp >> 18));
  out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
  out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
  out[3] = uint8_t(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated) {
  for (CodepointRange& r : ranges) r.last = std::min(r.last, kMaxCodepoint);
  std::erase_if(ranges, [](const CodepointRange& r) { return r.first > r.last; });
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.first < b.first; });
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CodepointRange> complement;
    uint32_t next = 0;
    for (const CodepointRange& r : merged) {
      if (r.first > next) complement.push_back({next, r.first - 1});
      next = r.last + 1;
    }
    if (next <= kMaxCodepoint) complement.push_back({next, kMaxCodepoint});
    merged = std::move(complement);
  }
  // Cut out the surrogates (not encodable in UTF-8).
  std::vector<CodepointRange> out;
  for (const CodepointRange& r : merged) {
    if (r.last < 0xD800 || r.first > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.first < 0xD800) out.push_back({r.first, 0xD7FF});
    if (r.last > 0xDFFF) out.push_back({0xE000, r.last});
  }
  return out;
}

void Utf8Sequences(CodepointRange range, std::vector<Utf8Sequence>* out) {
  std::vector<CodepointRange> todo = {range};
  while (!todo.empty()) {
    CodepointRange r = todo.back();
    todo.pop_back();
    while (true) {
      if (r.first > r.last) break;
      if (r.first < 0xE000 && r.last > 0xD7FF) {  // overlaps the surrogates
        if (r.last > 0xDFFF) todo.push_back({0xE000, r.last});
        if (r.first >= 0xD800) break;
        r.last = 0xD7FF;
        continue;
      }
      bool split = false;
      for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {  // one encoding length per piece
        if (r.first <= max && max < r.last) {
          todo.push_back({max + 1, r.last});
          r.last = max;
          split = true;
          break;
        }
      }
      if (split) continue;
      if (r.last < 0x80) {
        out->push_back({ByteRange{uint8_t(r.first), uint8_t(r.last)}});
        break;
      }
      for (int i = 1; i < 4 && !split; ++i) {  // continuation bytes must span full ranges below a difference
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((r.first & ~m) != (r.last & ~m)) {
          if ((r.first & m) != 0) {
            todo.push_back({(r.first | m) + 1, r.last});
            r.last = r.first | m;
            split = true;
          } else if ((r.last & m) != m) {
            todo.push_back({r.last & ~m, r.last});
            r.last = (r.last & ~m) - 1;
            split = true;
          }
        }
      }
      if (split) continue;
      uint8_t a[4], b[4];
      const int n = Encode(r.first, a);
      Encode(r.last, b);
      Utf8Sequence seq;
      for (int k = 0; k < n; ++k) seq.push_back({a[k], b[k]});
      out->push_back(std::move(seq));
      break;
    }
  }
}

}  // namespace lockstep::grammar
