// The grammar of a forced tool choice (tool_choice "required" or a named function) in the model's own call
// syntax, as its chat template writes calls and server/tool_calls.h parses them back, so that a constrained
// model is steered into the form it was trained on rather than into a JSON shape it never saw:
//   kJson       [{"name": NAME, "arguments": {...}}] (required) or the arguments alone (named): templates
//               with no syntax of their own (Llama 3's JSON, ChatML without tools, unknown templates)
//   kHermes     <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>, one per call (Qwen2.5,
//               Qwen3, Hermes 2 / 3)
//   kMistral    [TOOL_CALLS]NAME[ARGS]{...} (or NAME[CALL_ID]ID9[ARGS]{...}), repeated (Mistral Small 3.2,
//               Devstral, Ministral 3)
//   kMistralV3  [TOOL_CALLS][{"name": "NAME", "arguments": {...}, "id": "ID9"}, ...] (Mistral Nemo, v3)
//   kDeepSeek   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...
//               <｜tool▁calls▁end｜> (V3.1)
//   kDeepSeekR1 the same with function<｜tool▁sep｜>NAME\n```json\n{...}\n``` inside each call (V3, R1)
//   kKimi       <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>
//               {...}<|tool_call_end|>...<|tool_calls_section_end|>
//   kDsml       <｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n<｜DSML｜parameter name="KEY"
//               string="true|false">VALUE</｜DSML｜parameter>\n...</｜DSML｜invoke>\n...</｜DSML｜function_calls>
//               (V3.2; kDsmlV4 writes tool_calls for function_calls): raw text string="true", JSON
//               string="false"
//   kGemma4     <|tool_call>call:NAME{KEY:VALUE,...}<tool_call|>, repeated, the values in Gemma 4's own
//               syntax (grammar/json_schema.h ValueSyntax::kGemma4)
//   kGlm        <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call> (newlines
//               between the parts optional: GLM-4.6 writes them, 4.7 and 5 do not)
//   kQwenXml    <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n
//               </tool_call>, one block per call (Qwen3-Coder, Qwen3.5, Nemotron 3 Nano)
//   kHarmony    <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...} (gpt-oss; or as its
//               template writes the header: ` to=functions.NAME<|channel|>commentary json`), after the
//               generation prompt's <|start|>assistant; one call, as <|call|> ends the reply
// No value holds, as written, a text the syntax's parser splits on before it reads values (a closing tag,
// another parameter's tag, the call's or block's end: </tool_call> in Hermes's JSON, the four tags of Qwen's
// XML, ...): raw text leaves them out (a constant holding one is left out, a 400 when none is left; a
// pattern's classes leave out '<'), JSON strings write their '<' as \u003c where it would begin one
// (grammar/json_schema.h stops). In the key/value syntaxes (DSML, GLM, Qwen XML) a top-level property that
// is always a string (typed string, or an untyped string enum / const; in GLM's and Qwen's also typed
// ["string", "null"], null as the text null) is its raw text (without length or format bounds), any other
// JSON, which the parsers read back by the property's `type` (server/tool_call_parts.h: with no `type`, any
// JSON); a parameters schema without top-level properties takes any names with JSON values. A property name
// the syntax cannot write (holding a stop, GLM's </arg_key>, Qwen's '>', DSML's '"') is a 400 naming it.
// The syntax is found once from the template's text (DetectToolSyntax). A named choice makes exactly one
// call of that function; "required" one (or, with parallel_tool_calls, up to kMaxParallelToolCalls) of any.
// Where the template writes reasoning (chat/reasoning.h tags), the grammar lets one reasoning block come
// first (the rest of it when the prompt opened it), so a thinking model thinks before it calls, as llama.cpp
// lets it; the block is split off as reasoning_content (Harmony's: an analysis message). The markers are
// produced as the vocabulary's control tokens where they are ones (GrammarCache's marker view). Pure
// functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/reasoning.h"
#include "server/api_error.h"
#include "server/tool_calls.h"

namespace lockstep::server {

// The call syntax a chat template's text writes (kJson when it shows none this file generates).
ToolSyntax DetectToolSyntax(std::string_view template_source);
// The syntax's name, for logs and tests ("json", "hermes", "mistral", ...).
std::string_view ToolSyntaxName(ToolSyntax syntax);

// The grammar (GBNF) a forced choice's output must follow in spec.syntax; "" when nothing is forced.
// `reasoning`: the template's reasoning tags when replies are split (none: no reasoning block); `opened`:
// the prompt already opened the block. 400 naming the tool's parameters for a schema the grammar cannot
// take.
Parsed<std::string> ForcedToolGbnf(const ToolSpec& spec,
                                   const std::optional<chat::ReasoningTags>& reasoning = std::nullopt,
                                   bool opened = false);

}  // namespace lockstep::server
