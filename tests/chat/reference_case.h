// One case of the golden files testdata/make_*_goldens.py write (the reference renderer's output for one
// template, conversation and add_generation_prompt): a rendering must raise where the reference raised, with
// the reference's message in its own, and otherwise equal the reference byte for byte. Templates that show
// the date (strftime_now) render today here and a fixed day in the reference: ReadTodayAs maps one to the
// other.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "base/status.h"

namespace lockstep::chat::testing {

// `text` with today's date (UTC, as strftime_now gives it) in the formats real templates use ("2026-01-02",
// "January 02, 2026", "02 Jan 2026") replaced by `day` ("YYYY-MM-DD", the goldens' "now") in the same format.
inline std::string ReadTodayAs(std::string text, const std::string& day) {
  const std::time_t now = std::time(nullptr);
  std::tm today{};
  gmtime_r(&now, &today);
  std::tm fixed{};
  if (std::sscanf(day.c_str(), "%d-%d-%d", &fixed.tm_year, &fixed.tm_mon, &fixed.tm_mday) != 3) return text;
  fixed.tm_year -= 1900;
  fixed.tm_mon -= 1;
  for (const char* format : {"%Y-%m-%d", "%B %d, %Y", "%d %b %Y"}) {
    char from[64];
    char to[64];
    const size_t n = std::strftime(from, sizeof(from), format, &today);
    const size_t m = std::strftime(to, sizeof(to), format, &fixed);
    for (size_t at = text.find(from, 0, n); n > 0 && at != std::string::npos;
         at = text.find(from, at + m, n)) {
      text.replace(at, n, to, m);
    }
  }
  return text;
}

// `Json` is nlohmann::json or nlohmann::ordered_json (the tool goldens keep key order).
template <typename Json>
void ExpectLikeTheReference(const Result<std::string>& out, const Json& golden_case) {
  const std::string where = golden_case["family"].template get<std::string>() + " conversation " +
                            golden_case["conversation"].dump() +
                            " gen=" + golden_case["add_generation_prompt"].dump();
  if (golden_case.contains("error")) {
    ASSERT_FALSE(out.ok()) << where << " should raise; rendered:\n" << *out;
    EXPECT_NE(out.status().message().find(golden_case["error"].template get<std::string>()),
              std::string::npos)
        << where << ": " << out.status().message();
  } else {
    ASSERT_TRUE(out.ok()) << where << ": " << out.status().message();
    EXPECT_EQ(*out, golden_case["expected"].template get<std::string>()) << where;
  }
}

}  // namespace lockstep::chat::testing
