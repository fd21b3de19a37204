// Reranking and scoring: parsing of the rerank routes (Jina/Cohere's shape, which llama.cpp's and vLLM's
// servers follow, and TEI's) and vLLM's score routes into a GenerationSpec of rank requests (engine/request.h
// Request::embedding = Pooling::kRank: one sequence per (query, document) pair, run in parallel; pairs that
// start the same way share their prompt prefix through the prefix cache), and their response shapes.
//   /rerank, /v1/rerank, /reranking, /v1/reranking
//       {model?, query: string, documents: [string], top_n?: int >= 1, return_documents?: false}
//       → {id, model, object: "list", usage: {prompt_tokens, total_tokens, prompt_tokens_details:
//         {cached_tokens}}, results: [{index, relevance_score, document?: {text}}]}, most relevant first
//       (equal scores: lower index first), at most top_n of them. TEI's form {query, texts: [string],
//       return_text?: false} answers TEI's [{index, score, text?}] in the same order.
//   /score, /v1/score   {model?, text_1: string | [string], text_2: string | [string]} → {id, object: "list",
//       created, model, data: [{index, object: "score", score}], usage}: text_1 (one text, or a list as long
//       as text_2) is the query of each text_2 item, as vLLM pairs them.
// A pair's prompt: the model's rerank template (the GGUF key tokenizer.chat_template.rerank, or the server's
// --rerank-template) with {query} and {document} replaced, tokenized with special-token text parsed (as
// llama.cpp's format_prompt_rerank); without one, [BOS] query [EOS] [SEP] document [EOS] (each special token
// where the vocabulary has it; query and document as plain text). A score is model/classifier.h RankScore of
// the classifier's logits. Every field is type-checked; errors name the field. Pure functions over their
// arguments; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/api_error.h"
#include "server/generation.h"

namespace lockstep::server {

struct RerankRequest {
  GenerationSpec spec;                 // one prompt per document; base.embedding = Pooling::kRank
  std::vector<std::string> documents;  // the texts scored (text_2 for /score), by index
  int64_t top_n = 0;                   // 0: every document
  bool return_documents = false;       // Jina/Cohere's document: {text} (TEI: return_text)
  bool tei = false;                    // TEI's form (texts): TEI's answer
};

// Documents (or text_2 items) per request at most.
inline constexpr size_t kMaxRerankDocuments = 1024;

Parsed<RerankRequest> ParseRerankRequest(const std::string& body, const ApiContext& ctx);
Parsed<RerankRequest> ParseScoreRequest(const std::string& body, const ApiContext& ctx);

// The prompt of one (query, document) pair (see above); errors name `param` (an over-long prompt:
// OutOfRange).
Parsed<std::vector<int32_t>> RerankPrompt(const ApiContext& ctx, const std::string& query,
                                          const std::string& document, const std::string& param);

// Each document's score, in index order; nullopt where a pair has none (cancelled, cut by --timeout).
std::vector<std::optional<double>> FinishedScores(GenerationJob& job);

nlohmann::json RerankResponse(const RerankRequest& req, const std::vector<double>& scores, int prompt_tokens,
                              int cached_tokens, const std::string& id, const ApiContext& ctx);
nlohmann::json ScoreResponse(const std::vector<double>& scores, int prompt_tokens, int cached_tokens,
                             const std::string& id, int64_t created, const ApiContext& ctx);

}  // namespace lockstep::server
