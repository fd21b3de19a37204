// The small routes scripts use beside generation, in the request and response shapes of llama.cpp's server
// and vLLM (docs/server.md has examples):
//   POST /tokenize        llama.cpp: {content: string | [string | id, ...], add_special?: false,
//                         with_pieces?: false} → {tokens: [id] | [{id, piece}]} (a piece that is not valid
//                         UTF-8 is an array of its bytes).
//                         vLLM: {prompt: string, add_special_tokens?: true, return_token_strs?: false} or
//                         {messages, add_generation_prompt?: true, ...} (the chat template applied and the
//                         prompt tokenized exactly as /v1/chat/completions would) → {count, max_model_len,
//                         tokens, token_strs?}.
//   POST /detokenize      {tokens: [id]} → {content, prompt} (llama.cpp reads content, vLLM prompt); special
//                         tokens keep their text.
//   POST /apply-template  llama.cpp: a chat-completions body → {prompt}: the chat template's output, not
//                         tokenized nor fitted to the context (a conversation longer than it renders),
//                         nothing generated.
// Special-token text in text input is parsed as special tokens (as both servers do). Every field is
// type-checked; errors name the field (400). Pure functions over their arguments; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_context.h"
#include "server/api_error.h"

namespace lockstep::server {

Parsed<nlohmann::json> TokenizeResponse(const std::string& body, const ApiContext& ctx);
Parsed<nlohmann::json> DetokenizeResponse(const std::string& body, const ApiContext& ctx);
Parsed<nlohmann::json> ApplyTemplateResponse(const std::string& body, const ApiContext& ctx);

}  // namespace lockstep::server
