// What every fuzz target shares, header-only: Require (a broken property aborts, which libFuzzer reports as
// a crash with the input that caused it), FuzzInput (a few typed values read off the front of the input),
// IsValidUtf8, NextCut (a text's stream pieces), and the grammar bounds the targets run at. The fixtures that
// need a model are in fuzz/tiny_model.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace lockstep::fuzz {

// The grammar bounds of every target that compiles or follows a grammar (grammar_fuzzer, and the API targets
// through the fixtures' GrammarCache): the server's code paths and refusals at a fraction of their cost
// under ASan. At the server's bounds (compiled size 16 M, mask and accept work 5 M each) an input compiling
// to just under 16 M took 7 s in grammar_fuzzer, one ran past the 10 s timeout of a long run, and masks near
// the bound held tgi_fuzzer to ~65 executions/s.
inline constexpr uint64_t kMaxCompiledSize = 1'000'000;      // 1/16 of the server's
inline constexpr uint64_t kMaxGrammarWork = 50'000;          // mask and accept work, 1/100 of the server's
inline constexpr uint64_t kMaxRequestGrammarWork = 500'000;  // a request's total, 1/100 of the server's

// Aborts with `what` when `ok` is false: a broken property of the code under test, not a bad input.
inline void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

// Reads the fuzz input as a few typed values, then the rest (FuzzedDataProvider-like, reduced to what the
// targets need).
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return (Byte() & 1) != 0; }
  std::string_view Rest() {
    const auto* p = reinterpret_cast<const char*>(data_ + pos_);
    const size_t n = size_ - pos_;
    pos_ = size_;
    return {p, n};
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// The next cut of a text streamed in pieces: `step` bytes after `at`, moved forward to a character boundary
// (a stream's deltas are whole characters).
inline size_t NextCut(std::string_view text, size_t at, size_t step) {
  size_t next = std::min(text.size(), at + step);
  while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
  return next;
}

// Well-formed UTF-8 (shortest forms, no surrogates, at most U+10FFFF), written out here so that the
// properties do not trust the code they check.
inline bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace lockstep::fuzz
