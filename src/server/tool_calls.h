// Tool calling for /v1/chat/completions: the request fields (tools, tool_choice, parallel_tool_calls), the
// tool messages that flow back through the chat template, the grammar that enforces `required` and named
// choices, and the parsing of a finished output into OpenAI tool_calls.
//
// Choices: "none" (tools are still shown to the template, never called), "auto" (the model decides; its
// output is parsed), "required" (the output is forced, by grammar, to be 1..16 calls (1 without
// parallel_tool_calls) in the model's own syntax: server/tool_grammar.h; with none, a JSON array
// [{"name": <a tool>, "arguments": <its parameters schema>}]), a named function (one call of it; with no
// syntax, the output is its arguments alone). So even a weak model produces a valid call.
//
// Parsing "auto" output, in the model families' formats (markers that are control tokens stay in the text:
// ToolMarkerTokens; other special tokens do not):
//   Hermes / Qwen2.5   prose, then <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks
//   Qwen3-Coder        prose, then <tool_call><function=NAME><parameter=KEY>value</parameter>...</function>
//                      </tool_call> blocks (server/tool_call_xml.h)
//   Llama 3.1+         {"name": ..., "parameters": {...}} (several separated by ';'), after <|python_tag|>
//   Mistral (v3)       [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...]
//   Mistral (v11)      [TOOL_CALLS]NAME[ARGS]{...} or [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}, repeated
//                      (Mistral Small 3.2, Devstral, Ministral 3)
//   generic            a JSON object or array of {name, arguments | parameters} (also in a ```json fence)
//   DeepSeek V3.1      prose, then <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}
//                      <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>; V3 / R1 write
//                      function<｜tool▁sep｜>NAME and a ```json fence (server/tool_call_deepseek.h)
//   GLM-4.5 / 4.6 / 4.7  prose, then <tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value>...
//                      </tool_call> blocks (server/tool_call_glm.h)
//   Kimi K2            prose, then <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
//                      <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
//                      (server/tool_call_kimi.h; the call keeps the model's id)
//   DeepSeek V3.2 / V4 prose, then <｜DSML｜function_calls> (V4: tool_calls) holding
//                      <｜DSML｜invoke name="NAME"><｜DSML｜parameter name="KEY" string="true|false">
//                      value</｜DSML｜parameter>...</｜DSML｜invoke> blocks (server/tool_call_dsml.h)
//   Gemma 4            prose, then <|tool_call>call:NAME{KEY:<|"|>text<|"|>,N:3}<tool_call|>, repeated
//                      (server/tool_call_gemma4.h)
//   gpt-oss (Harmony)  messages to functions.NAME, parsed apart with the reasoning: server/harmony_reply.h;
//                      a forced choice's reply in the kHarmony syntax here too (chat/harmony.h SplitHarmony:
//                      its call, and its other messages' text as content)
// Only declared tool names count; anything else is content. The tool-call region is where the text starts
// with '{', '[', '```' or a marker, or where <tool_call>, [TOOL_CALLS], DeepSeek's (DSML's), Kimi's or Gemma
// 4's call marker first appears; what precedes it is content and may be streamed (ToolRegionStart), so
// streamed and whole responses always agree. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };
// The model's call syntax, for forced choices (server/tool_grammar.h).
enum class ToolSyntax {
  kJson,
  kHermes,
  kMistral,
  kMistralV3,
  kDeepSeek,
  kDeepSeekR1,
  kKimi,
  kDsml,
  kDsmlV4,
  kGemma4,
  kGlm,
  kQwenXml,
  kHarmony
};

struct ToolSpec {
  nlohmann::ordered_json tools;  // the request's tools array, for the template; null when none
  std::vector<std::string> names;
  std::vector<nlohmann::ordered_json> parameters;  // per tool; {"type": "object"} when absent
  ToolChoice choice = ToolChoice::kNone;
  std::string named;  // kNamed: the function
  bool parallel = true;
  ToolSyntax syntax = ToolSyntax::kJson;  // the template's (server/tool_grammar.h), set by the route
  bool calls_possible() const { return choice != ToolChoice::kNone && !names.empty(); }
  bool forced() const { return choice == ToolChoice::kRequired || choice == ToolChoice::kNamed; }
  // A named choice whose output is its arguments alone (the kJson syntax); in the other syntaxes it is a
  // call in the model's form, parsed as "required" output is.
  bool arguments_only() const { return choice == ToolChoice::kNamed && syntax == ToolSyntax::kJson; }
};

inline constexpr int kMaxParallelToolCalls = 16;

// Reads tools / tool_choice / parallel_tool_calls (and rejects the legacy functions / function_call);
// `raw_body` is read again order-preserving for the template. 400 naming the field for any wrong type,
// an undeclared named function, tool_choice without tools, or a parameters schema the grammar cannot take.
Parsed<ToolSpec> ReadToolFields(const nlohmann::json& body, const std::string& raw_body);

// An assistant message's tool_calls as the template wants them (arguments parsed from their JSON text into
// objects, as vLLM and llama.cpp pass them); 400 naming messages[i].tool_calls[j] for malformed calls.
Parsed<nlohmann::ordered_json> TemplateToolCalls(const nlohmann::ordered_json& tool_calls,
                                                 const std::string& where);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolOutput {
  std::optional<std::string> content;  // nullopt: null content
  std::vector<ToolCall> calls;
};

// The control tokens of `tokenizer` that spell tool-call markers ([TOOL_CALLS], [ARGS], [CALL_ID],
// <|python_tag|>, <tool_call>, </tool_call>, DeepSeek's, GLM's and Kimi's markers), sorted: auto-mode
// requests, and forced ones in a model's own syntax (whose grammars produce them), keep their text
// (Request::preserved_tokens) so that the parser sees them, as llama.cpp's preserved tokens.
std::vector<int32_t> ToolMarkerTokens(const Tokenizer& tokenizer);

// Where the tool-call region of (possibly partial) auto-mode text starts; npos when none has begun.
// Text before it is content and safe to stream; `final` = the text is complete (no held-back marker prefix).
size_t ToolRegionStart(std::string_view text, bool final);
// A finished choice's text as content and calls. `id_seed` (e.g. the response id and choice index) makes
// the call ids (where the format has none of its own); mistral_ids: 9 alphanumerics (Mistral's templates
// insist), else "call_" + 24.
ToolOutput ParseToolOutput(const ToolSpec& spec, const std::string& text, const std::string& id_seed,
                           bool mistral_ids);
std::string ToolCallId(const std::string& id_seed, size_t index, bool mistral_ids);

// What one stream chunk of a tool-enabled choice carries, as its text grows from `before` to `after`
// (first: the choice's first chunk; last: `after` is the whole output): a content delta and OpenAI
// tool_calls deltas (null when none). Named choices stream the arguments as they come (id and name on the
// first delta); required calls and auto-mode calls are sent whole at the end, after any content before
// them. The concatenated deltas equal ParseToolOutput's answer.
struct ToolStreamDelta {
  std::string content;
  nlohmann::json tool_calls;  // null, or [{index, id?, type?, function: {name?, arguments}}]
  bool called = false;        // last only: the output was tool calls (finish_reason "tool_calls")
};
ToolStreamDelta ToolStreamStep(const ToolSpec& spec, std::string_view before, std::string_view after,
                               bool first, bool last, const std::string& id_seed, bool mistral_ids);

}  // namespace lockstep::server
