#include "server/tool_calls.h"

#include <algorithm>
#include <functional>

#include "base/excerpt.h"
#include "chat/harmony.h"
#include "server/request_fields.h"
#include "server/structured_fields.h"
#include "server/tool_call_deepseek.h"
#include "server/tool_call_dsml.h"
#include "server/tool_call_gemma4.h"
#include "server/tool_call_glm.h"
#include "server/tool_call_kimi.h"
#include "server/tool_call_parts.h"
#include "server/tool_call_xml.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
// The schema keywords that say what kind of value a tool's parameters are (ReadToolFields).
constexpr const char* kTypeKeywords[] = {"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not"};
constexpr std::string_view kMarkers[] = {kMistralCalls, "<|python_tag|>", kHermesOpen, "```"};
// Markers that open the tool-call region wherever they appear (after prose), not only at the start.
constexpr std::string_view kAnywhereMarkers[] = {
    kHermesOpen,       kMistralCalls,           kDeepSeekCallsBegin, kDeepSeekCallBegin,
    kKimiSectionBegin, kDsmlFunctionCallsBegin, kDsmlToolCallsBegin, kGemma4CallBegin};

// The formats whose calls are a section that starts with a marker, and their parsers.
using SectionParser = bool (*)(const ToolSpec&, std::string_view, std::vector<ToolCall>*, std::string_view*);
struct SectionFormat {
  std::string_view marker;
  SectionParser parse;
};
constexpr SectionFormat kSectionFormats[] = {
    {kDeepSeekCallsBegin, DeepSeekToolCallsFrom}, {kDeepSeekCallBegin, DeepSeekToolCallsFrom},
    {kKimiSectionBegin, KimiToolCallsFrom},       {kDsmlFunctionCallsBegin, DsmlToolCallsFrom},
    {kDsmlToolCallsBegin, DsmlToolCallsFrom},     {kGemma4CallBegin, Gemma4ToolCallsFrom}};

// The section format whose marker `text` starts with; nullptr for none.
const SectionFormat* SectionFormatAt(std::string_view text) {
  for (const SectionFormat& format : kSectionFormats) {
    if (tool_parts::StartsWith(text, format.marker)) return &format;
  }
  return nullptr;
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

using tool_parts::SkipSpace;

// A named choice's arguments in its text: from its first to past its last non-space character; {size, size}
// when it is only space.
std::pair<size_t, size_t> ArgumentsSpan(std::string_view text) {
  const size_t last = text.find_last_not_of(" \n\t\r");
  if (last == std::string_view::npos) return {text.size(), text.size()};
  return {SkipSpace(text, 0), last + 1};
}

// {name, arguments | parameters} of a declared tool -> a call (arguments as compact JSON text).
bool CallFrom(const ToolSpec& spec, const Ordered& v, ToolCall* out) {
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
  const std::string name = v["name"].get<std::string>();
  if (std::find(spec.names.begin(), spec.names.end(), name) == spec.names.end()) return false;
  const Ordered* args = v.contains("arguments")    ? &v["arguments"]
                        : v.contains("parameters") ? &v["parameters"]
                                                   : nullptr;
  if (args == nullptr) return false;
  out->name = name;
  if (args->is_string()) {
    out->arguments = args->get<std::string>();
  } else if (args->is_object()) {
    out->arguments = args->dump();
  } else {
    return false;
  }
  return true;
}

// A run of JSON values (objects, arrays of objects) separated by ';', ',' or whitespace, all of them calls.
bool CallsFrom(const ToolSpec& spec, std::string_view s, std::vector<ToolCall>* calls) {
  size_t p = SkipSpace(s, 0);
  if (p >= s.size()) return false;
  while (p < s.size()) {
    if (s[p] != '{' && s[p] != '[') return false;
    const size_t end = tool_parts::JsonValueEnd(s, p);
    if (end == std::string_view::npos) return false;
    // The model's output, which no body check has seen: bounded as client JSON is, since the value is then
    // copied and dumped recursively. Deeper output is not a call (it stays content).
    if (NestsDeeperThan(s.substr(p, end - p), kMaxJsonDepth)) return false;
    const Ordered v = Ordered::parse(s.substr(p, end - p), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) return false;
    for (const Ordered& item : v.is_array() ? v : Ordered::array({v})) {
      ToolCall call;
      if (!CallFrom(spec, item, &call)) return false;
      calls->push_back(std::move(call));
    }
    p = SkipSpace(s, end);
    while (p < s.size() && (s[p] == ';' || s[p] == ',')) p = SkipSpace(s, p + 1);
  }
  return !calls->empty();
}

// Mistral's v11 calls (Mistral Small 3.2, Devstral, Ministral 3), `s` being what follows the first
// [TOOL_CALLS]: NAME[ARGS]{...} or NAME[CALL_ID]ID[ARGS]{...}, several joined by [TOOL_CALLS]; nothing after
// the last. The model's own call id is not kept (the server makes the ids, as for the other formats).
bool MistralCallsFrom(const ToolSpec& spec, std::string_view s, std::vector<ToolCall>* calls) {
  while (true) {
    const size_t args = s.find(kMistralArgs);
    if (args == std::string_view::npos) return false;
    const std::string_view head = s.substr(0, std::min(args, s.find(kMistralCallId)));
    const auto [name_begin, name_end] = ArgumentsSpan(head);  // the name without the space around it
    const std::string_view name = head.substr(name_begin, name_end - name_begin);
    if (std::find(spec.names.begin(), spec.names.end(), name) == spec.names.end()) return false;
    const size_t open = SkipSpace(s, args + kMistralArgs.size());
    if (open >= s.size() || s[open] != '{') return false;
    const size_t end = tool_parts::JsonValueEnd(s, open);
    if (end == std::string_view::npos || NestsDeeperThan(s.substr(open, end - open), kMaxJsonDepth))
      return false;
    const Ordered v = Ordered::parse(s.substr(open, end - open), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded() || !v.is_object()) return false;
    calls->push_back({"", std::string(name), v.dump()});
    s.remove_prefix(SkipSpace(s, end));
    if (s.empty()) return true;
    if (s.substr(0, kMistralCalls.size()) != kMistralCalls) return false;
    s.remove_prefix(kMistralCalls.size());
  }
}

// Text as content; null when it is only whitespace (a stream holds such text back, so both agree).
std::optional<std::string> Content(std::string text) {
  if (text.find_first_not_of(" \n\t\r") == std::string::npos) return std::nullopt;
  return text;
}

}  // namespace

Parsed<ToolSpec> ReadToolFields(const nlohmann::json& body, const std::string& raw_body) {
  ToolSpec spec;
  for (const char* legacy : {"functions", "function_call"}) {
    if (body.contains(legacy) && !body[legacy].is_null()) {
      return ApiError{Unimplemented(std::string(legacy) +
                                    " (the deprecated function-calling API) is not supported; use tools and "
                                    "tool_choice"),
                      legacy, false};
    }
  }
  const bool has_tools = body.contains("tools") && !body["tools"].is_null();
  if (has_tools) {
    const nlohmann::json& tools = body["tools"];
    if (!tools.is_array())
      return ApiError::Field("tools", "tools must be an array of {type, function} objects");
    const Ordered ordered = Ordered::parse(raw_body, nullptr, /*allow_exceptions=*/false);
    spec.tools = ordered.is_object() && ordered.contains("tools") ? ordered["tools"] : Ordered::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string where = "tools[" + std::to_string(i) + "]";
      const nlohmann::json& t = tools[i];
      if (!t.is_object() || t.value("type", nlohmann::json()) != "function" || !t.contains("function") ||
          !t["function"].is_object()) {
        return ApiError::Field(where, where + " must be {\"type\": \"function\", \"function\": {name, ...}}");
      }
      const nlohmann::json& f = t["function"];
      if (!f.contains("name") || !f["name"].is_string() || !ValidName(f["name"].get<std::string>())) {
        return ApiError::Field(where + ".function.name",
                               where + ".function.name must be 1-64 of a-z, A-Z, 0-9, _, - or .");
      }
      const std::string name = f["name"].get<std::string>();
      if (std::find(spec.names.begin(), spec.names.end(), name) != spec.names.end()) {
        return ApiError::Field(where + ".function.name", "two tools are named \"" + Excerpt(name) + "\"");
      }
      if (f.contains("description") && !f["description"].is_null() && !f["description"].is_string()) {
        return ApiError::Field(where + ".function.description",
                               where + ".function.description must be a string");
      }
      Ordered params = Ordered{{"type", "object"}};
      if (f.contains("parameters") && !f["parameters"].is_null()) {
        if (!f["parameters"].is_object()) {
          return ApiError::Field(where + ".function.parameters",
                                 where + ".function.parameters must be a JSON schema object");
        }
        params = spec.tools[i]["function"]["parameters"];
        // A function's arguments are a JSON object: a schema that says nothing of its type ({}, or
        // properties alone) says so here, so that forced calls never write a bare value as arguments.
        // (Combinators and constants are left as they are: they say what they allow.)
        const bool says_type = std::any_of(std::begin(kTypeKeywords), std::end(kTypeKeywords),
                                           [&](const char* k) { return params.contains(k); });
        if (!says_type) params["type"] = "object";
      }
      spec.names.push_back(name);
      spec.parameters.push_back(std::move(params));
    }
  }
  spec.choice = spec.names.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const nlohmann::json& c = body["tool_choice"];
    if (c.is_string()) {
      const std::string s = c.get<std::string>();
      if (s == "none") {
        spec.choice = ToolChoice::kNone;
      } else if (s == "auto" || s == "required") {
        if (spec.names.empty())
          return ApiError::Field("tool_choice", "tool_choice \"" + s + "\" needs tools");
        spec.choice = s == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
      } else {
        return ApiError::Field("tool_choice",
                               "tool_choice must be \"none\", \"auto\", \"required\" or "
                               "{\"type\": \"function\", \"function\": {\"name\"}}; got \"" +
                                   Excerpt(s) + "\"");
      }
    } else if (c.is_object() && c.value("type", nlohmann::json()) == "function" && c.contains("function") &&
               c["function"].is_object() && c["function"].contains("name") &&
               c["function"]["name"].is_string()) {
      spec.named = c["function"]["name"].get<std::string>();
      if (std::find(spec.names.begin(), spec.names.end(), spec.named) == spec.names.end()) {
        return ApiError::Field(
            "tool_choice", "tool_choice names \"" + Excerpt(spec.named) + "\", which is not among the tools");
      }
      spec.choice = ToolChoice::kNamed;
    } else {
      return ApiError::Field("tool_choice",
                             "tool_choice must be \"none\", \"auto\", \"required\" or "
                             "{\"type\": \"function\", \"function\": {\"name\"}}");
    }
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) {
      return ApiError::Field("parallel_tool_calls", "parallel_tool_calls must be a boolean");
    }
    spec.parallel = body["parallel_tool_calls"].get<bool>();
  }
  // Every schema must convert, whatever the choice: a call under "auto" may later be forced.
  for (size_t i = 0; i < spec.names.size(); ++i) {
    auto gbnf = SchemaGbnf(spec.parameters[i], "tools[" + std::to_string(i) + "].function.parameters");
    if (!gbnf.ok()) return gbnf.error;
  }
  return spec;
}

Parsed<Ordered> TemplateToolCalls(const Ordered& tool_calls, const std::string& where) {
  if (!tool_calls.is_array()) return ApiError::Field(where, where + " must be an array of tool calls");
  Ordered out = Ordered::array();
  for (size_t j = 0; j < tool_calls.size(); ++j) {
    const std::string at = where + "[" + std::to_string(j) + "]";
    const Ordered& call = tool_calls[j];
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
      return ApiError::Field(
          at, at + " must be {\"id\", \"type\": \"function\", \"function\": {name, arguments}}");
    }
    const Ordered& f = call["function"];
    if (!f.contains("name") || !f["name"].is_string()) {
      return ApiError::Field(at + ".function.name", at + ".function.name must be a string");
    }
    if (call.contains("id") && !call["id"].is_string())
      return ApiError::Field(at + ".id", at + ".id must be a string");
    Ordered fn = {{"name", f["name"]}};
    if (f.contains("arguments") && f["arguments"].is_string()) {
      auto args = ParseJsonText(f["arguments"].get<std::string>(), at + ".function.arguments",
                                at + ".function.arguments must be JSON text");
      if (!args.ok()) return args.error;
      fn["arguments"] = std::move(*args.value);
    } else if (f.contains("arguments") && f["arguments"].is_object()) {
      fn["arguments"] = f["arguments"];
    } else {
      return ApiError::Field(at + ".function.arguments", at + ".function.arguments must be a JSON string");
    }
    Ordered entry = Ordered::object();
    if (call.contains("id")) entry["id"] = call["id"];
    entry["type"] = "function";
    entry["function"] = std::move(fn);
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<int32_t> ToolMarkerTokens(const Tokenizer& tokenizer) {
  static constexpr std::string_view kToolMarkers[] = {
      kMistralCalls, kMistralArgs, kMistralCallId, "<|python_tag|>", kHermesOpen, kHermesClose,
      // DeepSeek V3 / V3.1 / R1
      kDeepSeekCallsBegin, kDeepSeekCallsEnd, kDeepSeekCallBegin, kDeepSeekCallEnd, kDeepSeekSep,
      // GLM-4.5+
      "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
      // Kimi K2
      kKimiSectionBegin, kKimiSectionEnd, kKimiCallBegin, kKimiArgumentBegin, kKimiCallEnd,
      // DeepSeek V3.2 / V4 (where a vocabulary has them as tokens)
      kDsmlFunctionCallsBegin, kDsmlToolCallsBegin,
      // Gemma 4
      kGemma4CallBegin, kGemma4CallEnd, kGemma4Quote};
  std::vector<std::string_view> markers(std::begin(kToolMarkers), std::end(kToolMarkers));
  // gpt-oss's Harmony: its forced calls' grammar writes the headers' tokens.
  markers.insert(markers.end(), std::begin(chat::kHarmonyTokens), std::end(chat::kHarmonyTokens));
  return tokenizer.ControlTokens(markers);
}

size_t ToolRegionStart(std::string_view text, bool final) {
  const size_t first = SkipSpace(text, 0);
  if (first < text.size() && (text[first] == '{' || text[first] == '[')) return first;
  const std::string_view rest = text.substr(first);
  for (std::string_view marker : kMarkers) {
    if (rest.substr(0, marker.size()) == marker.substr(0, rest.size())) {
      if (rest.size() >= marker.size() || !final) return first;  // a marker, or what may become one
    }
  }
  size_t start = std::string_view::npos;
  for (std::string_view marker : kAnywhereMarkers) start = std::min(start, text.find(marker));
  if (start != std::string_view::npos || final) return start;
  // Hold back a tail that may be the start of <tool_call> or [TOOL_CALLS].
  for (std::string_view marker : kAnywhereMarkers) {
    for (size_t len = std::min(marker.size() - 1, text.size()); len > 0; --len) {
      if (text.substr(text.size() - len) == marker.substr(0, len)) start = std::min(start, text.size() - len);
    }
  }
  return start;
}

ToolOutput ParseToolOutput(const ToolSpec& spec, const std::string& text, const std::string& id_seed,
                           bool mistral_ids) {
  ToolOutput out;
  if (spec.arguments_only()) {
    // The grammar forces the arguments, so the output is the call whatever it holds: even when cut short
    // (max_tokens), as a stream has announced the call in its first delta by then; finish_reason "length"
    // says the arguments are incomplete (as OpenAI and vLLM answer).
    const auto [a, b] = ArgumentsSpan(text);
    out.calls.push_back({"", spec.named, text.substr(a, b - a)});
  } else if (spec.forced() && spec.syntax == ToolSyntax::kHarmony) {
    // Harmony's messages: the calls to declared functions (a forced choice's grammar writes one, after an
    // analysis message perhaps, whose text is content here: the server splits Harmony replies apart first
    // where reasoning is split, server/harmony_reply.h, as it does all auto-mode Harmony replies).
    chat::HarmonySplit split = chat::SplitHarmony(text, spec.names, /*final=*/true);
    for (chat::HarmonyCall& call : split.calls) {
      const Ordered args = NestsDeeperThan(call.arguments, kMaxJsonDepth)
                               ? Ordered()
                               : Ordered::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
      if (!args.is_object()) {  // not a call's arguments: the reply is content
        out.calls.clear();
        break;
      }
      out.calls.push_back({"", std::move(call.name), tool_parts::ArgumentsText(args)});
    }
    std::string content = split.reasoning.value_or("");
    if (!split.content.empty()) content += (content.empty() ? "" : "\n\n") + split.content;
    out.content = out.calls.empty() ? std::optional<std::string>(text) : Content(content);
  } else if (spec.calls_possible()) {
    const size_t region = ToolRegionStart(text, /*final=*/true);
    std::vector<ToolCall> calls;
    bool ok = false;
    std::string after;
    if (region != std::string::npos) {
      std::string_view rest = std::string_view(text).substr(region);
      rest = rest.substr(SkipSpace(rest, 0));
      if (rest.substr(0, kHermesOpen.size()) == kHermesOpen) {
        ok = true;
        while (ok && rest.substr(0, kHermesOpen.size()) == kHermesOpen) {
          rest.remove_prefix(kHermesOpen.size());
          const size_t close = rest.find(kHermesClose);
          const std::string_view inside = rest.substr(0, close);
          ok = XmlToolCallsFrom(spec, inside, &calls) || GlmToolCallFrom(spec, inside, &calls) ||
               CallsFrom(spec, inside, &calls);
          rest =
              close == std::string_view::npos ? std::string_view() : rest.substr(close + kHermesClose.size());
          rest = rest.substr(SkipSpace(rest, 0));
        }
        after = std::string(rest);
      } else if (const SectionFormat* format = SectionFormatAt(rest)) {
        std::string_view tail;
        ok = format->parse(spec, rest, &calls, &tail);
        after = std::string(tail.substr(SkipSpace(tail, 0)));
      } else {
        const bool mistral = rest.substr(0, kMistralCalls.size()) == kMistralCalls;
        for (std::string_view marker : {kMistralCalls, std::string_view("<|python_tag|>")}) {
          if (rest.substr(0, marker.size()) == marker) rest.remove_prefix(marker.size());
        }
        const size_t first = SkipSpace(rest, 0);
        if (mistral && first < rest.size() && rest[first] != '[' && rest[first] != '{') {
          ok = MistralCallsFrom(spec, rest, &calls);  // v11: NAME[ARGS]{...}
        } else {
          if (rest.substr(0, 3) == "```") {  // a fenced block: ```json ... ```
            const size_t nl = rest.find('\n');
            const size_t close = rest.rfind("```");
            rest = nl != std::string_view::npos && close > nl ? rest.substr(nl + 1, close - nl - 1)
                                                              : std::string_view();
          }
          ok = CallsFrom(spec, rest, &calls);
        }
      }
    }
    if (ok) {
      out.calls = std::move(calls);
      out.content = Content(text.substr(0, region) + (after.empty() ? "" : "\n" + after));
    } else {
      out.content = text;
    }
    if (spec.forced() && out.calls.empty()) out.content = text;
  } else {
    out.content = text;
  }
  for (size_t k = 0; k < out.calls.size(); ++k) {
    if (out.calls[k].id.empty()) out.calls[k].id = ToolCallId(id_seed, k, mistral_ids);  // Kimi keeps its own
  }
  return out;
}

std::string ToolCallId(const std::string& id_seed, size_t index, bool mistral_ids) {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t h = std::hash<std::string>{}(id_seed) ^ (0x9E3779B97F4A7C15ull * (index + 1));
  std::string id = mistral_ids ? "" : "call_";
  const int n = mistral_ids ? 9 : 24;
  for (int i = 0; i < n; ++i) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
    id += kAlphabet[h % 62];
  }
  return id;
}

namespace {

// Streamed content of auto-mode text: everything before the tool-call region, held back while it is only
// whitespace.
size_t StreamedContent(std::string_view text, bool final) {
  const size_t s = std::min(text.size(), ToolRegionStart(text, final));
  return text.substr(0, s).find_first_not_of(" \n\t\r") == std::string_view::npos ? 0 : s;
}

}  // namespace

ToolStreamDelta ToolStreamStep(const ToolSpec& spec, std::string_view before, std::string_view after,
                               bool first, bool last, const std::string& id_seed, bool mistral_ids) {
  ToolStreamDelta d;
  if (spec.arguments_only()) {
    // Sent so far: the arguments span of `before` (nothing while it was only space); now up to the span's
    // end.
    const auto [sent_begin, sent_end] = ArgumentsSpan(first ? std::string_view() : before);
    const auto [begin, end] = ArgumentsSpan(after);
    const size_t from = sent_end > sent_begin ? sent_end : begin;
    const std::string piece(end > from ? after.substr(from, end - from) : std::string_view());
    nlohmann::json fn = {{"arguments", piece}};
    nlohmann::json call = {{"index", 0}};
    if (first) {
      call["id"] = ToolCallId(id_seed, 0, mistral_ids);
      call["type"] = "function";
      fn = {{"name", spec.named}, {"arguments", piece}};
    }
    call["function"] = std::move(fn);
    if (first || !piece.empty()) d.tool_calls = nlohmann::json::array({std::move(call)});
    d.called = last;  // a named choice's output is always its call (ParseToolOutput)
    return d;
  }
  if (!spec.calls_possible()) {
    d.content = std::string(after.substr(before.size()));
    return d;
  }
  const size_t sent = first ? 0 : (spec.forced() ? 0 : StreamedContent(before, false));
  if (!last) {
    if (spec.choice == ToolChoice::kAuto) {
      const size_t now = StreamedContent(after, false);
      if (now > sent) d.content = std::string(after.substr(sent, now - sent));
    }
    return d;
  }
  const ToolOutput out = ParseToolOutput(spec, std::string(after), id_seed, mistral_ids);
  if (out.calls.empty()) {
    d.content = std::string(after.substr(sent));
    return d;
  }
  if (out.content && out.content->size() > sent) d.content = out.content->substr(sent);
  d.called = true;
  d.tool_calls = nlohmann::json::array();
  for (size_t k = 0; k < out.calls.size(); ++k) {
    d.tool_calls.push_back(
        {{"index", k},
         {"id", out.calls[k].id},
         {"type", "function"},
         {"function", {{"name", out.calls[k].name}, {"arguments", out.calls[k].arguments}}}});
  }
  return d;
}

}  // namespace lockstep::server
