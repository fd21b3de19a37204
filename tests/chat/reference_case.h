// One case of the golden files testdata/make_*_goldens.py write (the reference renderer's output for one
// template, conversation and add_generation_prompt): a rendering must raise where the reference raised, with
// the reference's message in its own, and otherwise equal the reference byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "base/status.h"

namespace lockstep::chat::testing {

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
