// Fuzzes the Harmony split of a model's reply (chat/harmony.h, server/harmony_reply.h): gpt-oss writes
// whatever its weights make, so SplitHarmony, HarmonyWhole, HarmonyStreamStep and HarmonyTokenCounter must
// take any well-formed UTF-8 (the detokenizer never emits less) without crashing. Properties: each streamed
// split (cut where the input's first bytes say, at character boundaries, as tokens are) extends the one
// before, its calls unchanged; the stream's deltas add up to the whole answer (reasoning, content, each
// call's id, name and arguments), and say "called" exactly when it has calls; every call names a declared
// tool, none under tool_choice "none"; everything is UTF-8 and dumps as JSON; the reasoning tokens never
// exceed the tokens.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/harmony.h"
#include "fuzz/fuzz_support.h"
#include "server/harmony_reply.h"

namespace {

using lockstep::fuzz::IsValidUtf8;
using lockstep::fuzz::Require;

// Two declared tools; tool_choice auto or none, from the input.
lockstep::server::ToolSpec MakeSpec(bool auto_choice) {
  nlohmann::json body = nlohmann::json::parse(R"({"tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "f"}}]})");
  body["tool_choice"] = auto_choice ? "auto" : "none";
  auto spec = lockstep::server::ReadToolFields(body, body.dump());
  Require(spec.ok(), "the fixed tool declarations are accepted");
  return *spec.value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  const size_t step_a = 1 + in.Byte() % 13, step_b = 1 + in.Byte() % 4;
  const std::string text(in.Rest());
  if (!IsValidUtf8(text)) return 0;  // the detokenizer's output is always well-formed
  static const server::ToolSpec specs[] = {MakeSpec(true), MakeSpec(false)};
  const server::ToolSpec& spec = specs[flags & 1];
  const bool mistral_ids = (flags & 2) != 0;

  const server::HarmonyReply whole = server::HarmonyWhole(spec, text, "seed", mistral_ids);
  Require(IsValidUtf8(whole.reasoning.value_or("")), "reasoning is UTF-8");
  Require(IsValidUtf8(whole.output.content.value_or("")), "content is UTF-8");
  Require(whole.output.content.has_value() || !whole.output.calls.empty(),
          "content is null only beside calls");
  Require(spec.calls_possible() || whole.output.calls.empty(), "no call under tool_choice none");
  for (const server::ToolCall& call : whole.output.calls) {
    Require(std::find(spec.names.begin(), spec.names.end(), call.name) != spec.names.end(),
            "every call names a declared tool");
    Require(IsValidUtf8(call.arguments), "arguments are UTF-8");
    (void)nlohmann::json({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}}).dump();
  }
  (void)nlohmann::json({{"r", whole.reasoning.value_or("")}, {"c", whole.output.content.value_or("")}})
      .dump();

  std::string reasoning, content;
  std::map<int, nlohmann::json> calls;  // index -> {id, name, arguments}
  bool called = false, a = true;
  chat::HarmonySplit before;
  chat::HarmonyTokenCounter counter;
  int32_t tokens = 0;
  for (size_t at = 0;; a = !a) {
    const size_t next = fuzz::NextCut(text, at, a ? step_a : step_b);
    const bool last = next == text.size();
    const std::string_view was = std::string_view(text).substr(0, at),
                           now = std::string_view(text).substr(0, next);
    const chat::HarmonySplit split = chat::SplitHarmony(now, spec.names, last);
    Require(split.reasoning.value_or("").starts_with(before.reasoning.value_or("")) &&
                split.content.starts_with(before.content) && split.calls.size() >= before.calls.size(),
            "each streamed split extends the one before");
    for (size_t k = 0; k < before.calls.size(); ++k) {
      Require(split.calls[k].name == before.calls[k].name &&
                  split.calls[k].arguments == before.calls[k].arguments,
              "a streamed split's calls stay");
    }
    before = split;
    const server::HarmonyDelta d = server::HarmonyStreamStep(spec, was, now, last, "seed", mistral_ids);
    Require(IsValidUtf8(d.reasoning) && IsValidUtf8(d.tool.content), "deltas are UTF-8");
    reasoning += d.reasoning;
    content += d.tool.content;
    if (d.tool.tool_calls.is_array()) {
      (void)d.tool.tool_calls.dump();
      for (const auto& tc : d.tool.tool_calls) {
        nlohmann::json& acc = calls[tc["index"].get<int>()];
        Require(acc.empty(), "a call is streamed once");
        acc = {
            {"id", tc["id"]}, {"name", tc["function"]["name"]}, {"arguments", tc["function"]["arguments"]}};
      }
    }
    Require(last || !d.tool.called, "only the last delta says called");
    called = d.tool.called;
    counter.AddToken(now);
    ++tokens;
    Require(counter.tokens() >= 0 && counter.tokens() <= tokens, "reasoning tokens are among the tokens");
    at = next;
    if (last) break;
  }
  Require(reasoning == whole.reasoning.value_or(""), "the reasoning deltas add up to the reasoning");
  Require(content == whole.output.content.value_or(""), "the content deltas add up to the content");
  Require(called == !whole.output.calls.empty(), "the stream is called exactly when the answer has calls");
  Require(calls.size() == whole.output.calls.size(), "as many streamed calls as calls");
  for (size_t i = 0; i < whole.output.calls.size(); ++i) {
    const auto it = calls.find(static_cast<int>(i));
    Require(it != calls.end(), "streamed calls are numbered 0..n-1");
    Require(it->second["id"] == whole.output.calls[i].id &&
                it->second["name"] == whole.output.calls[i].name &&
                it->second["arguments"] == whole.output.calls[i].arguments,
            "a streamed call is the call");
  }
  return 0;
}
