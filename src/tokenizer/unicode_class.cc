#include "tokenizer/unicode_class.h"

#include <algorithm>

namespace lockstep::unicode {
namespace {

uint8_t Class(uint32_t cp) {
  const tables::CategoryRun* begin = tables::kCategoryRuns;
  const tables::CategoryRun* end = begin + tables::kCategoryRunCount;
  // The last run starting at or before cp.
  const auto* it =
      std::upper_bound(begin, end, cp, [](uint32_t v, const tables::CategoryRun& r) { return v < r.first; });
  return it == begin ? 0 : (it - 1)->cls;
}

}  // namespace

uint32_t NfdFirst(uint32_t cp) {
  const tables::NfdRun* begin = tables::kNfdFirst;
  const tables::NfdRun* end = begin + tables::kNfdFirstCount;
  const auto* it =
      std::upper_bound(begin, end, cp, [](uint32_t v, const tables::NfdRun& r) { return v < r.first; });
  if (it == begin) return cp;
  --it;
  return cp <= it->last ? it->to : cp;
}

uint32_t ToLower(uint32_t cp) {
  const tables::CodePointPair* begin = tables::kLowerCase;
  const tables::CodePointPair* end = begin + tables::kLowerCaseCount;
  const auto* it =
      std::lower_bound(begin, end, cp, [](const tables::CodePointPair& p, uint32_t v) { return p.from < v; });
  return it != end && it->from == cp ? it->to : cp;
}

bool IsWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool IsPunctuation(uint32_t cp) { return Class(cp) == 1; }
bool IsControl(uint32_t cp) { return Class(cp) == 2; }

bool IsCjkIdeograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace lockstep::unicode
