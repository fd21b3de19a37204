// A check the tool-call parser tests share: streaming a model's text in pieces of each of `steps` bytes
// through ToolStreamStep gives deltas that add up to ParseToolOutput's answer for the whole text (content,
// each call's id, name and arguments, and "called").
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_calls.h"

namespace lockstep::server::testing {

inline void ExpectStreamedLikeWhole(const ToolSpec& spec, const std::string& text,
                                    std::initializer_list<size_t> steps) {
  const ToolOutput whole = ParseToolOutput(spec, text, "seed", false);
  for (size_t step : steps) {
    std::string content;
    nlohmann::json calls = nlohmann::json::array();
    bool called = false;
    for (size_t at = 0; at < text.size();) {
      const size_t next = std::min(text.size(), at + step);
      const ToolStreamDelta d =
          ToolStreamStep(spec, std::string_view(text).substr(0, at), std::string_view(text).substr(0, next),
                         at == 0, next == text.size(), "seed", false);
      content += d.content;
      if (d.tool_calls.is_array()) {
        for (const auto& c : d.tool_calls) calls.push_back(c);
      }
      called = d.called;
      at = next;
    }
    EXPECT_EQ(called, !whole.calls.empty()) << step << ": " << text;
    EXPECT_EQ(content, whole.content.value_or("")) << step << ": " << text;
    ASSERT_EQ(calls.size(), whole.calls.size()) << step << ": " << text;
    for (size_t k = 0; k < calls.size(); ++k) {
      EXPECT_EQ(calls[k]["id"], whole.calls[k].id) << step << ": " << text;
      EXPECT_EQ(calls[k]["function"]["name"], whole.calls[k].name) << step << ": " << text;
      EXPECT_EQ(calls[k]["function"]["arguments"], whole.calls[k].arguments) << step << ": " << text;
    }
  }
}

}  // namespace lockstep::server::testing
