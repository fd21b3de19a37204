// UTF-8 helpers: validation and U+FFFD replacement, including prefix stability (streamed == whole).
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <random>

namespace lockstep {
namespace {

constexpr const char* kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, FindInvalid) {
  EXPECT_EQ(utf8::FindInvalid("héllo 🦙"), std::string::npos);
  EXPECT_EQ(utf8::FindInvalid(std::string_view("ab\x80", 3)), 2u);
  EXPECT_EQ(utf8::FindInvalid("\xC0\x80"), 0u);          // overlong
  EXPECT_EQ(utf8::FindInvalid("a\xED\xA0\x80"), 1u);     // surrogate
  EXPECT_EQ(utf8::FindInvalid("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8::FindInvalid("\xE2\x96"), 0u);          // truncated
}

TEST(Utf8Test, ReplacesMaximalSubparts) {
  EXPECT_EQ(utf8::Sanitize("a\xFF"
                           "b"),
            std::string("a") + kFffd + "b");
  EXPECT_EQ(utf8::Sanitize("\xE2\x96"
                           "x"),
            std::string(kFffd) + "x");  // one U+FFFD for the cut sequence
  EXPECT_EQ(utf8::Sanitize("\xF0\x9F\xA6"), kFffd);
  EXPECT_EQ(utf8::Sanitize("\xC0\xAF"), std::string(kFffd) + kFffd);
  EXPECT_EQ(utf8::Sanitize("\xED\xA0\x80"), std::string(kFffd) + kFffd + kFffd);
}

TEST(Utf8Test, HoldsIncompleteTailUnlessFinal) {
  std::string out;
  EXPECT_EQ(utf8::ConsumeValid("ab\xF0\x9F", false, &out), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(utf8::ConsumeValid("ab\xF0\x9F", true, &out), 4u);
  EXPECT_EQ(out, std::string("ab") + kFffd);
}

TEST(Utf8Test, StreamedEqualsWholeForRandomBytes) {
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(std::uniform_int_distribution<int>(0, 16)(rng), '\0');
    for (char& c : bytes) {
      // Bias toward bytes that start or continue multi-byte sequences.
      c = static_cast<char>(std::uniform_int_distribution<int>(0, 3)(rng) == 0
                                ? std::uniform_int_distribution<int>(0, 255)(rng)
                                : std::uniform_int_distribution<int>(0x80, 0xF4)(rng));
    }
    const std::string whole = utf8::Sanitize(bytes);
    ASSERT_EQ(utf8::FindInvalid(whole), std::string::npos);
    std::string pending;
    std::string streamed;
    for (char c : bytes) {
      pending += c;
      pending.erase(0, utf8::ConsumeValid(pending, false, &streamed));
    }
    utf8::ConsumeValid(pending, true, &streamed);
    EXPECT_EQ(streamed, whole);
  }
}

}  // namespace
}  // namespace lockstep
