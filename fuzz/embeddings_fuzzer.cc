// Fuzzes the body parsing of POST /v1/embeddings, /embed and /embedding (ParseOpenAiEmbeddingRequest,
// ParseTeiEmbedRequest, ParseLlamaCppEmbeddingRequest; the first byte picks which) and the vectors'
// normalization and base64: any bytes give embedding requests the engine accepts (inputs within the
// vocabulary and the context, nothing generated) or a 4xx error, never a crash.
#include <cmath>
#include <cstring>
#include <vector>

#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/embeddings_api.h"

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)lockstep::fuzz::TinyApiContext();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  if (size == 0) return 0;
  const int api = data[0] % 3;  // 0 OpenAI, 1 TEI, 2 llama.cpp
  const bool tei = api == 1;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  const server::ApiContext& ctx = fuzz::TinyApiContext();
  const auto parsed = tei        ? server::ParseTeiEmbedRequest(body, ctx)
                      : api == 0 ? server::ParseOpenAiEmbeddingRequest(body, ctx)
                                 : server::ParseLlamaCppEmbeddingRequest(body, ctx);
  if (!parsed.ok()) {
    fuzz::CheckError(parsed.error, tei ? server::ApiFlavor::kTgi : server::ApiFlavor::kOpenAI);
    return 0;
  }
  const server::EmbeddingRequest& req = *parsed.value;
  fuzz::Require(!req.spec.prompts.empty() && req.spec.prompts.size() <= server::kMaxEmbeddingInputs,
                "1 to 2048 inputs");
  fuzz::Require(req.spec.n == 1 && req.spec.base.max_tokens == 0,
                "one sequence per input, nothing generated");
  fuzz::Require(req.spec.base.embedding != Pooling::kNone, "an embedding request");
  fuzz::Require(req.dimensions >= 0 && req.dimensions <= ctx.embedding_length, "dimensions within the width");
  for (const auto& prompt : req.spec.prompts) {
    fuzz::Require(!prompt.empty() && static_cast<int64_t>(prompt.size()) <= ctx.max_context,
                  "each input fits the context");
    for (int32_t id : prompt)
      fuzz::Require(id >= 0 && id < ctx.vocab_size, "token ids within the vocabulary");
  }
  // The normalization the request asked for, over values made of the input's bytes (any float bits).
  std::vector<float> values((size - 1) / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), data + 1, values.size() * sizeof(float));
  server::NormalizeEmbedding(values, req.normalize);
  const std::string encoded = server::Base64Floats(values);
  fuzz::Require(encoded.size() == (values.size() * sizeof(float) + 2) / 3 * 4, "base64 of the float bytes");
  return 0;
}
