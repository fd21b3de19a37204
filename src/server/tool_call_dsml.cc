#include "server/tool_call_dsml.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_call_parts.h"

namespace lockstep::server {
namespace {

constexpr std::string_view kInvokeOpen = "<｜DSML｜invoke name=\"";
constexpr std::string_view kInvokeClose = "</｜DSML｜invoke>";
constexpr std::string_view kDsmlParameterOpen = "<｜DSML｜parameter name=\"";
constexpr std::string_view kDsmlParameterClose = "</｜DSML｜parameter>";
constexpr std::string_view kStringTrue = "string=\"true\"";

// The quoted attribute value at the start of `s` (after an opening `name="`): up to the closing quote, with
// *rest set past the tag's '>'. False when the tag does not close.
bool TagAttribute(std::string_view s, std::string_view* value, std::string_view* attributes,
                  std::string_view* rest) {
  const size_t quote = s.find('"');
  if (quote == std::string_view::npos) return false;
  const size_t close = s.find('>', quote);
  if (close == std::string_view::npos) return false;
  *value = s.substr(0, quote);
  *attributes = s.substr(quote + 1, close - quote - 1);
  *rest = s.substr(close + 1);
  return true;
}

// Whether `rest` is the start of one of `tags`, not all of it: the output was cut inside that tag.
bool CutInside(std::string_view rest, std::initializer_list<std::string_view> tags) {
  for (std::string_view tag : tags) {
    if (rest.size() < tag.size() && tag.starts_with(rest)) return true;
  }
  return false;
}

constexpr size_t npos = std::string_view::npos;

}  // namespace

bool DsmlToolCallsFrom(const ToolSpec& spec, std::string_view text, std::vector<ToolCall>* calls,
                       std::string_view* after) {
  using tool_parts::StartsWith;
  using tool_parts::TrimSpace;
  const bool v4 = StartsWith(text, kDsmlToolCallsBegin);
  if (!v4 && !StartsWith(text, kDsmlFunctionCallsBegin)) return false;
  const std::string_view block_close = v4 ? "</｜DSML｜tool_calls>" : "</｜DSML｜function_calls>";
  std::vector<ToolCall> found;
  std::string_view rest =
      TrimSpace(text.substr(v4 ? kDsmlToolCallsBegin.size() : kDsmlFunctionCallsBegin.size()));
  while (StartsWith(rest, kInvokeOpen)) {
    std::string_view name, unused;
    if (!TagAttribute(rest.substr(kInvokeOpen.size()), &name, &unused, &rest)) {
      rest = std::string_view();  // cut inside the tag: the calls before it stand
      break;
    }
    const size_t tool = tool_parts::ToolIndex(spec, name);
    if (tool == std::string_view::npos) return false;
    nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
    while (StartsWith(rest = TrimSpace(rest), kDsmlParameterOpen)) {
      std::string_view key, attributes;
      if (!TagAttribute(rest.substr(kDsmlParameterOpen.size()), &key, &attributes, &rest)) {
        rest = std::string_view();  // cut inside the tag: the parameters before it stand
        break;
      }
      if (key.empty()) return false;
      const size_t value_end = rest.find(kDsmlParameterClose);
      std::string_view value = rest.substr(0, value_end);
      for (size_t n = std::min(value.size(), kDsmlParameterClose.size() - 1); value_end == npos && n > 0;
           --n) {
        if (kDsmlParameterClose.starts_with(value.substr(value.size() - n))) {  // cut inside the closing tag
          value.remove_suffix(n);
          break;
        }
      }
      if (attributes.find(kStringTrue) != std::string_view::npos) {
        arguments[std::string(key)] = std::string(value);
      } else {
        const auto types = tool_parts::ParameterTypes(spec.parameters[tool], std::string(key));
        arguments[std::string(key)] = tool_parts::TypedValue(value, types, /*json=*/true);
      }
      rest = value_end == std::string_view::npos ? std::string_view()
                                                 : rest.substr(value_end + kDsmlParameterClose.size());
    }
    if (CutInside(rest, {kDsmlParameterOpen, kInvokeClose})) rest = std::string_view();
    if (!rest.empty() && !StartsWith(rest, kInvokeClose)) return false;  // something else inside the invoke
    found.push_back({"", std::string(name), tool_parts::ArgumentsText(arguments)});
    if (rest.empty()) break;  // cut short
    rest = TrimSpace(rest.substr(kInvokeClose.size()));
  }
  if (found.empty()) return false;
  if (CutInside(rest, {kInvokeOpen, block_close})) rest = std::string_view();
  if (!rest.empty()) {
    if (!StartsWith(rest, block_close)) return false;  // not another invoke, nor the block's end
    rest.remove_prefix(block_close.size());
  }
  *after = rest;
  calls->insert(calls->end(), found.begin(), found.end());
  return true;
}

}  // namespace lockstep::server
