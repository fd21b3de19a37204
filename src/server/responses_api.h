// OpenAI's Responses API, POST /v1/responses, on the chat machinery: a Responses body is checked field by
// field (FieldReader: a wrong type is a 400 naming the Responses field, `input[2].content[0].text`), then
// rewritten as the chat-completions request it means — `instructions` a system message first, `input` items
// messages (function_call items an assistant message's tool_calls, function_call_output items tool
// messages, reasoning items the next assistant message's reasoning_content), flat function tools in chat's
// {type, function} shape, `text.format` as response_format, `max_output_tokens` as max_completion_tokens —
// and parsed by ParseChatRequest, so the template, sampling fields, tool grammar and structured outputs are
// chat's own; an error found there is renamed back to the Responses field. Unknown fields are ignored, as on
// the other OpenAI routes. lockstep stores nothing: `previous_response_id`, `conversation` and `"background":
// true` are refused (400).
//
// The answer is a Response object: `output` holds a reasoning item (reasoning_text: the reply's <think>
// block, split out as chat's reasoning_content is, chat/reasoning.h), then a message item (output_text)
// and/or function_call items (server/tool_calls.h parses the model's text as for chat), status "completed",
// or "incomplete" with incomplete_details.reason "max_output_tokens" (or lockstep's "timeout" / "abort", as
// the finish reasons of docs/server.md). Streamed, it is a sequence of typed SSE events (`event: <type>` +
// data with `type` and `sequence_number`) ending with response.completed / response.incomplete /
// response.failed; no [DONE].
//
// Pure functions and a per-request stream state; ResponsesStream is used by one strand at a time.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/generation.h"
#include "server/openai_api.h"

namespace lockstep::server {

struct ResponsesRequest {
  OpenAiRequest chat;   // the request as /v1/chat/completions runs it (spec, tools, stream)
  nlohmann::json echo;  // the Response fields that repeat the request (instructions, tools, text, ...)
};

Parsed<ResponsesRequest> ParseResponsesRequest(const std::string& body, const ApiContext& ctx);

// Whether the output_text part carries logprobs: include has "message.output_text.logprobs" and no tool
// call or reasoning can be parsed out of the text (tools given and tool_choice not "none", or reasoning split
// out: then none, documented).
bool ResponsesTextLogprobs(const ResponsesRequest& req);

// The whole (non-streamed) Response object of a finished job.
nlohmann::json ResponsesResponse(const ResponsesRequest& req, GenerationJob& job, const ApiContext& ctx,
                                 const std::string& id, int64_t created_at);

// The events of one streamed response, as SSE text. Begin() once the stream has started; OnEvent() for
// every token event of the (single) choice; Finish() once the job is done. A generation error ends the
// stream with response.failed (then Finish() adds nothing).
class ResponsesStream {
 public:
  // Shares the request; `ctx` must outlive the stream (the server's does).
  ResponsesStream(std::shared_ptr<const ResponsesRequest> req, const ApiContext& ctx, std::string id,
                  int64_t created_at);
  std::string Begin();
  std::string OnEvent(const ChoiceState& choice, const TokenEvent& event);
  std::string Finish(GenerationJob& job);

 private:
  struct Call {
    std::string call_id, name, arguments;
  };
  std::string Emit(const std::string& type, nlohmann::json data);
  std::string Fail(const std::string& message);  // response.failed
  std::string OpenMessage();
  std::string Text(const std::string& delta, bool flush = false);
  const nlohmann::json* Logprobs() const;  // the text's logprobs so far; null when not asked for
  std::string CloseMessage();
  std::string Reasoning(const std::string& delta);  // opens the reasoning item (output 0) at its first
  std::string CloseReasoning(const char* status);
  std::string AddCall(const nlohmann::json& delta);  // an OpenAI tool_calls delta with the call's id
  std::string Arguments(size_t k, const std::string& delta);
  int CallIndex(size_t k) const;  // call k's output_index
  // OnEvent for a Harmony reply (server/harmony_reply.h); `text`: the reply so far, this event's included.
  std::string HarmonyEvent(std::string_view text, const TokenEvent& event);
  nlohmann::json Output() const;

  std::shared_ptr<const ResponsesRequest> request_;
  const ResponsesRequest& req_;  // *request_
  const ApiContext& ctx_;
  std::string id_;
  int64_t created_at_;
  int sequence_ = 0;
  bool first_ = true;
  bool failed_ = false;
  const char* item_status_ = "completed";
  bool reasoning_item_ = false;  // a reasoning item was opened (it is output 0)
  bool reasoning_open_ = false;
  const char* reasoning_status_ = "completed";  // once closed
  std::string reasoning_;
  int message_index_ = -1;  // the message's output_index; -1 while none was opened
  bool message_open_ = false;
  std::string text_;
  std::vector<Call> calls_;
  bool with_logprobs_;                                         // ResponsesTextLogprobs
  nlohmann::json logprobs_ = nlohmann::json::array();          // the text's, as sent in deltas
  nlohmann::json pending_logprobs_ = nlohmann::json::array();  // tokens whose delta is not sent yet
};

}  // namespace lockstep::server
