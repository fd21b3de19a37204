// Fuzzes the body parsing of the rerank routes (/v1/rerank, /rerank: ParseRerankRequest, Jina's and TEI's
// forms) and vLLM's /score (ParseScoreRequest); the first byte picks the route (bit 0) and whether the model
// has a rerank template (bit 1). Any bytes give rank requests the engine accepts (one non-empty prompt per
// document within the vocabulary and the context, nothing generated, at most 1024) or a 4xx error, never a
// crash; a model that cannot rank refuses every body naming `model`.
#include <string>

#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/rerank_api.h"

namespace {

const lockstep::server::ApiContext& RankContext(bool with_template) {
  static const lockstep::server::ApiContext plain = [] {
    lockstep::server::ApiContext c = lockstep::fuzz::TinyApiContext();
    c.can_rank = true;
    return c;
  }();
  static const lockstep::server::ApiContext templated = [] {
    lockstep::server::ApiContext c = plain;
    c.rerank_template = "<|endoftext|>Query: {query}\nDocument: {document}\nRelevant:";
    return c;
  }();
  return with_template ? templated : plain;
}

}  // namespace

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)RankContext(false);
  (void)RankContext(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  if (size == 0) return 0;
  const bool score = (data[0] & 1) != 0;
  const server::ApiContext& ctx = RankContext((data[0] & 2) != 0);
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto parsed = score ? server::ParseScoreRequest(body, ctx) : server::ParseRerankRequest(body, ctx);
  if (!parsed.ok()) {
    fuzz::CheckError(parsed.error, server::ApiFlavor::kOpenAI);
  } else {
    const server::RerankRequest& req = *parsed.value;
    fuzz::Require(!req.spec.prompts.empty() && req.spec.prompts.size() <= server::kMaxRerankDocuments,
                  "1 to 1024 documents");
    fuzz::Require(req.documents.size() == req.spec.prompts.size(), "one prompt per document");
    fuzz::Require(
        req.spec.n == 1 && req.spec.base.max_tokens == 0 && req.spec.base.embedding == Pooling::kRank,
        "rank requests, nothing generated");
    fuzz::Require(req.top_n >= 0 && (!req.tei || !score), "top_n >= 0; TEI's form on /rerank only");
    for (const auto& prompt : req.spec.prompts) {
      fuzz::Require(!prompt.empty() && static_cast<int64_t>(prompt.size()) <= ctx.max_context,
                    "each pair fits the context");
      for (int32_t id : prompt)
        fuzz::Require(id >= 0 && id < ctx.vocab_size, "token ids within the vocabulary");
    }
  }
  // A model without a classifier head refuses whatever the body.
  const auto refused = score ? server::ParseScoreRequest(body, fuzz::TinyApiContext())
                             : server::ParseRerankRequest(body, fuzz::TinyApiContext());
  fuzz::Require(!refused.ok() && refused.error.param == "model", "a model that cannot rank refuses");
  return 0;
}
