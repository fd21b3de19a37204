// Unicode facts for WordPiece (BERT) normalisation, from the tables that scripts/gen_unicode_tables.py
// generates (tokenizer/unicode_tables.cc): the first code point of a canonical decomposition (NFD; "é" ->
// "e", which strips accents the way llama.cpp's WordPiece pre-processing does), the simple lower-case
// mapping, and the character classes BERT splits on. Pure functions over constant tables, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::unicode {

// The first code point of cp's canonical decomposition (cp itself when it has none).
uint32_t NfdFirst(uint32_t cp);
// The simple lower-case mapping of cp (cp itself when it has none).
uint32_t ToLower(uint32_t cp);
// White_Space: TAB..CR, space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000.
bool IsWhitespace(uint32_t cp);
// General category P* (punctuation).
bool IsPunctuation(uint32_t cp);
// General category Cc, Cf, Co or Cs (not Cn, unassigned).
bool IsControl(uint32_t cp);
// The CJK ideograph blocks BERT puts spaces around (as Hugging Face's BasicTokenizer, including its
// 0x2B920 start of extension E/F).
bool IsCjkIdeograph(uint32_t cp);

namespace tables {
struct CategoryRun {
  uint32_t first;
  uint8_t cls;  // 0 other, 1 punctuation, 2 control
};
struct CodePointPair {
  uint32_t from, to;
};
struct NfdRun {
  uint32_t first, last, to;
};
extern const CategoryRun kCategoryRuns[];
extern const size_t kCategoryRunCount;
extern const CodePointPair kLowerCase[];
extern const size_t kLowerCaseCount;
extern const NfdRun kNfdFirst[];
extern const size_t kNfdFirstCount;
}  // namespace tables

}  // namespace lockstep::unicode
