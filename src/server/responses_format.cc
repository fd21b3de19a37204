// Response shapes of POST /v1/responses: the Response object, its output items and usage, and the typed
// events of a streamed response (server/responses_api.h).
#include <algorithm>
#include <string_view>
#include <utility>

#include "chat/reasoning.h"
#include "server/harmony_reply.h"
#include "server/request_fields.h"
#include "server/responses_api.h"
#include "server/sse.h"
#include "server/tool_calls.h"

namespace lockstep::server {
namespace {

// The hex part of a response id ("resp_0123..." → "0123..."): item ids share it.
std::string IdSuffix(const std::string& id) {
  const size_t at = id.find('_');
  return at == std::string::npos ? id : id.substr(at + 1);
}

std::string MessageId(const std::string& id) { return "msg_" + IdSuffix(id); }
std::string ReasoningId(const std::string& id) { return "rs_" + IdSuffix(id); }
std::string CallItemId(const std::string& id, size_t k) {
  return "fc_" + IdSuffix(id) + "_" + std::to_string(k);
}
// What seeds the call ids: the same for a stream and its whole response.
std::string ToolIdSeed(const std::string& id) { return id + "#0"; }

// An output_text part; with `logprobs` (one entry per token of the text) when they were asked for.
nlohmann::json TextPart(const std::string& text, const nlohmann::json* logprobs = nullptr) {
  nlohmann::json part = {{"type", "output_text"}, {"text", text}, {"annotations", nlohmann::json::array()}};
  if (logprobs != nullptr) part["logprobs"] = *logprobs;
  return part;
}

nlohmann::json MessageItem(const std::string& id, const std::string* text, const char* status,
                           const nlohmann::json* logprobs = nullptr) {
  return {{"type", "message"},
          {"id", MessageId(id)},
          {"status", status},
          {"role", "assistant"},
          {"content",
           text == nullptr ? nlohmann::json::array() : nlohmann::json::array({TextPart(*text, logprobs)})}};
}

nlohmann::json ReasoningPart(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

nlohmann::json ReasoningItem(const std::string& id, const std::string* text, const char* status) {
  return {
      {"type", "reasoning"},
      {"id", ReasoningId(id)},
      {"summary", nlohmann::json::array()},
      {"content", text == nullptr ? nlohmann::json::array() : nlohmann::json::array({ReasoningPart(*text)})},
      {"status", status}};
}

// The reply's text split into reasoning and the rest, when the request splits it (chat/reasoning.h).
chat::ReasoningSplit SplitReply(const OpenAiRequest& chat, std::string_view text, bool final) {
  if (!chat.reasoning) return {std::nullopt, std::string(text)};
  return chat::SplitReasoning(text, chat.reasoning_tags, chat.reasoning_opened, final);
}

nlohmann::json CallItem(const std::string& id, size_t k, const std::string& call_id, const std::string& name,
                        const std::string& arguments, const char* status) {
  return {{"type", "function_call"}, {"id", CallItemId(id, k)}, {"call_id", call_id}, {"name", name},
          {"arguments", arguments},  {"status", status}};
}

nlohmann::json ResponsesUsage(GenerationJob& job) {
  const int input = job.prompt_tokens();
  const int output = job.completion_tokens();
  return {{"input_tokens", input},
          {"input_tokens_details", {{"cached_tokens", job.cached_tokens()}}},
          {"output_tokens", output},
          {"output_tokens_details", {{"reasoning_tokens", job.reasoning_tokens()}}},
          {"total_tokens", input + output}};
}

// "completed", "incomplete" (cut short: by max_output_tokens or the context, or by the server) or "failed".
const char* ResponseStatus(ChoiceEnd end) {
  switch (end) {
    case ChoiceEnd::kStop:
      return "completed";
    case ChoiceEnd::kLength:
    case ChoiceEnd::kTimeout:
    case ChoiceEnd::kAbort:
      return "incomplete";
    default:
      return "failed";
  }
}

nlohmann::json IncompleteDetails(ChoiceEnd end) {
  switch (end) {
    case ChoiceEnd::kLength:
      return {{"reason", "max_output_tokens"}};
    case ChoiceEnd::kTimeout:
      return {{"reason", "timeout"}};  // lockstep's, as its finish reasons (docs/server.md)
    case ChoiceEnd::kAbort:
      return {{"reason", "abort"}};
    default:
      return nullptr;
  }
}

nlohmann::json ResponseObject(const ResponsesRequest& req, const ApiContext& ctx, const std::string& id,
                              int64_t created_at, const char* status, nlohmann::json output) {
  nlohmann::json out = req.echo;
  out["id"] = id;
  out["object"] = "response";
  out["created_at"] = created_at;
  out["status"] = status;
  out["model"] = ctx.model_id;
  out["output"] = std::move(output);
  out["usage"] = nullptr;
  return out;
}

nlohmann::json Finished(const ResponsesRequest& req, GenerationJob& job, const ApiContext& ctx,
                        const std::string& id, int64_t created_at, nlohmann::json output) {
  const ChoiceEnd end = job.choices()[0].end;
  nlohmann::json out = ResponseObject(req, ctx, id, created_at, ResponseStatus(end), std::move(output));
  out["incomplete_details"] = IncompleteDetails(end);
  out["usage"] = ResponsesUsage(job);
  return out;
}

}  // namespace

// The message text carries logprobs when include asked for them and no tool call can be parsed out of the
// text (which tokens made which part of a text split into content and calls is not kept).
bool ResponsesTextLogprobs(const ResponsesRequest& req) {
  return req.chat.chat_logprobs && !req.chat.tools.calls_possible() && !req.chat.reasoning &&
         !req.chat.harmony;
}

nlohmann::json ResponsesResponse(const ResponsesRequest& req, GenerationJob& job, const ApiContext& ctx,
                                 const std::string& id, int64_t created_at) {
  const ChoiceState& c = job.choices()[0];
  chat::ReasoningSplit split;
  ToolOutput parsed;
  bool reasoning_closed = false;
  if (req.chat.harmony) {  // server/harmony_reply.h
    HarmonyReply reply = HarmonyWhole(req.chat.tools, c.text, ToolIdSeed(id), req.chat.mistral_ids);
    split.reasoning = std::move(reply.reasoning);
    parsed = std::move(reply.output);
    reasoning_closed =
        parsed.content.value_or("") != "" || !parsed.calls.empty() || c.end == ChoiceEnd::kStop;
  } else {
    split = SplitReply(req.chat, c.text, /*final=*/true);
    reasoning_closed =
        !split.content.empty() || c.text.find(req.chat.reasoning_tags.close) != std::string::npos;
    if (req.chat.tools.calls_possible()) {
      parsed = ParseToolOutput(req.chat.tools, split.content, ToolIdSeed(id), req.chat.mistral_ids);
    } else {
      parsed.content = split.content;
    }
  }
  const char* status = c.end == ChoiceEnd::kStop ? "completed" : "incomplete";
  nlohmann::json logprobs = nlohmann::json::array();
  const bool with_logprobs = ResponsesTextLogprobs(req);
  if (with_logprobs) {
    for (const TokenEvent& e : c.events) {
      if (e.token != kNoToken) logprobs.push_back(ChatLogprobEntry(ctx, e));
    }
  }
  nlohmann::json output = nlohmann::json::array();
  if (split.reasoning) {  // a block cut short is all reasoning, and closed
    output.push_back(ReasoningItem(id, &*split.reasoning, reasoning_closed ? "completed" : status));
  }
  if (parsed.content)
    output.push_back(MessageItem(id, &*parsed.content, status, with_logprobs ? &logprobs : nullptr));
  for (size_t k = 0; k < parsed.calls.size(); ++k) {
    const ToolCall& call = parsed.calls[k];
    output.push_back(CallItem(id, k, call.id, call.name, call.arguments, status));
  }
  return Finished(req, job, ctx, id, created_at, std::move(output));
}

ResponsesStream::ResponsesStream(std::shared_ptr<const ResponsesRequest> req, const ApiContext& ctx,
                                 std::string id, int64_t created_at)
    : request_(std::move(req)),
      req_(*request_),
      ctx_(ctx),
      id_(std::move(id)),
      created_at_(created_at),
      with_logprobs_(ResponsesTextLogprobs(req_)) {}

const nlohmann::json* ResponsesStream::Logprobs() const { return with_logprobs_ ? &logprobs_ : nullptr; }

std::string ResponsesStream::Emit(const std::string& type, nlohmann::json data) {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  return SseEvent(DumpJson(data), type);
}

std::string ResponsesStream::Begin() {
  const nlohmann::json r =
      ResponseObject(req_, ctx_, id_, created_at_, "in_progress", nlohmann::json::array());
  std::string out = Emit("response.created", {{"response", r}});
  return out + Emit("response.in_progress", {{"response", r}});
}

std::string ResponsesStream::Reasoning(const std::string& delta) {
  std::string out;
  const nlohmann::json where = {{"item_id", ReasoningId(id_)}, {"output_index", 0}, {"content_index", 0}};
  if (!reasoning_item_) {
    reasoning_item_ = reasoning_open_ = true;
    out += Emit("response.output_item.added",
                {{"output_index", 0}, {"item", ReasoningItem(id_, nullptr, "in_progress")}});
    nlohmann::json part = where;
    part["part"] = ReasoningPart("");
    out += Emit("response.content_part.added", std::move(part));
  }
  if (delta.empty() || !reasoning_open_) return out;
  reasoning_ += delta;
  nlohmann::json d = where;
  d["delta"] = delta;
  return out + Emit("response.reasoning_text.delta", std::move(d));
}

std::string ResponsesStream::CloseReasoning(const char* status) {
  if (!reasoning_open_) return "";
  reasoning_open_ = false;
  reasoning_status_ = status;
  const nlohmann::json where = {{"item_id", ReasoningId(id_)}, {"output_index", 0}, {"content_index", 0}};
  nlohmann::json done = where;
  done["text"] = reasoning_;
  std::string out = Emit("response.reasoning_text.done", std::move(done));
  nlohmann::json part = where;
  part["part"] = ReasoningPart(reasoning_);
  out += Emit("response.content_part.done", std::move(part));
  return out + Emit("response.output_item.done",
                    {{"output_index", 0}, {"item", ReasoningItem(id_, &reasoning_, status)}});
}

std::string ResponsesStream::OpenMessage() {
  if (message_index_ >= 0) return "";
  message_index_ = static_cast<int>(calls_.size()) + (reasoning_item_ ? 1 : 0);
  message_open_ = true;
  std::string out = Emit("response.output_item.added", {{"output_index", message_index_},
                                                        {"item", MessageItem(id_, nullptr, "in_progress")}});
  return out + Emit("response.content_part.added", {{"item_id", MessageId(id_)},
                                                    {"output_index", message_index_},
                                                    {"content_index", 0},
                                                    {"part", TextPart("", Logprobs())}});
}

// A delta with the logprobs of the tokens since the last one (a token's text may come later: held back for a
// stop string or an unfinished character). `flush`: a last delta, sent even without text to carry them.
std::string ResponsesStream::Text(const std::string& delta, bool flush) {
  if (delta.empty() && !(flush && !pending_logprobs_.empty())) return "";
  std::string out = OpenMessage();
  text_ += delta;
  for (const nlohmann::json& e : pending_logprobs_) logprobs_.push_back(e);
  nlohmann::json lp = std::exchange(pending_logprobs_, nlohmann::json::array());
  return out + Emit("response.output_text.delta", {{"item_id", MessageId(id_)},
                                                   {"output_index", message_index_},
                                                   {"content_index", 0},
                                                   {"delta", delta},
                                                   {"logprobs", std::move(lp)}});
}

std::string ResponsesStream::CloseMessage() {
  if (!message_open_) return "";
  std::string out = Text("", /*flush=*/true);
  message_open_ = false;
  const nlohmann::json where = {
      {"item_id", MessageId(id_)}, {"output_index", message_index_}, {"content_index", 0}};
  nlohmann::json done = where;
  done["text"] = text_;
  done["logprobs"] = logprobs_;
  out += Emit("response.output_text.done", std::move(done));
  nlohmann::json part = where;
  part["part"] = TextPart(text_, Logprobs());
  out += Emit("response.content_part.done", std::move(part));
  return out +
         Emit("response.output_item.done", {{"output_index", message_index_},
                                            {"item", MessageItem(id_, &text_, item_status_, Logprobs())}});
}

int ResponsesStream::CallIndex(size_t k) const {
  const int index = static_cast<int>(k) + (reasoning_item_ ? 1 : 0);
  return index + (message_index_ >= 0 && message_index_ <= index ? 1 : 0);
}

std::string ResponsesStream::AddCall(const nlohmann::json& delta) {
  const nlohmann::json& fn = delta["function"];
  calls_.push_back({delta["id"].get<std::string>(), fn["name"].get<std::string>(), ""});
  const size_t k = calls_.size() - 1;
  std::string out = Emit("response.output_item.added",
                         {{"output_index", CallIndex(k)},
                          {"item", CallItem(id_, k, calls_[k].call_id, calls_[k].name, "", "in_progress")}});
  return out + Arguments(k, fn.value("arguments", ""));
}

std::string ResponsesStream::Arguments(size_t k, const std::string& delta) {
  if (delta.empty() || k >= calls_.size()) return "";
  calls_[k].arguments += delta;
  return Emit("response.function_call_arguments.delta",
              {{"item_id", CallItemId(id_, k)}, {"output_index", CallIndex(k)}, {"delta", delta}});
}

std::string ResponsesStream::OnEvent(const ChoiceState& choice, const TokenEvent& event) {
  if (failed_) return "";
  if (event.finish_reason == FinishReason::kError) return Fail("generation failed: " + event.error);
  const bool first = first_;
  first_ = false;
  if (event.last()) item_status_ = choice.end == ChoiceEnd::kStop ? "completed" : "incomplete";
  if (with_logprobs_ && event.token != kNoToken) pending_logprobs_.push_back(ChatLogprobEntry(ctx_, event));
  // The reply's content before and after this event (its text, when reasoning is not split out), and the
  // reasoning it adds.
  const std::string_view text = choice.text;
  if (req_.chat.harmony) return HarmonyEvent(text, event);
  const chat::ReasoningSplit before =
      SplitReply(req_.chat, text.substr(0, text.size() - event.text_delta.size()),
                 /*final=*/false);
  const chat::ReasoningSplit after = SplitReply(req_.chat, text, event.last());
  std::string out;
  if (after.reasoning) out += Reasoning(after.reasoning->substr(before.reasoning.value_or("").size()));
  if (after.content.size() > before.content.size()) out += CloseReasoning("completed");  // the answer began
  const ToolSpec& tools = req_.chat.tools;
  if (!tools.calls_possible()) return out + Text(after.content.substr(before.content.size()));
  ToolStreamDelta d = ToolStreamStep(tools, before.content, after.content, first, event.last(),
                                     ToolIdSeed(id_), req_.chat.mistral_ids);
  out += Text(d.content);
  if (!d.tool_calls.is_array()) return out;
  out += CloseMessage();  // content comes before the calls
  for (const nlohmann::json& call : d.tool_calls) {
    const size_t k = call["index"].get<size_t>();
    if (call.contains("id")) {
      out += AddCall(call);
    } else {
      out += Arguments(k, call["function"].value("arguments", ""));
    }
  }
  return out;
}

std::string ResponsesStream::HarmonyEvent(std::string_view text, const TokenEvent& event) {
  HarmonyDelta d = HarmonyStreamStep(req_.chat.tools, text.substr(0, text.size() - event.text_delta.size()),
                                     text, event.last(), ToolIdSeed(id_), req_.chat.mistral_ids);
  std::string out;
  if (!d.reasoning.empty()) out += Reasoning(d.reasoning);
  if (!d.tool.content.empty() || d.tool.tool_calls.is_array()) out += CloseReasoning("completed");
  out += Text(d.tool.content);
  if (!d.tool.tool_calls.is_array()) return out;
  out += CloseMessage();  // content comes before the calls
  for (const nlohmann::json& call : d.tool.tool_calls) out += AddCall(call);
  return out;
}

std::string ResponsesStream::Fail(const std::string& message) {
  failed_ = true;
  nlohmann::json r = ResponseObject(req_, ctx_, id_, created_at_, "failed", Output());
  r["error"] = {{"code", "server_error"}, {"message", message}};
  return Emit("response.failed", {{"response", std::move(r)}});
}

nlohmann::json ResponsesStream::Output() const {
  nlohmann::json output = nlohmann::json::array();
  if (reasoning_item_)
    output.push_back(ReasoningItem(id_, &reasoning_, reasoning_open_ ? item_status_ : reasoning_status_));
  const int base = reasoning_item_ ? 1 : 0;
  for (size_t k = 0; k < calls_.size(); ++k) {
    if (message_index_ == base + static_cast<int>(k))
      output.push_back(MessageItem(id_, &text_, item_status_, Logprobs()));
    output.push_back(CallItem(id_, k, calls_[k].call_id, calls_[k].name, calls_[k].arguments, item_status_));
  }
  if (message_index_ == base + static_cast<int>(calls_.size())) {
    output.push_back(MessageItem(id_, &text_, item_status_, Logprobs()));
  }
  return output;
}

std::string ResponsesStream::Finish(GenerationJob& job) {
  if (failed_) return "";
  const ChoiceEnd end = job.choices()[0].end;
  if (end == ChoiceEnd::kError) return Fail("generation failed");
  item_status_ = end == ChoiceEnd::kStop ? "completed" : "incomplete";
  // A block still open at the end was cut short (unless the reply closed it and wrote nothing after).
  const bool closed = req_.chat.harmony
                          ? end == ChoiceEnd::kStop
                          : job.choices()[0].text.find(req_.chat.reasoning_tags.close) != std::string::npos;
  std::string out = CloseReasoning(closed ? "completed" : item_status_);
  if (calls_.empty()) out += OpenMessage();  // an empty answer is an empty message, as in the whole response
  out += CloseMessage();
  for (size_t k = 0; k < calls_.size(); ++k) {
    const Call& call = calls_[k];
    out += Emit("response.function_call_arguments.done", {{"item_id", CallItemId(id_, k)},
                                                          {"output_index", CallIndex(k)},
                                                          {"name", call.name},
                                                          {"arguments", call.arguments}});
    out += Emit("response.output_item.done",
                {{"output_index", CallIndex(k)},
                 {"item", CallItem(id_, k, call.call_id, call.name, call.arguments, item_status_)}});
  }
  const nlohmann::json r = Finished(req_, job, ctx_, id_, created_at_, Output());
  return out +
         Emit(end == ChoiceEnd::kStop ? "response.completed" : "response.incomplete", {{"response", r}});
}

}  // namespace lockstep::server
