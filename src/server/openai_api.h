// OpenAI-compatible API: parsing + validation of POST /v1/completions and /v1/chat/completions bodies into a
// GenerationSpec, and the response / stream-chunk JSON shapes (including logprobs in OpenAI's two formats).
// Pure functions over their arguments; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/fan_out.h"
#include "server/generation.h"
#include "server/tool_calls.h"

namespace lockstep::server {

struct OpenAiRequest {
  bool chat = false;
  GenerationSpec spec;
  bool stream = false;
  bool include_usage = false;
  int logprobs = -1;           // completions: top-N alternatives per token (0..5); -1 = no logprobs
  bool chat_logprobs = false;  // chat: logprobs requested
  int top_logprobs = 0;        // chat: 0..20
  bool echo = false;           // completions: the prompt text is prepended to each choice (with logprobs:
                               // the prompt's tokens lead each choice's logprobs, the first one null)
  int prompt_logprobs = -1;    // vLLM's prompt_logprobs: 0..20 alternatives per prompt token; -1 = none
  std::vector<std::string> prompt_texts;
  std::vector<bool> prompt_is_ids;  // completions: prompt i came as token ids (its text is their decoding)
  FanOut fan_out;  // "fan_out": the questions, one prompt each, when the prompt was split (server/fan_out.h)
  ToolSpec tools;  // chat: tools / tool_choice (server/tool_calls.h)
  bool mistral_ids = false;  // chat: tool call ids of 9 alphanumerics (Mistral-family templates)
  // chat: the template's variables besides messages and tools (--chat-template-kwargs, then the request's
  // chat_template_kwargs).
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  // chat: replies' reasoning blocks (between reasoning_tags: <think> or the template's [THINK]) are returned
  // as reasoning_content (chat/reasoning.h); reasoning_opened: the prompt opened the block. Off under an
  // output constraint other than a GBNF grammar (the constraint holds from the first token, so a JSON reply
  // would be taken for reasoning when the prompt opened a block).
  bool reasoning = false;
  chat::ReasoningTags reasoning_tags = chat::kThinkTags;
  bool reasoning_opened = false;
  // chat: the template writes Harmony (gpt-oss; chat/harmony.h) and the reasoning format is not "none":
  // replies are split by their messages (server/harmony_reply.h) instead of <think> blocks and the tool-call
  // formats, their special tokens kept in the text. Off, like `reasoning`, under an output constraint other
  // than a GBNF grammar and under forced tool choices (the reply is then JSON from its first token).
  bool harmony = false;
};

Parsed<OpenAiRequest> ParseCompletionRequest(const std::string& body, const ApiContext& ctx);
// kTemplateOnly (/apply-template, llama.cpp's): the body is checked and its template rendered into
// prompt_texts, but the prompt is not tokenized and not fitted to the context, so a conversation longer than
// the context, or text the vocabulary cannot spell, still renders; spec.prompts stays empty.
enum class ChatParse { kGenerate, kTemplateOnly };
Parsed<OpenAiRequest> ParseChatRequest(const std::string& body, const ApiContext& ctx,
                                       ChatParse mode = ChatParse::kGenerate);

// "stop" | "length" | "timeout" (cut at --timeout) | "abort" (cut by a server shutdown) | null (error).
nlohmann::json OpenAiFinishReason(ChoiceEnd end);

// One token's entry of chat's logprobs.content (also the Responses API's output_text logprobs):
// {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}, for an event with a token.
nlohmann::json ChatLogprobEntry(const ApiContext& ctx, const TokenEvent& e);

// The whole (non-streamed) response.
nlohmann::json OpenAiResponse(const OpenAiRequest& req, GenerationJob& job, const ApiContext& ctx,
                              const std::string& id, int64_t created);
// One stream chunk for a token event of `choice` (nullopt when there is nothing to send).
std::optional<nlohmann::json> OpenAiChunk(const OpenAiRequest& req, const ChoiceState& choice,
                                          const TokenEvent& event, bool first_for_choice,
                                          const ApiContext& ctx, const std::string& id, int64_t created);
// A tool-enabled chat chunk in the shape OpenAI streams (and its client's ChatCompletionStream expects): each
// tool call in a chunk of its own, after any role / content / logprobs, and the finish reason alone in a
// last chunk with an empty delta. Any other chunk is returned as it is.
std::vector<nlohmann::json> SplitToolChunk(const OpenAiRequest& req, nlohmann::json chunk);
// The usage-only last chunk (stream_options.include_usage).
nlohmann::json OpenAiUsageChunk(const OpenAiRequest& req, GenerationJob& job, const ApiContext& ctx,
                                const std::string& id, int64_t created);
// The `data: [DONE]`-preceding models list of GET /v1/models.
nlohmann::json OpenAiModels(const ApiContext& ctx);

}  // namespace lockstep::server
