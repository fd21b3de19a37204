// ApiContext: what the API layers (OpenAI, TGI) need to know about the loaded model — tokenizer, chat
// template, model id and limits — plus the prompt helpers shared by both. Immutable after the server starts;
// shared by every I/O thread (Tokenizer and ChatTemplate are thread-safe for const use).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/reasoning.h"
#include "model/model_config.h"
#include "server/api_error.h"
#include "server/grammar_cache.h"
#include "server/lora_adapters.h"
#include "server/sampling_defaults.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::server {

struct ApiContext {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const chat::ChatTemplate> chat_template;
  std::string model_id;                // the id responses report (the first of model_ids)
  std::vector<std::string> model_ids;  // every id a request's "model" may name (--model-alias)
  std::string model_path;
  std::string architecture;
  std::string dtype;
  // Tokens of context (prompt + generation) a request may use: the model's (or --max-context's), or the KV
  // cache's size where that is smaller (kv_limited), as vLLM caps max_model_len to what its cache holds.
  int32_t max_context = 0;
  bool kv_limited = false;
  int32_t vocab_size = 0;
  int64_t embedding_length = 0;  // the model's n_embd: an embedding's values
  int64_t created = 0;           // unix time the server started
  int max_queue = 0;
  int max_seqs = 0;
  int draft_tokens = 0;         // speculative decoding: tokens drafted per step (0: off)
  bool prefix_caching = false;  // the engine reuses shared prompt prefixes (GET /info, /health)
  // Its prefix cache needs recurrent state snapshots (qwen35): chat requests say where their system
  // message ends (server/shared_prefix_hint.h).
  bool prefix_hints = false;
  Pooling pooling = Pooling::kLast;  // how the embeddings routes pool a prompt (--pooling)
  // Reranking (server/rerank_api.h): the model has a classifier head (the file's, or yes/no tokens'
  // rows with --reranking); the pair prompt's template ({query}, {document}; "" = [BOS] q [EOS] [SEP] d
  // [EOS]); the vocabulary's separator token (-1: none).
  bool can_rank = false;
  std::string rerank_template;
  int32_t sep_id = -1;
  std::shared_ptr<GrammarCache> grammars;  // structured outputs and tool choices (thread-safe)
  // The vocabulary's tool-call markers that are control tokens (server/tool_calls.h ToolMarkerTokens):
  // auto-mode tool requests keep their text in the output.
  std::vector<int32_t> tool_marker_tokens;
  // The chat template's tool-call syntax, for forced choices' grammars (server/tool_grammar.h).
  ToolSyntax tool_syntax = ToolSyntax::kJson;
  // The vocabulary's Harmony special tokens that are control tokens (server/harmony_reply.h HarmonyTokens):
  // requests under a Harmony template keep their text in the output.
  std::vector<int32_t> harmony_tokens;
  // The vocabulary's reasoning tags that are control tokens (chat::kReasoningTagPieces: Ministral 3's [THINK]
  // and [/THINK]): requests whose replies are split keep their text in the output.
  std::vector<int32_t> reasoning_tag_tokens;
  // Chat: the variables every template rendering sees (--chat-template-kwargs), and whether replies'
  // reasoning blocks are split out when a request does not say (--reasoning-format; chat/reasoning.h).
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  chat::ReasoningFormat reasoning_format = chat::ReasoningFormat::kAuto;
  std::shared_ptr<LoraScales> lora;  // LoRA adapters and their global scales (thread-safe)
  // What requests get for the sampling fields they leave out (serve --temp, --top-k, --dry-* ...), prepared
  // for the tokenizer.
  SamplingDefaults sampling_defaults;
};

// Tokenizes a prompt: special-token text is parsed, BOS added as the vocabulary says (never doubled when the
// text already starts with it). Errors name `param`.
Parsed<std::vector<int32_t>> EncodePrompt(const ApiContext& ctx, const std::string& text,
                                          const std::string& param);

// llama.cpp's mixed prompt: a string, or an array of strings and token ids concatenated (what its /tokenize
// and /completion read). Strings are tokenized with special-token text parsed; `bos_first` adds BOS (as the
// vocabulary's add_bos says nothing here) to the first element when it is a string. parse_special false:
// special-token text in the strings stays text (llama.cpp's /infill prefix and suffix). Errors name `param`
// or `param[i]`.
Parsed<std::vector<int32_t>> EncodeMixed(const ApiContext& ctx, const nlohmann::json& value, bool bos_first,
                                         const std::string& param, bool parse_special = true);

// One prompt of OpenAI's prompt forms: its tokens, and its text (the decoded ids when it came as ids).
struct PromptInput {
  std::vector<int32_t> ids;
  std::string text;
  bool is_ids = false;
};

// Reads OpenAI's prompt forms — "text", ["a", "b"], [1, 2, 3], [[1, 2], [3]] — from `value`, the field
// `param` (completions' prompt, embeddings' input): text through EncodePrompt, ids checked against the
// vocabulary; at most `max_prompts`. Errors name the field and the item ("input[2] must hold token ids ...").
Parsed<std::vector<PromptInput>> ReadPromptInputs(const nlohmann::json& value, const ApiContext& ctx,
                                                  const std::string& param, size_t max_prompts);

// The 404 model_not_found for a request naming a model this server does not serve.
ApiError ModelNotFound(const ApiContext& ctx, const std::string& model);
// nullopt when `model` is absent/empty, an http(s) URL (Hugging Face clients send their endpoint) or one of
// ctx.model_ids, else ModelNotFound.
std::optional<ApiError> CheckModel(const ApiContext& ctx, const std::optional<std::string>& model);

// Checks a prompt against the context: empty → 400; prompt_len >= context → OutOfRange naming `param`.
// max_tokens: when explicit (> 0) it must fit with the prompt (OutOfRange otherwise); when 0 it becomes
// min(default_max, room left).
Parsed<int32_t> FitToContext(const ApiContext& ctx, size_t prompt_len, int64_t max_tokens,
                             int64_t default_max, const std::string& param, const std::string& max_param);

}  // namespace lockstep::server
