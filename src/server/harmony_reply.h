// gpt-oss's Harmony replies (chat/harmony.h) in the chat API's terms: the special tokens a request keeps in
// the generated text so that the split sees them, and a choice's reasoning, content and tool calls, whole
// and as stream deltas. Used instead of <think> splitting and the tool-call formats of server/tool_calls.h
// when the chat template is Harmony (OpenAiRequest::harmony). Calls are messages to functions.NAME with NAME
// a declared tool (none under tool_choice "none"; forced choices in the kHarmony syntax, whose grammar writes
// such a message, server/tool_grammar.h; in the JSON syntax their replies are not Harmony and are parsed by
// server/tool_calls.h). Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

// The control tokens of `tokenizer` among Harmony's special tokens (chat::kHarmonyTokens), sorted
// (Request::preserved_tokens).
std::vector<int32_t> HarmonyTokens(const Tokenizer& tokenizer);

struct HarmonyReply {
  std::optional<std::string> reasoning;  // the analysis messages; nullopt when none
  ToolOutput output;                     // content (null when empty beside calls) and calls, with ids
};

// A finished choice's text. `id_seed` and `mistral_ids` make the call ids (ToolCallId).
HarmonyReply HarmonyWhole(const ToolSpec& spec, std::string_view text, const std::string& id_seed,
                          bool mistral_ids);

// What one stream chunk carries as the choice's text grows from `before` to `after` (`last`: `after` is the
// whole reply): a reasoning delta, a content delta and each call once its message has ended (whole, with its
// index and id). The concatenated deltas equal HarmonyWhole's answer; `tool.called` (last only): the reply
// made calls.
struct HarmonyDelta {
  std::string reasoning;
  ToolStreamDelta tool;
};
HarmonyDelta HarmonyStreamStep(const ToolSpec& spec, std::string_view before, std::string_view after,
                               bool last, const std::string& id_seed, bool mistral_ids);

}  // namespace lockstep::server
