// Embeddings: parsing of OpenAI's POST /v1/embeddings, Hugging Face TEI's POST /embed and llama.cpp's
// POST /embedding into a
// GenerationSpec of embedding requests (engine/request.h Request::embedding: one sequence per input, run in
// parallel, pooled as the server's --pooling says), and their response shapes.
//   /v1/embeddings  {input: string | [string] | [id] | [[id]], model?, encoding_format?: "float" | "base64",
//                   dimensions?, user?, embd_normalize? (llama.cpp's: -1 none, 0 max-abs to int16 range,
//                   1 taxicab, 2 Euclidean (the default), p > 2 p-norm), truncate_prompt_tokens? (vLLM's:
//                   keep the last k tokens)} → {object: "list", data: [{object: "embedding", index,
//                   embedding}], model, usage}
//   /embed          {inputs: string | [string] | [id] | [[id]], normalize?: true, truncate?: false,
//                   truncation_direction?: "right" | "left", dimensions?} → [[float], ...]
//   /embedding, /embeddings   llama.cpp's own: {content (or input): as above, embd_normalize?}
//                   → [{index, embedding: [[float]]}, ...] (one pooled vector per input)
// `dimensions` keeps the first that many values (Matryoshka models) before normalizing. Every field is
// type-checked; errors name the field. Pure functions over their arguments; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/api_error.h"
#include "server/generation.h"

namespace lockstep::server {

struct EmbeddingRequest {
  GenerationSpec spec;     // one prompt per input; base.embedding = ApiContext::pooling, max_tokens 0
  int normalize = 2;       // llama.cpp's embd_normalize (see above)
  int64_t dimensions = 0;  // 0: every value
  bool base64 = false;     // OpenAI encoding_format "base64": little-endian float32 bytes, base64
};

// Inputs per request at most (OpenAI allows 2048).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

Parsed<EmbeddingRequest> ParseOpenAiEmbeddingRequest(const std::string& body, const ApiContext& ctx);
Parsed<EmbeddingRequest> ParseTeiEmbedRequest(const std::string& body, const ApiContext& ctx);
Parsed<EmbeddingRequest> ParseLlamaCppEmbeddingRequest(const std::string& body, const ApiContext& ctx);

// The vector of each input, cut to `dimensions` and normalized; empty when an input has none (its request
// was cancelled or failed).
std::vector<std::vector<float>> FinishedEmbeddings(const EmbeddingRequest& req, GenerationJob& job);

nlohmann::json OpenAiEmbeddingResponse(const EmbeddingRequest& req,
                                       const std::vector<std::vector<float>>& embeddings, int prompt_tokens,
                                       const ApiContext& ctx);
nlohmann::json TeiEmbedResponse(const std::vector<std::vector<float>>& embeddings);
nlohmann::json LlamaCppEmbeddingResponse(const std::vector<std::vector<float>>& embeddings);

// llama.cpp's common_embd_normalize: see embd_normalize above.
void NormalizeEmbedding(std::span<float> values, int norm);
// Standard base64 (RFC 4648, with padding) of the values' little-endian float32 bytes.
std::string Base64Floats(std::span<const float> values);

}  // namespace lockstep::server
