#include "server/harmony_reply.h"

#include "chat/harmony.h"

namespace lockstep::server {
namespace {

// The functions a reply may call: the declared tools (a forced choice's grammar writes the call in Harmony's
// form where the syntax is kHarmony, server/tool_grammar.h; in the JSON syntax its reply is not Harmony).
const std::vector<std::string>& Callable(const ToolSpec& spec) {
  static const std::vector<std::string> kNone;
  return spec.calls_possible() && (!spec.forced() || spec.syntax == ToolSyntax::kHarmony) ? spec.names
                                                                                          : kNone;
}

nlohmann::json CallDelta(const chat::HarmonyCall& call, size_t index, const std::string& id_seed,
                         bool mistral_ids) {
  return {{"index", index},
          {"id", ToolCallId(id_seed, index, mistral_ids)},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

}  // namespace

std::vector<int32_t> HarmonyTokens(const Tokenizer& tokenizer) {
  return tokenizer.ControlTokens(chat::kHarmonyTokens);
}

HarmonyReply HarmonyWhole(const ToolSpec& spec, std::string_view text, const std::string& id_seed,
                          bool mistral_ids) {
  chat::HarmonySplit split = chat::SplitHarmony(text, Callable(spec), /*final=*/true);
  HarmonyReply out;
  out.reasoning = std::move(split.reasoning);
  if (!split.content.empty() || split.calls.empty()) out.output.content = std::move(split.content);
  for (size_t k = 0; k < split.calls.size(); ++k) {
    out.output.calls.push_back({ToolCallId(id_seed, k, mistral_ids), std::move(split.calls[k].name),
                                std::move(split.calls[k].arguments)});
  }
  return out;
}

HarmonyDelta HarmonyStreamStep(const ToolSpec& spec, std::string_view before, std::string_view after,
                               bool last, const std::string& id_seed, bool mistral_ids) {
  const chat::HarmonySplit was = chat::SplitHarmony(before, Callable(spec), /*final=*/false);
  const chat::HarmonySplit now = chat::SplitHarmony(after, Callable(spec), last);
  HarmonyDelta d;
  d.reasoning = now.reasoning.value_or("").substr(was.reasoning.value_or("").size());
  d.tool.content = now.content.substr(was.content.size());
  for (size_t k = was.calls.size(); k < now.calls.size(); ++k) {
    if (!d.tool.tool_calls.is_array()) d.tool.tool_calls = nlohmann::json::array();
    d.tool.tool_calls.push_back(CallDelta(now.calls[k], k, id_seed, mistral_ids));
  }
  d.tool.called = last && !now.calls.empty();
  return d;
}

}  // namespace lockstep::server
