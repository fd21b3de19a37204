// Request parsing of POST /v1/responses: a Responses body checked and rewritten as a chat-completions body
// (the Response shapes and the stream are in responses_format.cc).
#include "server/responses_api.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>

#include "base/excerpt.h"
#include "server/request_fields.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;

// Fields that mean the same on both routes, read by the chat parser under the same names.
// clang-format off
constexpr const char* kSharedFields[] = {
    "temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "logit_bias", "stop_token_ids", "min_tokens", "ignore_eos", "stream", "user",
    "parallel_tool_calls", "chat_template_kwargs", "reasoning_format"};
// clang-format on

// A message's content: a string, or an array of input_text / output_text parts (their texts joined).
std::optional<std::string> ReadContent(FieldReader& item, const char* field) {
  const nlohmann::json* c = item.Raw(field);
  if (item.failed()) return std::nullopt;
  if (c == nullptr) {
    item.Fail(field, item.Param(field) + " is required (a string or an array of input_text parts)");
    return std::nullopt;
  }
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) {
    item.Fail(field, item.Param(field) + " must be a string or an array of input_text parts, got " +
                         DescribeJson(*c));
    return std::nullopt;
  }
  std::string text;
  for (size_t k = 0; k < c->size(); ++k) {
    const std::string name = std::string(field) + "[" + std::to_string(k) + "]";
    const nlohmann::json& part = (*c)[k];
    if (!part.is_object()) {
      item.Fail(name, item.Param(name) +
                          " must be a {\"type\": \"input_text\", \"text\": string} object, got " +
                          DescribeJson(part));
      return std::nullopt;
    }
    FieldReader pf(part, item.Param(name));
    const auto type = pf.Enum("type", {"input_text", "output_text"});  // images and files: not supported
    if (!pf.failed() && !type) pf.Fail("type", pf.Param("type") + " is required");
    const auto piece = pf.String("text");
    if (!pf.failed() && !piece) pf.Fail("text", pf.Param("text") + " is required (a string)");
    if (pf.failed()) {
      item.Absorb(pf);
      return std::nullopt;
    }
    text += *piece;
  }
  return text;
}

std::string Required(FieldReader& r, const char* field, const char* what) {
  const auto value = r.String(field);
  if (!r.failed() && !value) r.Fail(field, r.Param(field) + " is required (" + what + ")");
  return value.value_or("");
}

// The text of a reasoning item's reasoning_text parts (a Responses output item, which agents send back with
// the rest of a turn); `summary`, `encrypted_content` and `status` are type-checked and not used.
std::string ReadReasoning(FieldReader& it) {
  it.String("id");
  it.String("encrypted_content");
  it.Enum("status", {"in_progress", "completed", "incomplete"});
  std::string text;
  for (const char* field : {"summary", "content"}) {
    const nlohmann::json* parts = it.Array(field);
    const char* type = std::string_view(field) == "summary" ? "summary_text" : "reasoning_text";
    for (size_t k = 0; parts != nullptr && k < parts->size() && !it.failed(); ++k) {
      const std::string name = std::string(field) + "[" + std::to_string(k) + "]";
      const nlohmann::json& part = (*parts)[k];
      FieldReader pf(part, it.Param(name));
      const auto part_type = pf.String("type");
      const auto part_text = pf.String("text");
      if (!pf.failed() && (part_type != type || !part_text)) {
        pf.Fail("type", it.Param(name) + " must be a {\"type\": \"" + type + "\", \"text\": string} object");
      }
      it.Absorb(pf);
      if (!it.failed() && std::string_view(field) == "content") text += *part_text;
    }
  }
  return text;
}

// One item of `input` appended to the chat messages: a message; a function_call (the assistant's tool call:
// it joins the assistant message before it, so parallel calls make one message, as chat sends them); a
// function_call_output (a tool message); a reasoning item (its text the next assistant message's
// reasoning_content, which the template shows or drops; `reasoning` holds it until then).
void ReadItem(FieldReader& f, const nlohmann::json& item, size_t i, Ordered& messages,
              std::string& reasoning) {
  const std::string where = "input[" + std::to_string(i) + "]";
  if (!item.is_object()) {
    return f.Fail(where,
                  where + " must be an object (a message, function_call or function_call_output item), got " +
                      DescribeJson(item));
  }
  FieldReader it(item, where);
  const std::string type =
      it.Enum("type", {"message", "function_call", "function_call_output", "reasoning"}).value_or("message");
  // An assistant message made now takes the reasoning item before it.
  const auto assistant = [&reasoning](Ordered message) {
    if (!reasoning.empty()) message["reasoning_content"] = std::exchange(reasoning, "");
    return message;
  };
  if (type == "reasoning") {
    const std::string text = ReadReasoning(it);
    if (!it.failed()) reasoning = text;
  } else if (type == "message") {
    const auto role = it.Enum("role", {"user", "system", "developer", "assistant"});
    if (!it.failed() && !role) it.Fail("role", where + ".role is required");
    const auto content = ReadContent(it, "content");
    if (!it.failed() && role == "assistant") {
      messages.push_back(assistant({{"role", *role}, {"content", *content}}));
    } else if (!it.failed()) {
      messages.push_back({{"role", *role}, {"content", *content}});
    }
  } else if (type == "function_call") {
    const std::string call_id = Required(it, "call_id", "a string");
    const std::string name = Required(it, "name", "a string");
    const std::string arguments = Required(it, "arguments", "JSON text");
    if (!it.failed()) {
      auto parsed = ParseJsonText(arguments, where + ".arguments", where + ".arguments must be JSON text");
      if (!parsed.ok()) return f.Fail(where + ".arguments", parsed.error.status.message());
    }
    if (!it.failed()) {
      const Ordered call = {
          {"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
      if (messages.empty() || messages.back()["role"] != "assistant") {
        messages.push_back(assistant({{"role", "assistant"}, {"content", ""}}));
      }
      Ordered& assistant = messages.back();
      if (!assistant.contains("tool_calls")) assistant["tool_calls"] = Ordered::array();
      assistant["tool_calls"].push_back(call);
    }
  } else {
    const std::string call_id = Required(it, "call_id", "a string");
    const auto output = ReadContent(it, "output");
    if (!it.failed()) messages.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", *output}});
  }
  f.Absorb(it);
}

void ReadInput(FieldReader& f, Ordered& messages) {
  const nlohmann::json* input = f.Raw("input");
  if (f.failed()) return;
  if (input == nullptr) return f.Fail("input", "input is required (a string or an array of items)");
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", input->get<std::string>()}});
    return;
  }
  if (!input->is_array() || input->empty()) {
    return f.Fail("input",
                  "input must be a string or a non-empty array of items, got " + DescribeJson(*input));
  }
  std::string reasoning;  // a reasoning item's text, for the assistant message after it
  for (size_t i = 0; i < input->size() && !f.failed(); ++i) ReadItem(f, (*input)[i], i, messages, reasoning);
}

// Responses' flat function tools {type, name, description, parameters, strict} in chat's {type, function}.
void ReadTools(FieldReader& f, const Ordered& ordered, Ordered& chat) {
  const nlohmann::json* tools = f.Array("tools");
  if (tools == nullptr) return;
  Ordered out = Ordered::array();
  for (size_t i = 0; i < tools->size() && !f.failed(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const nlohmann::json& t = (*tools)[i];
    if (!t.is_object())
      return f.Fail(where, where + " must be a function tool object, got " + DescribeJson(t));
    FieldReader tf(t, where);
    const auto type = tf.String("type");
    if (!tf.failed() && type != "function") {
      tf.Fail("type", where + ".type: only \"function\" tools are supported by this server, got " +
                          (type ? "\"" + Excerpt(*type) + "\"" : std::string("nothing")));
    }
    const std::string name = Required(tf, "name", "a string");
    tf.String("description");
    tf.Object("parameters");
    tf.Bool("strict");
    f.Absorb(tf);
    if (f.failed()) return;
    const Ordered& given = ordered["tools"][i];
    Ordered fn = {{"name", name}};
    for (const char* key : {"description", "parameters", "strict"}) {
      if (given.contains(key) && !given[key].is_null()) fn[key] = given[key];
    }
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  chat["tools"] = std::move(out);
}

// "none" | "auto" | "required" | {"type": "function", "name"}.
void ReadToolChoice(FieldReader& f, Ordered& chat) {
  const nlohmann::json* c = f.Raw("tool_choice");
  if (c == nullptr || f.failed()) return;
  if (c->is_string()) {
    if (auto choice = f.Enum("tool_choice", {"none", "auto", "required"})) chat["tool_choice"] = *choice;
    return;
  }
  if (!c->is_object()) {
    return f.Fail("tool_choice",
                  "tool_choice must be \"none\", \"auto\", \"required\" or "
                  "{\"type\": \"function\", \"name\"}, got " +
                      DescribeJson(*c));
  }
  FieldReader cf(*c, "tool_choice");
  const auto type = cf.String("type");
  if (!cf.failed() && type != "function") {
    cf.Fail("type", "tool_choice.type: only \"function\" tool choices are supported by this server, got " +
                        (type ? "\"" + Excerpt(*type) + "\"" : std::string("nothing")));
  }
  const std::string name = Required(cf, "name", "the function's name");
  f.Absorb(cf);
  if (!f.failed()) chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
}

// text: {format: {type: "text" | "json_object" | "json_schema", name, schema, strict, description},
// verbosity} → chat's response_format.
void ReadText(FieldReader& f, const Ordered& ordered, Ordered& chat) {
  const nlohmann::json* text = f.Object("text");
  if (text == nullptr) return;
  FieldReader tf(*text, "text");
  tf.Enum("verbosity", {"low", "medium", "high"});
  if (const nlohmann::json* format = tf.Object("format")) {
    FieldReader ff(*format, "text.format");
    const auto type = ff.Enum("type", {"text", "json_object", "json_schema"});
    if (!ff.failed() && !type) ff.Fail("type", "text.format.type is required");
    ff.String("name");
    ff.String("description");
    ff.Bool("strict");
    if (type == "json_object") chat["response_format"] = {{"type", "json_object"}};
    if (type == "json_schema") {
      if (ff.Object("schema") == nullptr && !ff.failed()) {
        ff.Fail("schema", "text.format.schema is required when text.format.type is \"json_schema\"");
      }
      if (!ff.failed()) {
        const Ordered& given = ordered["text"]["format"];
        Ordered js = Ordered::object();
        for (const char* key : {"name", "description", "schema", "strict"}) {
          if (given.contains(key) && !given[key].is_null()) js[key] = given[key];
        }
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
      }
    }
    tf.Absorb(ff);
  }
  f.Absorb(tf);
}

// The fields lockstep accepts without acting on them, type-checked; and those it refuses.
void ReadAccepted(FieldReader& f, Ordered& chat) {
  if (const nlohmann::json* metadata = f.Object("metadata")) {
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_string()) {
        return f.Fail("metadata", "metadata values must be strings, got " + DescribeJson(value) + " for \"" +
                                      Excerpt(key) + "\"");
      }
    }
  }
  f.Bool("store");  // nothing is kept either way
  if (const nlohmann::json* reasoning = f.Object("reasoning")) {
    FieldReader rf(*reasoning, "reasoning");
    if (auto effort = rf.String("effort")) chat["reasoning_effort"] = *effort;  // for the template
    rf.String("summary");
    f.Absorb(rf);
  }
  f.Enum("truncation", {"auto", "disabled"});
  f.Object("stream_options");
  for (const char* name : {"service_tier", "prompt_cache_key", "safety_identifier"}) f.String(name);
  const std::string stateless = "lockstep keeps no responses; send the whole conversation as input";
  f.String("previous_response_id");
  f.Unsupported("previous_response_id", stateless);
  f.Unsupported("conversation", stateless);
  f.Bool("background");
  f.Unsupported("background", "lockstep keeps no responses to run or poll in the background");
  f.Unsupported("prompt", "prompt templates are stored by OpenAI; send instructions and input");
}

// include: OpenAI's names of extra output. "message.output_text.logprobs" asks for the text's logprobs
// (returned as true); the others name output lockstep never produces (tool call results, images, reasoning
// items), so there is nothing to add and they are accepted. Any other value is a 400 naming include[i].
bool ReadResponsesInclude(FieldReader& f) {
  static const char* const kIgnored[] = {"file_search_call.results",
                                         "web_search_call.results",
                                         "web_search_call.action.sources",
                                         "message.input_image.image_url",
                                         "computer_call_output.output.image_url",
                                         "code_interpreter_call.outputs",
                                         "reasoning.encrypted_content"};
  const nlohmann::json* include = f.Array("include");
  if (include == nullptr) return false;
  bool logprobs = false;
  for (size_t i = 0; i < include->size(); ++i) {
    const std::string where = "include[" + std::to_string(i) + "]";
    const nlohmann::json& v = (*include)[i];
    if (!v.is_string()) {
      f.Fail(where, where + " must be a string, got " + DescribeJson(v));
      return false;
    }
    const std::string& name = v.get_ref<const std::string&>();
    if (name == "message.output_text.logprobs") {
      logprobs = true;
    } else if (std::find(std::begin(kIgnored), std::end(kIgnored), name) == std::end(kIgnored)) {
      f.Fail(where, where + ": unknown value \"" + Excerpt(name) +
                        "\" (this server supports \"message.output_text.logprobs\")");
      return false;
    }
  }
  return logprobs;
}

// An error of the chat parser, named as the Responses field it came from.
ApiError RenameChatError(ApiError error) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"response_format.json_schema.schema", "text.format.schema"},
      {"response_format.json_schema", "text.format"},
      {"response_format", "text.format"},
      {"max_completion_tokens", "max_output_tokens"},
      {"reasoning_effort", "reasoning.effort"},
      {"messages", "input"},
      {".function.", "."},  // tools[i].function.parameters
  };
  const auto rename = [](std::string s) {
    for (const auto& [from, to] : kNames) {
      for (size_t at = s.find(from); at != std::string::npos;
           at = s.find(from, at + std::string(to).size())) {
        s.replace(at, std::string(from).size(), to);
      }
    }
    return s;
  };
  error.param = rename(error.param);
  error.status = Status(error.status.code(), rename(error.status.message()));
  return error;
}

// The Response fields that repeat the request, with OpenAI's defaults (temperature and top_p: those the
// request samples with, the server's defaults where it sets none).
nlohmann::json Echo(const nlohmann::json& body, const SamplingParams& sampling) {
  const auto given = [&](const char* key, nlohmann::json fallback) {
    return body.contains(key) && !body[key].is_null() ? body[key] : fallback;
  };
  nlohmann::json text = given("text", nlohmann::json::object());
  if (!text.contains("format") || text["format"].is_null()) text["format"] = {{"type", "text"}};
  nlohmann::json reasoning = given("reasoning", nlohmann::json::object());
  return {{"instructions", given("instructions", nullptr)},
          {"max_output_tokens", given("max_output_tokens", nullptr)},
          {"temperature", given("temperature", sampling.temperature)},
          {"top_p", given("top_p", sampling.top_p)},
          {"tools", given("tools", nlohmann::json::array())},
          {"tool_choice", given("tool_choice", "auto")},
          {"text", std::move(text)},
          {"parallel_tool_calls", given("parallel_tool_calls", true)},
          {"metadata", given("metadata", nlohmann::json::object())},
          {"user", given("user", nullptr)},
          {"reasoning",
           {{"effort", reasoning.value("effort", nlohmann::json())},
            {"summary", reasoning.value("summary", nlohmann::json())}}},
          {"truncation", given("truncation", "disabled")},
          {"store", false},  // lockstep keeps nothing
          {"background", false},
          {"previous_response_id", nullptr},
          {"error", nullptr},
          {"incomplete_details", nullptr}};
}

}  // namespace

Parsed<ResponsesRequest> ParseResponsesRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  const nlohmann::json& b = *json.value;
  // The same text order-preserving, for the schemas of tools and text.format (ParseJsonObject accepted it).
  const Ordered ordered = Ordered::parse(body, nullptr, /*allow_exceptions=*/false);
  FieldReader f(b);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  Ordered chat = Ordered::object();
  ReadAccepted(f, chat);
  const bool logprobs = ReadResponsesInclude(f);
  const auto top_logprobs = f.Int("top_logprobs", 0, kMaxTopLogprobs);
  for (const char* key : kSharedFields) {
    if (ordered.contains(key)) chat[key] = ordered[key];
  }
  if (logprobs) {  // chat's own fields; top_logprobs without the include asks for nothing (as vLLM)
    chat["logprobs"] = true;
    chat["top_logprobs"] = top_logprobs.value_or(0);
  }
  if (auto max = f.Int("max_output_tokens", 1, INT32_MAX)) chat["max_completion_tokens"] = *max;
  Ordered messages = Ordered::array();
  if (auto instructions = f.String("instructions")) {
    messages.push_back({{"role", "system"}, {"content", *instructions}});
  }
  ReadInput(f, messages);
  ReadTools(f, ordered, chat);
  ReadToolChoice(f, chat);
  ReadText(f, ordered, chat);
  if (f.failed()) return f.error();
  chat["messages"] = std::move(messages);
  auto parsed = ParseChatRequest(chat.dump(-1, ' ', false, Ordered::error_handler_t::replace), ctx);
  if (!parsed.ok()) return RenameChatError(parsed.error);
  nlohmann::json echo = Echo(b, parsed.value->spec.base.sampling);
  return ResponsesRequest{std::move(*parsed.value), std::move(echo)};
}

}  // namespace lockstep::server
