// Fuzzes the parsing of a model's output into OpenAI tool calls (server/tool_calls.h): the text a model
// writes is anything its weights make, so ParseToolOutput and ToolStreamStep must take any well-formed UTF-8
// (the detokenizer never emits less) without crashing. Properties: the stream's deltas, cut where the input's
// first bytes say (at character boundaries, as tokens are), add up to the whole answer (content, and each
// call's id, name and arguments); the stream says "called" exactly when the whole answer has calls; every
// call names a declared tool; and what the server writes out of either (JSON dumps) never throws. The same
// text is split into reasoning and content (chat/reasoning.h; <think> or [THINK] tags) whole and streamed:
// each streamed split extends the one before and the last is the whole text's, all UTF-8. Forced choices
// take the model's call syntax from the input (server/tool_grammar.h): a text their grammar accepts parses
// into calls (of the named function, for a named choice) whose arguments are valid, values holding the
// syntax's own tags included.
#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/reasoning.h"
#include "fuzz/fuzz_support.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"

namespace {

using lockstep::server::ToolSpec;

// Two declared tools, as a request would declare them; choice and parallel_tool_calls from the input.
ToolSpec MakeSpec(int choice, bool parallel) {
  nlohmann::json body = nlohmann::json::parse(R"({"tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "f"}}]})");
  static const char* const kChoices[] = {"auto", "required", "none"};
  if (choice < 3) {
    body["tool_choice"] = kChoices[choice];
  } else {
    body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  }
  body["parallel_tool_calls"] = parallel;
  auto spec = lockstep::server::ReadToolFields(body, body.dump());
  lockstep::fuzz::Require(spec.ok(), "the fixed tool declarations are accepted");
  return *spec.value;
}

void CheckReasoningSplits(std::string_view text, const lockstep::chat::ReasoningTags& tags, bool opened,
                          size_t step) {
  using lockstep::fuzz::IsValidUtf8;
  using lockstep::fuzz::Require;
  const lockstep::chat::ReasoningSplit whole =
      lockstep::chat::SplitReasoning(text, tags, opened, /*final=*/true);
  Require(IsValidUtf8(whole.reasoning.value_or("")) && IsValidUtf8(whole.content),
          "reasoning splits are UTF-8");
  std::string reasoning;
  std::string content;
  for (size_t at = 0;;) {
    const size_t next = lockstep::fuzz::NextCut(text, at, step);
    const bool last = next == text.size();
    const lockstep::chat::ReasoningSplit split =
        lockstep::chat::SplitReasoning(text.substr(0, next), tags, opened, last);
    const std::string r = split.reasoning.value_or("");
    Require(r.compare(0, reasoning.size(), reasoning) == 0 &&
                split.content.compare(0, content.size(), content) == 0,
            "each streamed reasoning split extends the one before");
    reasoning = r;
    content = split.content;
    if (last) break;
    at = next;
  }
  Require(reasoning == whole.reasoning.value_or("") && content == whole.content,
          "the streamed reasoning splits end at the whole text's");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  const size_t step_a = 1 + in.Byte() % 13;
  const uint8_t step_byte = in.Byte();
  const size_t step_b = 1 + step_byte % 4;
  constexpr int kSyntaxes = static_cast<int>(server::ToolSyntax::kHarmony) + 1;
  const int syntax = (step_byte >> 2) % kSyntaxes;
  const std::string text(in.Rest());
  if (!fuzz::IsValidUtf8(text)) return 0;  // the detokenizer's output is always well-formed
  // Made once each: ReadToolFields converts the parameter schemas to grammars, the cost of most inputs.
  static const std::vector<ToolSpec> specs = [] {
    std::vector<ToolSpec> all;
    for (int i = 0; i < 8; ++i) all.push_back(MakeSpec(i % 4, i >= 4));
    return all;
  }();
  const int spec_index = flags % 4 + ((flags & 4) != 0 ? 4 : 0);
  ToolSpec spec = specs[spec_index];
  spec.syntax = static_cast<server::ToolSyntax>(syntax);
  const bool mistral_ids = (flags & 8) != 0;
  const chat::ReasoningTags& tags = (flags & 64) != 0   ? chat::kGemma4ThoughtTags
                                    : (flags & 32) != 0 ? chat::kMistralThinkTags
                                                        : chat::kThinkTags;
  CheckReasoningSplits(text, tags, (flags & 16) != 0, step_a);
  if (!spec.calls_possible()) return 0;  // tool_choice "none": the server does not parse the output

  const server::ToolOutput whole = server::ParseToolOutput(spec, text, "seed", mistral_ids);
  if (spec.forced()) {
    // Compiled once per (spec, syntax).
    static std::map<int, std::shared_ptr<const grammar::CompiledGrammar>> grammars;
    auto& g = grammars[spec_index * kSyntaxes + syntax];
    if (!g) {
      auto gbnf = server::ForcedToolGbnf(spec);
      fuzz::Require(gbnf.ok(), "the fixed tools' forced grammar is made");
      auto compiled = grammar::CompiledGrammar::FromGbnf(*gbnf.value);
      fuzz::Require(compiled.ok(), "the forced grammar compiles");
      g = *compiled;
    }
    grammar::GrammarMatcher m(g);
    if (m.AcceptBytes(text) && m.accepting()) {
      fuzz::Require(!whole.calls.empty(), "a text the forced grammar accepts parses into calls");
      for (const server::ToolCall& call : whole.calls) {
        fuzz::Require(spec.choice != server::ToolChoice::kNamed || call.name == spec.named,
                      "a named choice's grammar calls that function only");
        const nlohmann::json args = nlohmann::json::parse(call.arguments, nullptr, false);
        fuzz::Require(args.is_object(), "a forced call's arguments are an object");
        if (call.name == "get_weather") {
          fuzz::Require(args.contains("city") && args["city"].is_string() &&
                            (!args.contains("days") || args["days"].is_number_integer()) &&
                            args.size() == 1 + args.contains("days"),
                        "a forced call's arguments are valid against its parameters");
        }
      }
    }
  }
  for (const server::ToolCall& call : whole.calls) {
    fuzz::Require(std::find(spec.names.begin(), spec.names.end(), call.name) != spec.names.end(),
                  "every call names a declared tool");
    fuzz::Require(fuzz::IsValidUtf8(call.arguments) && fuzz::IsValidUtf8(call.id), "calls are UTF-8");
    (void)nlohmann::json({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}}).dump();
  }
  if (whole.content) {
    fuzz::Require(fuzz::IsValidUtf8(*whole.content), "content is UTF-8");
    (void)nlohmann::json(*whole.content).dump();
  }

  std::string content;
  std::map<int, nlohmann::json> calls;  // index -> {id, name, arguments}
  bool called = false;
  bool a = true;
  for (size_t at = 0;; a = !a) {
    const size_t next = fuzz::NextCut(text, at, a ? step_a : step_b);
    const bool last = next == text.size();
    const server::ToolStreamDelta d =
        server::ToolStreamStep(spec, std::string_view(text).substr(0, at),
                               std::string_view(text).substr(0, next), at == 0, last, "seed", mistral_ids);
    fuzz::Require(fuzz::IsValidUtf8(d.content), "a content delta is UTF-8");
    content += d.content;
    if (d.tool_calls.is_array()) {
      (void)d.tool_calls.dump();
      for (const auto& tc : d.tool_calls) {
        nlohmann::json& acc = calls[tc["index"].get<int>()];
        if (tc.contains("id")) acc["id"] = tc["id"];
        if (tc["function"].contains("name")) acc["name"] = tc["function"]["name"];
        acc["arguments"] = acc.value("arguments", "") + tc["function"]["arguments"].get<std::string>();
      }
    }
    fuzz::Require(last || !d.called, "only the last delta says called");
    called = d.called;
    at = next;
    if (last) break;
  }
  fuzz::Require(called == !whole.calls.empty(), "the stream is called exactly when the answer has calls");
  fuzz::Require(content == whole.content.value_or(""), "the content deltas add up to the content");
  fuzz::Require(calls.size() == whole.calls.size(), "as many streamed calls as calls");
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    const auto it = calls.find(static_cast<int>(i));
    fuzz::Require(it != calls.end(), "streamed calls are numbered 0..n-1");
    fuzz::Require(it->second.value("id", "") == whole.calls[i].id, "a streamed call's id is the call's");
    fuzz::Require(it->second.value("name", "") == whole.calls[i].name,
                  "a streamed call's name is the call's");
    fuzz::Require(it->second.value("arguments", "") == whole.calls[i].arguments,
                  "a streamed call's arguments add up to the call's");
  }
  return 0;
}
